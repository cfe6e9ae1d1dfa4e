"""The committed paper listings (fixtures/papers) are the papers' lines, byte for byte, when the papers are
beside the checkout (../shared/papers); a clone without them uses the fixtures (conftest.read_paper_lines)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "papers"
PAPERS = HERE.parents[2].parent / "shared" / "papers"
NAME = re.compile(r"^(?P<stem>[a-z_]+)\.l(?P<first>\d+)-(?P<last>\d+)\.txt$")
FILES = sorted(FIXTURES.glob("*.txt"))


def test_every_fixture_is_named_by_its_paper_and_lines() -> None:
    assert len(FILES) >= 8
    for f in FILES:
        m = NAME.match(f.name)
        assert m, f"{f.name}: expected <paper>.l<first>-<last>.txt"
        lines = f.read_text(encoding="utf-8").split("\n")
        assert lines[-1] == "" and len(lines) - 1 == int(m["last"]) - int(m["first"]) + 1, f.name
        assert f.name in (FIXTURES / "README.md").read_text(encoding="utf-8"), f"{f.name}: not in the README"


@pytest.mark.parametrize("fixture", FILES, ids=lambda f: f.name)
def test_fixture_is_the_papers_text(fixture: Path) -> None:
    m = NAME.match(fixture.name)
    assert m
    paper = PAPERS / f"{m['stem']}.txt"
    if not paper.is_file():
        pytest.skip(f"{paper} is not beside the checkout; the fixture is used as it is")
    first, last = int(m["first"]), int(m["last"])
    expected = paper.read_text(encoding="utf-8").split("\n")[first - 1:last]
    assert fixture.read_text(encoding="utf-8").split("\n")[:-1] == expected
