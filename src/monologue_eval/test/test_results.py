"""results/ (monologue_eval.results): importing a finished bench run, the generated tables, the docs regions."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from monologue_eval.core.benchmark import EpisodeRecord
from monologue_eval.results.cli import main as report_main
from monologue_eval.results.docs import check, regions, render, stale
from monologue_eval.results.importer import bench_tokens, import_run, parse_bench
from monologue_eval.results.store import EPISODES_FILE, MAX_STRING, ResultError, load_run, load_runs
from monologue_eval.results.tables import NOT_RUN, TABLES, directed_table, rate_text
from monologue_eval.suites.table1 import decision_counts

CMD = "monologue-bench --llm expert --robot sim_kinematic --episodes 2 --tasks pick_place --out runs/ceiling/t1"


def table1_run(tmp: Path, rewards: list[bool], task: str = "pick_place", variant: str = "llm_object",
               extra: dict[str, Any] | None = None, params: str = "") -> Path:
    """A finished table1 run directory as the bench writes it."""
    src = tmp / f"run-{task}-{variant}-{len(rewards)}"
    src.mkdir(parents=True)
    settings = {"llm": "expert", "seed": 0, "strategy": "scoring", "affordances": False, "place_noise_m": 0.02,
                "max_steps": 15, "wording": "original", "params": params}
    (src / "run.json").write_text(json.dumps({"settings": settings, "created": 1.8e9}), encoding="utf-8")
    lines = []
    for i, ok in enumerate(rewards):
        rec = EpisodeRecord(task=task, variant=variant, index=i, seed=i, instruction="Pick the red block.",
                            reward=ok, transcript_path=str(src / "transcripts" / f"{i}.jsonl"), started=1.8e9 + i)
        lines.append(json.dumps({**rec.to_json(), **(extra or {})}))
    (src / "episodes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return src


def test_the_command_is_parsed_as_monologue_bench_parses_it() -> None:
    assert bench_tokens(". scripts/env.sh && monologue-bench --suite cape --episodes 3") == [
        "--suite", "cape", "--episodes", "3"]
    assert bench_tokens('make bench ARGS="--suite saycan --llm expert"') == ["--suite", "saycan", "--llm", "expert"]
    assert bench_tokens("python -m monologue_eval.bench --full") == ["--full"]
    assert bench_tokens("timeout 3000 monologue-bench --suite cape") == ["--suite", "cape"]
    assert bench_tokens("python -m monologue_eval.suites.multitalk --scenes 20 --llm expert") == [
        "--suite", "multitalk", "--scenes", "20", "--llm", "expert"]
    assert bench_tokens("ls runs") == []
    args = parse_bench(["--full", "--param", "planner:a=1", "--param=planner:b=2", "--robot", "sim_kinematic"])
    assert args == {"full": True, "param": ["planner:a=1", "planner:b=2"], "robot": "sim_kinematic"}


def test_import_keeps_the_records_and_states_the_run(tmp_path: Path) -> None:
    src = table1_run(tmp_path, [True, False, True])
    info = import_run(src, tmp_path / "results" / "t1-expert", CMD, commit="abc123")
    assert (info.suite, info.robot, info.llm, info.column) == ("table1", "sim_kinematic", "expert", "expert")
    assert info.non_default == {"llm": "expert", "robot": "sim_kinematic", "episodes": 2, "tasks": "pick_place"}
    assert (info.episodes, info.n_per_cell, info.commit, info.date) == (3, 3, "abc123", "2027-01-15T08:00:00Z")
    run = load_run(tmp_path / "results" / "t1-expert")
    assert [r["reward"] for r in run.records] == [True, False, True]
    # paths inside the run directory become relative: no absolute path is committed
    assert run.records[0]["transcript_path"] == "transcripts/0.jsonl"
    with pytest.raises(ResultError, match="exists"):
        import_run(src, tmp_path / "results" / "t1-expert", CMD)


def test_import_is_byte_for_byte_repeatable(tmp_path: Path) -> None:
    src = table1_run(tmp_path, [True])
    import_run(src, tmp_path / "a", CMD, commit="x")
    import_run(src, tmp_path / "b", CMD, commit="x")
    assert (tmp_path / "a" / EPISODES_FILE).read_bytes() == (tmp_path / "b" / EPISODES_FILE).read_bytes()


def test_long_strings_are_cut_and_huge_records_shrunk(tmp_path: Path) -> None:
    src = table1_run(tmp_path, [True], extra={"planner_reason": "x" * 50_000,
                                              "final_state": {f"o{i}": ["y" * 1500] for i in range(40)}})
    import_run(src, tmp_path / "r", CMD, commit="x")
    rec = load_run(tmp_path / "r").records[0]
    assert len(rec["planner_reason"]) < MAX_STRING + 60 and "cut: 48000 more" in rec["planner_reason"]
    assert "dropped from the committed result" in json.dumps(rec)
    assert rec["reward"] is True
    with gzip.open(tmp_path / "r" / EPISODES_FILE, "rt") as f:
        assert len(f.read()) < 20_000


def test_an_expert_run_at_p_0_2_fills_its_own_column(tmp_path: Path) -> None:
    src = table1_run(tmp_path, [True])
    info = import_run(src, tmp_path / "r", CMD + " --param planner:llm.expert.error_rate=0.2", commit="x")
    assert (info.column, info.error_rate) == ("expert_p02", 0.2)
    # a command that does not state it (reconstructed): the run's settings do
    src2 = table1_run(tmp_path / "two", [True], params="planner:llm.expert.error_rate=0.2")
    assert import_run(src2, tmp_path / "r2", CMD, commit="x").column == "expert_p02"
    with pytest.raises(ResultError, match="column"):
        import_run(src, tmp_path / "q", CMD + " --param planner:llm.expert.error_rate=0.3", commit="x")


def test_a_directory_without_records_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ResultError, match="episodes.jsonl"):
        import_run(tmp_path, tmp_path / "r", CMD)


def test_columns_without_a_result_print_not_run_never_a_number(tmp_path: Path) -> None:
    empty = TABLES["table1_sim_kinematic"]([])
    body = [line for line in empty.splitlines() if line.startswith("| LLM")]
    assert len(body) == 8
    for line in body:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2:] == [NOT_RUN] * 4  # paper, then the four columns
    src = table1_run(tmp_path, [True, True, False])
    import_run(src, tmp_path / "results" / "t1", CMD, commit="abc")
    table = TABLES["table1_sim_kinematic"](load_runs(tmp_path / "results"))
    row = next(line for line in table.splitlines() if line.startswith("| LLM + Object: \"Pick and place\""))
    assert [c.strip() for c in row.strip("|").split("|")] == [
        'LLM + Object: "Pick and place"', "80%", NOT_RUN, NOT_RUN, rate_text(2, 3), NOT_RUN]
    assert "`results/t1`" in table and CMD in table
    assert TABLES["table1_sim"](load_runs(tmp_path / "results")).count(rate_text(2, 3)) == 0  # other robot


def test_a_resumed_episode_counts_once(tmp_path: Path) -> None:
    src = table1_run(tmp_path, [False])
    with open(src / "episodes.jsonl", "a", encoding="utf-8") as f:  # the same episode, rerun
        f.write(json.dumps(EpisodeRecord(task="pick_place", variant="llm_object", index=0, seed=0,
                                         instruction="x", reward=True).to_json()) + "\n")
    import_run(src, tmp_path / "results" / "t1", CMD, commit="abc")
    assert rate_text(1, 1) in TABLES["table1_sim_kinematic"](load_runs(tmp_path / "results"))


def test_rate_text_is_a_wilson_interval() -> None:
    assert rate_text(2, 5) == "40% [12–77] 2/5"
    assert rate_text(20, 20) == "100% [84–100] 20/20"


def test_the_directed_share_comes_from_the_records(tmp_path: Path) -> None:
    src = table1_run(tmp_path, [True, True], extra={"decisions": 4, "single_candidate": 3},
                     params="planner:scoring.goal_check=directed")
    import_run(src, tmp_path / "results" / "d", CMD + " --param planner:scoring.goal_check=directed", commit="x")
    old = table1_run(tmp_path, [True], task="stack", params="planner:scoring.goal_check=directed")
    import_run(old, tmp_path / "results" / "e", CMD + " --param planner:scoring.goal_check=directed", commit="x")
    other = table1_run(tmp_path, [True], task="blocks_to_bowl")
    import_run(other, tmp_path / "results" / "f", CMD, commit="x")
    table = directed_table(load_runs(tmp_path / "results"))
    assert "`d`" in table and "`e`" in table and "`f`" not in table
    pick = next(line for line in table.splitlines() if "Pick and place" in line)
    assert rate_text(6, 8) + " decisions" in pick
    stack = next(line for line in table.splitlines() if "Stack all the blocks\"" in line and "corner" not in line)
    assert "not recorded" in stack
    assert NOT_RUN in directed_table([])


def test_decision_counts_read_the_episode_end_event() -> None:
    events = [("ROBOT_ACTION", "x", {}), ("EPISODE_END", "done", {"decisions": 5, "single_candidate": 2})]
    assert decision_counts(events) == (5, 2)
    assert decision_counts([("EPISODE_END", "done", {"success": True})]) == (-1, -1)


def test_regions_are_rebuilt_and_checked() -> None:
    tables = {"a": lambda runs: f"| table a | {len(runs)} |", "b": lambda runs: "B"}
    doc = "intro 42\n<!-- report:a -->\nold\n<!-- /report -->\nmiddle\n<!-- report:b -->\n<!-- /report -->\nend\n"
    assert [r.table for r in regions(doc)] == ["a", "b"]
    assert stale(doc, [], tables) == ["a", "b"]
    new = render(doc, [], tables)
    assert new == ("intro 42\n<!-- report:a -->\n| table a | 0 |\n<!-- /report -->\nmiddle\n"
                   "<!-- report:b -->\nB\n<!-- /report -->\nend\n")
    assert stale(new, [], tables) == []
    assert render(new, [], tables) == new  # idempotent
    with pytest.raises(ResultError, match="unknown table id"):
        render("<!-- report:zzz -->\n<!-- /report -->\n", [], tables)
    with pytest.raises(ResultError, match="not closed"):
        regions("<!-- report:a -->\nno end\n")


def test_check_and_build_through_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "docs").mkdir()
    for name in ("benchmark.md", "reliability.md"):
        (tmp_path / "docs" / name).write_text("# x\n<!-- report:multitalk -->\nstale 99%\n<!-- /report -->\n",
                                              encoding="utf-8")
    assert report_main(["--root", str(tmp_path), "check"]) == 1
    assert "multitalk" in capsys.readouterr().out
    assert report_main(["--root", str(tmp_path), "build"]) == 0
    assert report_main(["--root", str(tmp_path), "check"]) == 0
    text = (tmp_path / "docs" / "benchmark.md").read_text(encoding="utf-8")
    assert "stale 99%" not in text and NOT_RUN in text
    assert check(tmp_path, []) == {}


def _import_records(tmp: Path, name: str, records: list[dict[str, Any]], command: str,
                    file: str = "episodes.jsonl") -> None:
    src = tmp / f"src-{name}"
    src.mkdir()
    (src / file).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    import_run(src, tmp / "results" / name, command, commit="x")


def test_every_suite_table_reads_its_suites_real_records(tmp_path: Path) -> None:
    """Records built with each suite's own dataclasses land in the right rows (suite told by the command)."""
    from monologue_eval.core.cape_bench import CapeEpisode, CapeRecord
    from monologue_eval.core.kitchen_bench import KitchenRecord
    from monologue_eval.core.kitchen_report import KitchenEpisode
    from monologue_eval.core.multitalk_bench import Row as MultiTalkRow
    from monologue_eval.core.statler_bench import EpisodeScore, QueryScore
    from monologue_eval.core.statler_cups import Trial

    def kitchen(suite: str, variant: str, fam: str, cond: str, plan: bool, ex: bool, i: int) -> dict[str, Any]:
        ep = KitchenEpisode(suite, f"{fam}_01", fam, variant, cond, i, plan, ex, "")
        return KitchenRecord(ep, 0, "x", 1, True, "NONE", "", "", 1.0, 1.0).to_json()

    _import_records(tmp_path, "sc", [kitchen("saycan", "saycan", "nl_single", "none", True, False, i)
                                     for i in range(3)] + [kitchen("saycan", "no_vf", "nl_nouns", "none", False,
                                                                   False, 0)],
                    "monologue-bench --suite saycan --llm expert")
    _import_records(tmp_path, "im", [kitchen("im_kitchen", "im_success", "drawers", "disturbances", True, True, 0),
                                     kitchen("im_kitchen", "im_success", "drawers", "disturbances", True, False, 1)],
                    "monologue-bench --suite im_kitchen --llm expert --param planner:llm.expert.error_rate=0.2")
    cape = CapeEpisode("paper_phone_lab", "paper", "lab", "Z_E", 0, True, 5, 5, 1, 100.0, 3, 3, False)
    _import_records(tmp_path, "cape", [CapeRecord(cape, "x", [], {}, 5, True, "NONE", "", "", 0, 1.0, 1.0).to_json()],
                    "monologue-bench --suite cape --families paper")
    score = EpisodeScore("e1", "disinfection", "statler", (QueryScore(0, False, True, (), ()),), 1)
    _import_records(tmp_path, "st", [score.to_json()], "monologue-bench --suite statler")
    _import_records(tmp_path, "cups", [Trial("cot", 2, i, i == 0, None, (True,), "").to_json() for i in range(2)],
                    "monologue-bench --suite statler_cups --llm expert", file="trials.jsonl")
    _import_records(tmp_path, "mt", [MultiTalkRow("no_analyzer", 1, True, "NONE", 2, {}, 3.0).to_json()],
                    "monologue-bench --suite multitalk --llm expert")
    runs = load_runs(tmp_path / "results")

    def row(table: str, label: str) -> list[str]:
        line = next(x for x in TABLES[table](runs).splitlines() if x.startswith(f"| {label} |"))
        return [c.strip() for c in line.strip("|").split("|")][1:]

    assert row("saycan", "SayCan plan: nl single") == ["100%", NOT_RUN, NOT_RUN, rate_text(3, 3), NOT_RUN]
    assert row("saycan", "SayCan execute: nl single")[3] == rate_text(0, 3)
    assert row("saycan", "SayCan plan: total")[3] == rate_text(3, 3)
    assert row("saycan", "No VF plan: nl nouns")[3] == rate_text(0, 1)
    assert row("im_kitchen", "IM: Success: drawers (disturbances)") == ["44.4%", NOT_RUN, NOT_RUN, NOT_RUN,
                                                                        rate_text(1, 2)]
    assert row("im_kitchen", "IM: Success: total")[4] == rate_text(1, 2)
    assert row("cape", "paper tasks, Explicit Cause (Z_E): % Exec")[:2] == ["100%", rate_text(1, 1)]
    assert row("cape", "paper tasks, Explicit Cause (Z_E): Goal % (paper: human % Correct)")[1] == rate_text(0, 1)
    assert row("statler", "Statler: Disinfection") == ["40%", rate_text(1, 1), NOT_RUN, NOT_RUN, NOT_RUN]
    assert row("statler_cups", "LLM+CoT (S Prompt 2), n = 1..10 pooled")[3] == rate_text(1, 2)
    assert row("multitalk", "MultiTalk, Planner + Simulator")[3] == rate_text(1, 1)



