"""Benchmark logic without the graph: variants, plan and seeds, statistics, the Markdown table, JSON,
the resumable store and the episode loop (with a runner that fails like a crashing graph)."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from monologue_domain.tasks import FAMILIES, TaskScene
from monologue_eval.bench import main
from monologue_eval.core import benchmark as bm
from monologue_eval.core.benchmark import (
    PAPER_TABLE1,
    VARIANTS,
    Cell,
    EpisodeKey,
    EpisodeRecord,
    InfrastructureError,
    Progress,
    ResultStore,
    Settings,
    SettingsMismatch,
    episode_seed,
    llm_intervals,
    llm_usage,
    motion_time,
    run_benchmark,
    split_wall_time,
    summarize,
    wilson,
)
from monologue_eval.core.report import (
    cell_text,
    markdown_table,
    report_markdown,
    results_json,
    settings_text,
    write_chart,
)
from monologue_eval.harness import CassetteTail
from monologue_eval.suites.table1 import _string_list, goal_options, scene_overrides, static_overrides

REPO = Path(__file__).resolve().parents[3]
LOG = logging.getLogger("test.bench")
TITLES = {k: (f.title, f.split) for k, f in FAMILIES.items()}
SETTINGS = Settings(llm="embedded", seed=0, strategy="scoring", affordances=False, place_noise_m=0.02, max_steps=15)


def rec(task: str, variant: str, index: int, reward: bool, **kw: object) -> EpisodeRecord:
    return EpisodeRecord(task=task, variant=variant, index=index, seed=index, instruction="x", reward=reward,
                         **kw)  # type: ignore[arg-type]


# ----- variants and the paper's table --------------------------------------------------------------
def test_variants_are_im_table_1_columns_with_their_goal_options() -> None:
    from monologue_interfaces.action import ExecuteInstruction

    on, off = ExecuteInstruction.Goal.OPTION_ON, ExecuteInstruction.Goal.OPTION_OFF
    assert [v.label for v in VARIANTS.values()] == ["LLM + Object", "IM: Object + Success", "IM: Object + Scene"]
    g = {k: goal_options(v, SETTINGS) for k, v in VARIANTS.items()}
    assert g["llm_object"] == {"strategy": "inner_monologue", "prompt_profile": "im_sim_object",
                               "object_feedback": on, "success_feedback": off, "scene_feedback": off,
                               "human_feedback": off, "use_affordances": off, "max_steps": 15}
    assert (g["im_object_success"]["success_feedback"], g["im_object_success"]["scene_feedback"]) == (on, off)
    assert g["im_object_success"]["prompt_profile"] == "im_sim_object_success"
    assert (g["im_object_scene"]["success_feedback"], g["im_object_scene"]["scene_feedback"]) == (off, on)
    assert g["im_object_scene"]["prompt_profile"] == "im_sim_object_scene"
    gen = goal_options(VARIANTS["im_object_scene"], Settings("openai", 1, "generative", True, 0.0, 5))
    assert (gen["strategy"], gen["use_affordances"], gen["max_steps"]) == ("inner_monologue_generative", on, 5)
    goal = ExecuteInstruction.Goal()
    assert all(hasattr(goal, name) for name in g["llm_object"])


def _profile(prompts: Path, name: str) -> tuple[dict[str, str], str]:
    """A prompt profile's line formats and preamble text, read from its files (the planner loads them so)."""
    raw = yaml.safe_load((prompts / f"{name}.yaml").read_text(encoding="utf-8"))
    return dict(raw["formats"]), (prompts / raw["preamble_file"]).read_text(encoding="utf-8")


def test_variant_prompt_profiles_exist_and_have_what_their_feedback_needs() -> None:
    prompts = REPO / "config" / "prompts"
    for v in VARIANTS.values():
        formats, preamble = _profile(prompts, v.prompt_profile)
        assert ("goal_state" in formats) == v.scene_feedback
        if v.success_feedback:
            assert {"success_true", "success_false"} <= set(formats)
        if not (v.success_feedback or v.scene_feedback):  # open loop: no feedback lines in the examples
            assert "success_true" not in formats and "Success:" not in preamble


def test_open_loop_prompt_is_the_success_prompt_without_feedback_and_failed_attempts() -> None:
    prompts = REPO / "config" / "prompts"
    success = (prompts / "im_sim_object_success.txt").read_text().split("\n")
    expected: list[str] = []
    for line, nxt in zip(success, success[1:] + [""]):
        if line.startswith("Success:") or (line.startswith("Robot action:") and nxt == "Success: False"):
            continue
        expected.append(line)
    assert (prompts / "im_sim_object.txt").read_text().split("\n") == expected
    assert "Success" not in (prompts / "im_sim_object.txt").read_text()


