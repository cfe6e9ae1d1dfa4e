"""Paired comparison of two benchmark runs on the same scenes."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_eval.bench import main
from monologue_eval.core.benchmark import EpisodeRecord, ResultStore, Settings
from monologue_eval.core.paired import Side, compare, comparison_markdown, mcnemar_exact


def _run(out: Path, rewards: dict[tuple[str, str, int], bool], seed_of: dict[tuple[str, int], int] | None = None,
         params: str = "") -> Path:
    store = ResultStore(out)
    store.open(Settings(llm="embedded", seed=0, strategy="scoring", affordances=False, place_noise_m=0.02,
                        max_steps=15, params=params))
    for (task, variant, i), ok in rewards.items():
        seed = (seed_of or {}).get((task, i), 100 + i)
        store.append(EpisodeRecord(task=task, variant=variant, index=i, seed=seed, instruction=f"{task} #{i}",
                                   reward=ok))
    return out


def test_mcnemar_exact() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)        # 2 * 0.5^6
    assert mcnemar_exact(6, 0) == mcnemar_exact(0, 6)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(1, 9) == pytest.approx(2 * 11 / 1024)


def test_two_runs_pair_by_scene_and_list_the_flips(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", {("stack", "llm_object", 0): True, ("stack", "llm_object", 1): False,
                              ("stack", "llm_object", 2): False, ("pick_place", "llm_object", 0): True,
                              ("pick_place", "llm_object", 1): True})
    b = _run(tmp_path / "b", {("stack", "llm_object", 0): True, ("stack", "llm_object", 1): True,
                              ("stack", "llm_object", 2): False, ("pick_place", "llm_object", 0): False,
                              ("pick_place", "llm_object", 1): True, ("pick_place", "llm_object", 2): True},
             seed_of={("pick_place", 1): 999})  # another scene: not paired
    c = compare(Side.parse(str(a)), Side.parse(str(b)))
    assert (c.both, c.only_a, c.only_b, c.neither, c.unpaired) == (1, 1, 1, 1, 2)
    assert [(f.task, f.index, f.a, f.b) for f in c.flips] == [("pick_place", 0, True, False), ("stack", 1, False, True)]
    text = comparison_markdown(c, ["pick_place", "stack"])
    assert "Paired comparison on 4 episodes" in text and "McNemar exact p = 1" in text
    assert text.index("| pick_place | 0 |") < text.index("| stack | 1 |")


def test_variants_of_one_run_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "r", {("stack", "llm_object", 0): False, ("stack", "im_object_scene", 0): True,
                                ("stack", "llm_object", 1): False, ("stack", "im_object_scene", 1): True})
    assert main(["--compare", f"{run}:llm_object", f"{run}:im_object_scene"]) == 0
    out = capsys.readouterr().out
    assert "A = r:llm_object: 0%; B = r:im_object_scene: 100%; difference +100%" in out
    assert "(0 vs 2 discordant)" in out
    assert main(["--compare", str(run), f"{run}:im_object_scene"]) == 2
    assert "holds variants ['im_object_scene', 'llm_object']" in capsys.readouterr().err
    assert main(["--compare", str(tmp_path / "none"), str(run)]) == 2
    assert "holds no benchmark run" in capsys.readouterr().err
    assert main(["--compare", f"{run}:nope", f"{run}:llm_object"]) == 2
    assert "no episodes of variant 'nope'" in capsys.readouterr().err


def test_the_comparison_names_the_settings_that_differ(tmp_path: Path) -> None:
    eps = {("stack", "im_object_success", 0): True}
    a = _run(tmp_path / "a", eps)
    b = _run(tmp_path / "b", eps, params="planner:scoring.normalization=mean")
    text = comparison_markdown(compare(Side.parse(str(a)), Side.parse(str(b))))
    assert "What differs (A -> B): params: `` -> `planner:scoring.normalization=mean`" in text
    text = comparison_markdown(compare(Side.parse(str(a)), Side.parse(str(a))))
    assert "same settings and variant" in text
    c = _run(tmp_path / "c", {("stack", "llm_object", 0): True})
    assert compare(Side.parse(str(a)), Side.parse(str(c))).settings_diff == [
        ("variant", "im_object_success", "llm_object")]


def test_ablation_table_puts_runs_side_by_side_with_intervals_and_means(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(tmp_path / "base", {("stack", "im_object_success", i): i < 2 for i in range(10)}
             | {("pick_place", "im_object_success", i): i < 5 for i in range(10)})
    b = _run(tmp_path / "goal", {("pick_place", "im_object_success", i): i < 9 for i in range(10)},
             params="planner:scoring.goal_check=stop")
    assert main(["--table", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| task | base: im_object_success | goal: im_object_success (`planner:scoring.goal_check=stop`) |" in out
    assert '| "Pick and place" | 50% [24–76] 5/10 | 90% [60–98] 9/10 |' in out
    assert '| "Stack all the blocks" | 20% [6–51] 2/10 | – |' in out
    assert "| **mean over tasks** | 35.0% (2 tasks) | 90.0% (1 tasks) |" in out
    assert "| all episodes | 35% [18–57] 7/20 | 90% [60–98] 9/10 |" in out
    assert '"Put the blocks on mismatched bowls"' not in out  # tasks no run has are left out
