"""Fixtures shared by the monologue_eval unit tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_domain.kitchen.suites import Suite, load_suite, suite_path

CONFIG = Path(__file__).resolve().parents[3] / "config"


@pytest.fixture(scope="session")
def config_dir() -> Path:
    """The repository's config/."""
    return CONFIG


def kitchen_suite(name: str) -> Suite:
    """A kitchen suite of config/benchmarks ("saycan", "im_kitchen")."""
    return load_suite(suite_path(CONFIG, name))


@pytest.fixture(scope="module")
def saycan() -> Suite:
    return kitchen_suite("saycan")


@pytest.fixture(scope="module")
def im_kitchen() -> Suite:
    return kitchen_suite("im_kitchen")