def test_paper_numbers_are_im_table_1_verbatim() -> None:
    assert list(PAPER_TABLE1) == list(FAMILIES)
    cols = ("cliport", "cliport_oracle", "llm_object", "im_object_success", "im_object_scene")
    rows = [[PAPER_TABLE1[t][c] for c in cols] for t in FAMILIES]
    assert rows == [
        [24.0, 74.0, 80.0, 90.0, 94.0], [2.0, 32.0, 4.0, 10.0, 26.0], [2.0, 32.0, 30.0, 28.0, 30.0],
        [32.0, 94.0, 52.0, 46.0, 56.0], [0.0, 0.0, 20.0, 20.0, 26.0], [0.0, 0.0, 56.0, 70.0, 82.0],
        [0.0, 0.0, 62.0, 76.0, 86.0], [0.0, 0.0, 0.0, 4.0, 6.0],
    ]


# ----- plan, seeds, node parameters ---------------------------------------------------------------
def test_plan_covers_every_cell_per_index_and_rejects_unknown_names() -> None:
    plan = bm.plan_episodes(["stack", "pick_place"], ["llm_object", "im_object_scene"], 2)
    assert plan[:4] == [EpisodeKey("stack", "llm_object", 0), EpisodeKey("pick_place", "llm_object", 0),
                        EpisodeKey("stack", "im_object_scene", 0), EpisodeKey("pick_place", "im_object_scene", 0)]
    assert len(plan) == len(set(plan)) == 8 and plan[-1] == EpisodeKey("pick_place", "im_object_scene", 1)
    with pytest.raises(ValueError, match="unknown variants"):
        bm.plan_episodes(["stack"], ["im_object"], 1)
    with pytest.raises(ValueError, match="unknown tasks"):
        bm.plan_episodes(["juggle"], ["llm_object"], 1)
    with pytest.raises(ValueError):
        bm.plan_episodes(["stack"], ["llm_object"], 0)


def test_episode_seeds_are_stable_shared_by_variants_and_distinct() -> None:
    assert episode_seed(0, "stack", 3) == episode_seed(0, "stack", 3)
    seeds = {episode_seed(s, t, i, a) for s in (0, 1) for t in FAMILIES for i in range(10) for a in range(2)}
    assert len(seeds) == 2 * 8 * 10 * 2
    assert all(0 <= s < 1_000_000 for s in seeds)


def test_scene_overrides_set_the_skills_node_world() -> None:
    o = scene_overrides(TaskScene(("red", "blue"), (), 42), 0.02, "sim_kinematic")
    assert o == {"skills": {"sim.block_colors": "['red', 'blue']", "sim.bowl_colors": "['']",
                            "sim.seed": "42", "sim.place_noise_std": "0.02"}}
    assert _string_list(["gray"]) == "['gray']"
    st = static_overrides(SETTINGS, Path("/tmp/o"), "sim_kinematic")
    assert st["planner"]["llm.cassette_mode"] == "record" and st["planner"]["transcript_dir"] == "/tmp/o/transcripts"
    assert st["skills"] == {"sim.completed_affordance": "1.0"}
    assert "skills" not in static_overrides(Settings("embedded", 0, "scoring", True, 0.0, 15), Path("/tmp/o"),
                                            "sim_kinematic")


