"""monologue-bench's suites: one registry (monologue_eval.suites), `--list`, and dispatch by name."""
from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from monologue_common.core.registry import UnknownPluginError
from monologue_eval import bench
from monologue_eval.harness import Suite
from monologue_eval.suites import SUITES

NAMES = {"table1", "saycan", "im_kitchen", "cape", "statler", "statler_cups", "multitalk"}


def test_every_suite_is_registered_under_its_module_name() -> None:
    assert NAMES <= set(SUITES.names())
    for name in NAMES:
        suite = SUITES.get(name)
        assert isinstance(suite, Suite)
        assert suite.name == name and suite.description


def test_list_prints_every_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("suites:")
    assert {line.split()[0] for line in out.splitlines()[1:]} >= NAMES


def test_an_unknown_suite_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bench.parse_args(["--suite", "nope"])
    assert e.value.code == 2
    assert "table1" in capsys.readouterr().err
    with pytest.raises(UnknownPluginError, match="table1"):
        SUITES.get("nope")


def test_main_dispatches_to_the_named_suite() -> None:
    seen: list[argparse.Namespace] = []

    def run(ns: argparse.Namespace) -> int:
        seen.append(ns)
        return 7

    fake = Suite("fake_suite", "a test suite", run)
    SUITES.add("fake_suite", fake)
    try:
        assert bench.main(["--suite", "fake_suite", "--seed", "3"]) == 7
    finally:
        SUITES.unregister("fake_suite")
    assert [ns.seed for ns in seen] == [3]


def test_compare_goes_to_the_paired_comparison_only_for_suites_that_take_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def note(what: str) -> Callable[[argparse.Namespace], int]:
        def call(_ns: argparse.Namespace) -> int:
            calls.append(what)
            return 0

        return call

    monkeypatch.setattr(bench, "paired", note("paired"))
    ran = Suite("fake_paired", "x", note("ran"), paired=True)
    plain = Suite("fake_plain", "x", note("ran"))
    SUITES.add("fake_paired", ran)
    SUITES.add("fake_plain", plain)
    try:
        assert bench.main(["--suite", "fake_paired", "--compare", "a", "b"]) == 0
        assert bench.main(["--suite", "fake_plain", "--compare", "a", "b"]) == 0
    finally:
        SUITES.unregister("fake_paired")
        SUITES.unregister("fake_plain")
    assert calls == ["paired", "ran"]
