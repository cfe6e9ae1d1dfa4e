"""Fixtures of the monologue_bag unit tests: real interface definitions and bags in tmp_path."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from monologue_common.core.msgdefs import MessageDefinitions


def _share(package: str) -> Path:
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        return Path(get_package_share_directory(package))
    except PackageNotFoundError as e:
        raise KeyError(package) from e


@pytest.fixture(scope="session")
def definitions() -> MessageDefinitions:
    """Definitions from the installed interface packages (needs `. scripts/env.sh`)."""
    return MessageDefinitions(_share)


@pytest.fixture
def log() -> logging.Logger:
    return logging.getLogger("test.bag")