def test_param_overrides_reach_the_nodes_and_are_recorded_in_the_settings(tmp_path: Path) -> None:
    from monologue_bringup.up import parse_node_params

    text = bm.param_text(parse_node_params(["planner:scoring.normalization=mean", "skills:sim.phase_duration=0.05",
                                         "planner:scoring.calibration=content_free"]))
    assert text == ("planner:scoring.calibration=content_free; planner:scoring.normalization=mean; "
                    "skills:sim.phase_duration=0.05")  # sorted: the same overrides give the same settings
    assert bm.param_overrides(text) == {"planner": {"scoring.calibration": "content_free",
                                                 "scoring.normalization": "mean"},
                                     "skills": {"sim.phase_duration": "0.05"}}
    settings = Settings("embedded", 0, "scoring", False, 0.02, 15, params=text)
    settings.validate()
    st = static_overrides(settings, Path("/tmp/o"), "sim_kinematic")
    assert st["planner"]["scoring.normalization"] == "mean" and st["planner"]["llm.cassette_mode"] == "record"
    assert st["skills"] == {"sim.completed_affordance": "1.0", "sim.phase_duration": "0.05"}
    with pytest.raises(ValueError, match="sets it itself"):
        static_overrides(Settings("embedded", 0, "scoring", False, 0.02, 15, params="planner:transcript_dir=/x"),
                         Path("/tmp/o"), "sim_kinematic")
    with pytest.raises(ValueError, match="node:name=value"):
        Settings("embedded", 0, "scoring", False, 0.02, 15, params="planner-no-colon").validate()
    assert "parameters `planner:scoring.normalization=mean`" in settings_text(
        Settings("embedded", 0, "scoring", False, 0.02, 15, params="planner:scoring.normalization=mean"), 10)
    # a run with other overrides is another run: resuming it with these ones is refused
    ResultStore(tmp_path / "out").open(settings)
    with pytest.raises(SettingsMismatch, match="params"):
        ResultStore(tmp_path / "out").open(SETTINGS)
    assert main(["--param", "planner:llm.cassette_path=/x", "--out", str(tmp_path / "x")]) == 2


def test_settings_validation() -> None:
    with pytest.raises(ValueError, match="strategy"):
        Settings("embedded", 0, "magic", False, 0.0, 15).validate()
    with pytest.raises(ValueError, match="max_steps"):
        Settings("embedded", 0, "scoring", False, 0.0, 0).validate()
    with pytest.raises(ValueError, match="noise"):
        Settings("embedded", 0, "scoring", False, -0.1, 15).validate()


