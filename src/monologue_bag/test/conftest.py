"""Fixtures of the monologue_bag unit tests: real interface definitions and bags in tmp_path."""
from __future__ import annotations

import logging

import pytest

from monologue_common.core.msgdefs import MessageDefinitions
from monologue_common.interfaces import installed_definitions


@pytest.fixture(scope="session")
def definitions() -> MessageDefinitions:
    """Definitions from the installed interface packages (needs `. scripts/env.sh`)."""
    return installed_definitions()


@pytest.fixture
def log() -> logging.Logger:
    return logging.getLogger("test.bag")