def test_the_reliability_table_lists_every_figure_not_run_without_a_result() -> None:
    table = TABLES["reliability"]([])
    for fig in ("R1", "R2", "R3", "R4", "R5", "R6", "R7", "bad input"):
        line = next(x for x in table.splitlines() if x.startswith(f"| {fig} "))
        assert line.count(NOT_RUN) == 2


def test_the_recovery_table_pools_each_method_at_p_0_and_0_2(tmp_path: Path) -> None:
    p02 = " --param planner:llm.expert.error_rate=0.2"
    for name, variant, rewards, extra in (("a", "llm_object", [True, True], ""),
                                          ("b", "llm_object", [True, False, False], p02),
                                          ("c", "im_object_success", [True, True, False], p02)):
        src = table1_run(tmp_path / name, rewards, variant=variant)
        import_run(src, tmp_path / "results" / name, CMD + extra, commit="x")
    table = TABLES["recovery"](load_runs(tmp_path / "results"))

    def cells(label: str) -> list[str]:
        line = next(x for x in table.splitlines() if x.startswith(f"| {label} |"))
        return [c.strip() for c in line.strip("|").split("|")][1:]

    assert cells("IM Table 1 (kinematic): LLM + Object") == ["open loop", rate_text(2, 2), rate_text(1, 3)]
    assert cells("IM Table 1 (kinematic): IM: Object + Success") == ["Success feedback", NOT_RUN, rate_text(2, 3)]
    assert cells("MultiTalk (full)") == ["Analyzer", NOT_RUN, NOT_RUN]