# ----- statistics and tables ---------------------------------------------------------------------
def test_wilson_interval_matches_known_values() -> None:
    assert wilson(0, 1) == pytest.approx((0.0, 0.7935), abs=1e-4)
    assert wilson(1, 1) == pytest.approx((0.2065, 1.0), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(45, 50) == pytest.approx((0.7864, 0.9565), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_markdown_table_has_table_1_layout_with_ours_and_the_paper_side_by_side() -> None:
    tasks = list(FAMILIES)
    variants = ["llm_object", "im_object_success"]
    records = [rec("pick_place", "llm_object", i, i < 2) for i in range(5)]
    records += [rec("matching_bowls", "im_object_success", 0, True)]
    cells = summarize(records, tasks, variants)
    assert len(cells) == 16
    table = markdown_table(cells, tasks, variants, TITLES)
    lines = table.strip().split("\n")
    assert lines[0] == "|  | Task | LLM + Object (ours) | (paper) | IM: Object + Success (ours) | (paper) |"
    assert len(lines) == 2 + 8
    assert lines[2] == '| Seen | "Pick and place" | 40% [12–77] 2/5 | 80.0% | – | 90.0% |'
    assert lines[3].startswith('|  | "Stack all the blocks" | – | 4.0% |')
    assert lines[6].startswith('| Unseen | "Put all the blocks in different corners" |')
    assert lines[7] == '|  | "Put the blocks in their matching bowls" | – | 56.0% | 100% [21–100] 1/1 | 70.0% |'
    assert cell_text(Cell("stack", "llm_object", 0, 0, 4.0)) == "–"


def test_report_and_json_carry_every_episode_and_cell() -> None:
    tasks, variants = ["pick_place", "stack"], ["im_object_scene"]
    records = [rec("pick_place", "im_object_scene", 0, True, wall_s=20.0, llm_s=15.0, motion_s=1.0, rest_s=4.0,
                   setup_s=3.0, llm_calls=5, prompt_tokens=1000, new_tokens=300, completion_tokens=40, steps=2),
               rec("stack", "im_object_scene", 0, False, wall_s=40.0, llm_s=30.0, motion_s=3.0, rest_s=7.0,
                   setup_s=3.0, llm_calls=9, prompt_tokens=2000, new_tokens=500, completion_tokens=80, steps=4)]
    cells = summarize(records, tasks, variants)
    md = report_markdown(SETTINGS, cells, records, tasks, variants, TITLES, 1)
    assert "| IM: Object + Scene | 2 | 3.0 | 30.0 | 22.5 (75%) | 2.0 (7%) | 5.5 (18%) | 3.0 | 7.0 | 1500 | 400 | 60 |" in md
    assert "strategy `scoring`" in md and "N(0, 0.02 m)" in md
    data = json.loads(json.dumps(results_json(SETTINGS, cells, records, TITLES)))
    assert data["settings"]["place_noise_m"] == 0.02
    assert [(c["task"], c["episodes"], c["successes"], c["paper_percent"]) for c in data["cells"]] == [
        ("pick_place", 1, 1, 94.0), ("stack", 1, 0, 26.0)]
    assert data["cells"][0]["wilson95"] == pytest.approx([0.2065, 1.0], abs=1e-4)
    assert [e["task"] for e in data["episodes"]] == ["pick_place", "stack"]
    assert data["episodes"][1]["llm_calls"] == 9


def test_chart_is_a_png(tmp_path: Path) -> None:
    tasks, variants = list(FAMILIES), list(VARIANTS)
    cells = summarize([rec("stack", "llm_object", 0, True)], tasks, variants)
    path = tmp_path / "chart.png"
    write_chart(path, cells, tasks, variants, TITLES, "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    # 10/10: the Wilson upper bound is 0.9999999999999999, a hair below the rate (was a negative error bar)
    cells = summarize([rec("stack", "llm_object", i, True) for i in range(10)], tasks, variants)
    write_chart(path, cells, tasks, variants, TITLES, "test")


# ----- timing ------------------------------------------------------------------------------------
def test_llm_usage_sums_recorded_calls_and_skips_bad_lines() -> None:
    lines = [
        json.dumps({"kind": "score", "response": {"wall_time_s": 2.5, "prompt_tokens": 900, "new_tokens_processed": 120}}),
        json.dumps({"kind": "generate", "response": {"wall_time_s": 1.0, "prompt_tokens": 950,
                                                     "new_tokens_processed": 60, "completion_tokens": 30}}),
        '{"kind": "score", "respo',  # truncated
        "",
    ]
    u = llm_usage(lines)
    assert (u.calls, u.wall_s, u.prompt_tokens, u.new_tokens, u.completion_tokens) == (2, 3.5, 1850, 180, 30)


def test_motion_time_is_action_to_next_event_without_llm_calls_in_between() -> None:
    events = [("SCENE_OBJECTS", 0.0), ("HUMAN_INSTRUCTION", 0.0), ("ROBOT_ACTION", 5.0), ("SUCCESS", 5.6),
              ("ROBOT_ACTION", 9.0), ("ERROR", 9.1), ("SUCCESS", 9.2), ("ROBOT_THOUGHT", 12.0)]
    assert motion_time(events) == pytest.approx(0.7)
    assert motion_time([("ROBOT_ACTION", 1.0)]) == 0.0
    # open loop: the next event is the next step, planned by an LLM call after the skill finished
    open_loop = [("HUMAN_INSTRUCTION", 0.0), ("ROBOT_ACTION", 4.0), ("ROBOT_ACTION", 9.0), ("ROBOT_THOUGHT", 15.0)]
    llm = [(0.5, 4.0), (4.6, 8.9), (9.7, 14.9)]
    assert motion_time(open_loop, llm) == pytest.approx(0.7 + 0.8)
    stamped = [(4.0, json.dumps({"response": {"wall_time_s": 3.5}})), (8.9, "garbage"),
               (14.9, json.dumps({"response": {"wall_time_s": 5.2}}))]
    assert llm_intervals(stamped) == [pytest.approx((0.5, 4.0)), pytest.approx((9.7, 14.9))]
    assert split_wall_time(10.0, 6.0, 1.0) == (6.0, 1.0, 3.0)
    assert split_wall_time(10.0, 9.5, 1.0)[2] == 0.0


def test_cassette_tail_stamps_each_record_when_it_appears(tmp_path: Path) -> None:
    import threading
    import time

    path = tmp_path / "calls.jsonl"
    path.write_text("old episode\n")
    tail = CassetteTail(path, period_s=0.01)
    tail.start()
    assert path.read_text() == ""  # emptied for the new episode

    def planner() -> None:
        with open(path, "a") as f:
            f.write('{"response": {"wall_time_s": 0.1}}\n{"resp')
            f.flush()
            time.sleep(0.3)
            f.write('onse": {"wall_time_s": 0.2}}\n')

    t0 = time.time()
    writer = threading.Thread(target=planner)
    writer.start()
    writer.join()
    lines = tail.stop()
    assert [json.loads(line)["response"]["wall_time_s"] for _t, line in lines] == [0.1, 0.2]
    assert t0 <= lines[0][0] < t0 + 0.25 and lines[1][0] >= t0 + 0.3  # the split line counts when complete


# ----- the resumable store and the loop -----------------------------------------------------------
def test_store_checks_settings_and_survives_a_truncated_line(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "out")
    assert store.open(SETTINGS) is False
    store.append(rec("stack", "llm_object", 0, False))
    store.append(rec("stack", "llm_object", 1, True))
    store.append(rec("stack", "llm_object", 0, True))  # a rerun of episode 0: the later line wins
    with open(store.episodes_file, "a") as f:
        f.write('{"task": "stack", "variant": "llm_obj')  # crash mid-write
    loaded = ResultStore(tmp_path / "out").load()
    assert [(r.index, r.reward) for r in loaded] == [(0, True), (1, True)]
    assert ResultStore(tmp_path / "out").open(SETTINGS) is True
    with pytest.raises(SettingsMismatch, match="seed"):
        ResultStore(tmp_path / "out").open(Settings("embedded", 7, "scoring", False, 0.02, 15))


class FlakyRunner:
    """Fails like the real graph: `crash_at` raises KeyboardInterrupt (the run dies); `infra` lists
    episodes whose first attempt raises InfrastructureError."""

    def __init__(self, crash_at: EpisodeKey | None = None, infra: tuple[EpisodeKey, ...] = (),
                 always_broken: bool = False) -> None:
        self.crash_at, self.infra, self.always_broken = crash_at, set(infra), always_broken
        self.ran: list[EpisodeKey] = []
        self.recovered = 0

    def run(self, key: EpisodeKey) -> EpisodeRecord:
        if key == self.crash_at:
            raise KeyboardInterrupt
        if self.always_broken or key in self.infra:
            self.infra.discard(key)
            raise InfrastructureError("planner died")
        self.ran.append(key)
        return rec(key.task, key.variant, key.index, key.index % 2 == 0, wall_s=1.0)

    def recover(self) -> None:
        self.recovered += 1


def test_a_crashed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    plan = bm.plan_episodes(["pick_place", "stack"], ["llm_object", "im_object_success"], 2)
    store = ResultStore(tmp_path)
    store.open(SETTINGS)
    lines: list[str] = []
    first = FlakyRunner(crash_at=plan[5])
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(plan, store, first, lambda p, r: lines.append(p.line(r)), LOG)
    assert first.ran == plan[:5] and len(store.load()) == 5
    second = FlakyRunner(infra=(plan[6],))
    records = run_benchmark(plan, ResultStore(tmp_path), second, lambda p, r: lines.append(p.line(r)), LOG)
    assert second.ran == plan[5:] and second.recovered == 1  # only what was missing; one retry
    assert [r.key for r in records] == plan
    assert lines[-1].startswith("[########################] 8/8  success so far 4/8 = 50%  ETA 0m00s")
    # nothing left: a third run only reports
    third = FlakyRunner()
    assert len(run_benchmark(plan, ResultStore(tmp_path), third, lambda p, r: None, LOG)) == 8 and not third.ran


def test_a_graph_that_keeps_failing_stops_the_run_after_one_retry(tmp_path: Path) -> None:
    plan = bm.plan_episodes(["stack"], ["llm_object"], 3)
    store = ResultStore(tmp_path)
    store.open(SETTINGS)
    runner = FlakyRunner(always_broken=True)
    with pytest.raises(InfrastructureError):
        run_benchmark(plan, store, runner, lambda p, r: None, LOG)
    assert runner.recovered == 1 and store.load() == []


def test_progress_line_shows_done_success_and_eta() -> None:
    p = Progress(total=10, done=4, successes=1, session_s=[30.0, 50.0])
    line = p.line(rec("stack", "llm_object", 3, True, steps=4, wall_s=40.0, setup_s=3.0))
    assert line.startswith("[#########...............] 4/10  success so far 1/4 = 25%  ETA 4m00s")
    assert line.endswith("| stack x llm_object #3: reward 1, 4 steps, 43 s")
    assert Progress(total=3).line() == "[........................] 0/3  success so far -  ETA -"


def test_scene_overrides_follow_the_robot() -> None:
    """On the physics sim the scene lives in tabletop_sim, and no kinematic-only parameters are set."""
    o = scene_overrides(TaskScene(("red",), ("red",), 3), 0.0, "sim")
    assert set(o) == {"tabletop_sim"} and o["tabletop_sim"]["sim.seed"] == "3"
    assert "skills" not in static_overrides(SETTINGS, Path("/tmp/o"), "sim")
