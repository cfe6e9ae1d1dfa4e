"""The paraphrase column's fixed wording list (config/benchmarks/wordings.yaml)."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_domain.tasks import FAMILIES, reword, sample_task
from monologue_eval.core.benchmark import MIN_WORDINGS, ResultStore, Settings, load_wordings
from monologue_eval.suites.table1 import FAMILY_SLOTS, wordings_path

CONFIG = Path(__file__).resolve().parents[3] / "config"


def test_every_family_has_wordings_that_fill_from_its_slots() -> None:
    w = load_wordings(wordings_path(), FAMILY_SLOTS)
    assert set(w) == set(FAMILIES)
    for family, texts in w.items():
        assert len(texts) >= MIN_WORDINGS
        assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts), f"{family}: no Chinese wording"
        task = sample_task(family, 3)
        assert set(task.slots) == set(FAMILY_SLOTS[family])
        for t in texts:
            new = reword(task, t)
            assert new.scene == task.scene and new.slots == task.slots and "{" not in new.instruction
            assert all(v in new.instruction for k, v in task.slots.items() if f"{{{k}}}" in t)


@pytest.mark.parametrize("name", ["wordings.yaml", "wordings_dev.yaml"])
def test_no_prompt_contains_a_benchmark_or_development_wording_verbatim(name: str) -> None:
    w = load_wordings(CONFIG / "benchmarks" / name, FAMILY_SLOTS)
    prompts = "\n".join(p.read_text(encoding="utf-8") for p in (CONFIG / "prompts").rglob("*") if p.is_file())
    for family, texts in w.items():
        for t in texts:
            fixed = t.split("{")[0].strip()  # the text up to the first slot
            assert len(fixed) < 12 or fixed not in prompts, (family, t)


def test_the_development_list_shares_no_text_with_the_held_out_list() -> None:
    held_out = load_wordings(wordings_path(), FAMILY_SLOTS)
    dev = load_wordings(CONFIG / "benchmarks" / "wordings_dev.yaml", FAMILY_SLOTS)
    assert set(dev) == set(held_out)
    assert not {t for ts in dev.values() for t in ts} & {t for ts in held_out.values() for t in ts}


def test_bad_lists_are_refused_with_the_file_named(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text("stack: [a, b]\npick_place: ['Move the {bowl}.', x, y]\nnope: [a, b, c]\n")
    with pytest.raises(ValueError) as e:
        load_wordings(p, {"stack": (), "pick_place": ("block", "target"), "blocks_to_bowl": ("bowl",)})
    msg = str(e.value)
    assert str(p) in msg and "unknown family 'nope'" in msg and "stack: 2 wordings" in msg
    assert "uses ['bowl']" in msg and "blocks_to_bowl: expected a list" in msg
    p.write_text("stack: [unclosed\n")
    with pytest.raises(ValueError, match="cannot read the wordings"):
        load_wordings(p, {"stack": ()})


def test_a_run_from_before_the_wording_setting_resumes(tmp_path: Path) -> None:
    old = tmp_path / "run"
    old.mkdir()
    (old / "run.json").write_text('{"settings": {"llm": "embedded", "seed": 0, "strategy": "scoring", '
                                  '"affordances": false, "place_noise_m": 0.02, "max_steps": 15}}')
    s = Settings(llm="embedded", seed=0, strategy="scoring", affordances=False, place_noise_m=0.02, max_steps=15)
    assert ResultStore(old).open(s) is False  # no episodes yet, but no mismatch either
    with pytest.raises(ValueError, match="wording"):
        ResultStore(old).open(Settings(**{**s.__dict__, "wording": "paraphrase"}))
    with pytest.raises(ValueError, match="wording must be one of"):
        Settings(**{**s.__dict__, "wording": "klingon"}).validate()
