"""`monologue-bench --suite table1` (the default): IM Table 1 (IM §4.1) through the real node graph.

Runs N episodes per task family x planner variant, each on a scene sampled for that episode, and
scores each with the task's ground-truth reward on the final `sim/ground_truth` state. Writes
`<out>/episodes.jsonl` as it goes (a rerun with the same --out continues where a run stopped), then
`results.json`, `table.md` and `chart.png`.

The planner, perception and success detector stay up for the whole run; the node(s) holding the
scene (see `scene_overrides`) are restarted for every episode, because that is how a fresh scene is
set. Node output goes to `<out>/graph.log`. With `--robot sim`, the simulator's own speed on this
machine is measured afterwards in a separate process (`monologue-bench-sim --summary`) into
`<out>/simulator.md`.
"""
from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from monologue_bringup.graph import default_config_dir, graph_for, robot_entry, scene_node
from monologue_domain.expert.tabletop import WORLD, goal_of_task
from monologue_domain.msgs import scene_objects_from_msg
from monologue_domain.tasks import (
    FAMILIES,
    State,
    TaskInstance,
    TaskScene,
    reword,
    sample_task,
    state_from_objects,
)

from ..core.benchmark import (
    PAPER_EPISODES,
    STRATEGIES,
    VARIANTS,
    EpisodeKey,
    EpisodeRecord,
    Progress,
    ResultStore,
    Settings,
    SettingsMismatch,
    Variant,
    episode_seed,
    llm_intervals,
    llm_usage,
    load_wordings,
    motion_time,
    param_overrides,
    param_text,
    plan_episodes,
    run_benchmark,
    split_wall_time,
    summarize,
)
from ..core.report import markdown_table, report_markdown, results_json, settings_text, write_chart, write_json
from ..core.store import InfrastructureError
from ..harness import (
    BenchmarkAborted,
    CassetteTail,
    Suite,
    SuiteGraph,
    error_name,
    out_dir,
    parse_list,
    print_output,
    run_on_graph,
    setup_logging,
    transcript_events,
    transcript_kinds,
    usage_error,
)

if TYPE_CHECKING:  # annotations only (mypy sees generated messages as Any: rosidl ships no type information)
    from monologue_interfaces.msg import SceneObject

LOG = logging.getLogger("monologue_bench")
SCENE_ATTEMPTS = 5  # redraws when a sampled scene already satisfies its task
SCENE_TIMEOUT_S = 60.0  # s for the restarted scene's first ground truth and perception's copy
TITLES = {k: (f.title, f.split) for k, f in FAMILIES.items()}
SIMULATOR_FIGURES_TIMEOUT_S = 300.0  # s for the MuJoCo timing process
# The simulator's speed is measured by the simulator benchmark in a process of its own: the bench talks
# to the graph and never imports a node package's internals.
SIMULATOR_FIGURES_CMD = (sys.executable, "-m", "monologue_eval.benchmarks.bench_sim", "--summary")


def scene_overrides(scene: TaskScene, place_noise_m: float, robot: str = "sim") -> dict[str, dict[str, str]]:
    """Node parameter overrides that set up `scene` ({node: {parameter: value}}).

    The ONE place that knows which node holds the simulated world: every node named here is
    restarted for each episode with these parameters (plus its `static_overrides`).
    """
    return {scene_node(robot): {
        "sim.block_colors": _string_list(scene.block_colors),
        "sim.bowl_colors": _string_list(scene.bowl_colors),
        "sim.seed": str(scene.seed),
        "sim.place_noise_std": repr(float(place_noise_m)),  # m
    }}


def static_overrides(settings: Settings, out: Path, robot: str = "sim") -> dict[str, dict[str, str]]:
    """Parameters for the whole run: transcripts under <out>, every LLM call recorded (for timings and
    tokens), and, without affordances, achieved pick-and-places still offered (IM's sim has no
    affordance model)."""
    params: dict[str, dict[str, str]] = {"planner": {
        "transcript_dir": str(out / "transcripts"),
        "llm.cassette_mode": "record",
        "llm.cassette_path": str(out / "llm_calls.jsonl"),
    }}
    if not settings.affordances and robot_entry(robot).skills_backend == "kinematic":  # arm backends offer them anyway
        params["skills"] = {"sim.completed_affordance": "1.0"}
    for node, extra in param_overrides(settings.params).items():  # --param (ablations)
        clash = sorted(set(extra) & set(params.get(node, {})))
        if clash and node == "planner":
            raise ValueError(f"--param cannot set {node}:{clash}: the bench sets it itself")
        params.setdefault(node, {}).update(extra)
    return params


def goal_options(variant: Variant, settings: Settings) -> dict[str, str | int]:
    """ExecuteInstruction goal fields of a Table 1 variant (Human feedback is off in every one)."""
    from monologue_interfaces.action import ExecuteInstruction

    on, off = ExecuteInstruction.Goal.OPTION_ON, ExecuteInstruction.Goal.OPTION_OFF
    return {
        "strategy": STRATEGIES[settings.strategy],
        "prompt_profile": variant.prompt_profile,
        "object_feedback": on if variant.object_feedback else off,
        "success_feedback": on if variant.success_feedback else off,
        "scene_feedback": on if variant.scene_feedback else off,
        "human_feedback": off,
        "use_affordances": on if settings.affordances else off,
        "max_steps": settings.max_steps,
    }


def _string_list(items: Sequence[str]) -> str:
    # an empty list would not type as a string array on the command line; the node drops "" entries
    return "[" + ", ".join(f"'{c}'" for c in items or [""]) + "]"


def _state(objects: Sequence[SceneObject]) -> State:
    """SceneObject messages -> State (locations dropped)."""
    return state_from_objects(scene_objects_from_msg(objects))


class GraphRunner(SuiteGraph):
    """Runs benchmark episodes on the real graph (core/store.Runner)."""

    def __init__(self, settings: Settings, out: Path, timeout_s: float, robot: str = "sim") -> None:
        super().__init__(robot, settings.llm, out, timeout_s)
        self.settings = settings
        self.static = static_overrides(settings, out, robot)
        self.cassette = out / "llm_calls.jsonl"
        probe_scene = scene_overrides(TaskScene(("red",), (), 0), 0.0, robot)
        self.scene_nodes = sorted(probe_scene)
        self.wordings = (load_wordings(wordings_path(), FAMILY_SLOTS) if settings.wording == "paraphrase" else {})

    def start(self) -> None:
        names = [s.name for s in graph_for(self.robot) if s.name not in self.scene_nodes]
        self.start_graph(names, {n: p for n, p in self.static.items() if n in names}, wait_planner=True)

    def _set_scene(self, task: TaskInstance) -> State:
        """Restart the scene's node(s) with the task's scene; return the observed initial state."""
        scene = scene_overrides(task.scene, self.settings.place_noise_m, self.robot)
        params = {n: {**self.static.get(n, {}), **p} for n, p in scene.items()}
        return _state(self.restart_scene(params, set(task.scene.objects), SCENE_TIMEOUT_S))

    def run(self, key: EpisodeKey) -> EpisodeRecord:
        self.check_alive()
        t_setup = time.monotonic()
        for attempt in range(SCENE_ATTEMPTS):
            task = sample_task(key.task, episode_seed(self.settings.seed, key.task, key.index, attempt))
            if self.wordings:  # same scene and goal, the paraphrase list's wording
                options = self.wordings[key.task]
                task = reword(task, options[key.index % len(options)])
            initial = self._set_scene(task)
            if not task.reward(initial):
                break
            LOG.info("%s: scene %d already satisfies %r; drawing another", key, task.scene.seed, task.instruction)
        else:
            raise BenchmarkAborted(f"{key}: {SCENE_ATTEMPTS} scenes in a row were solved at the start")
        setup_s = time.monotonic() - t_setup
        self.record_expert_task(task.instruction, WORLD, goal_of_task(task))  # llm:=expert only: the goal
        tail = CassetteTail(self.cassette)
        ep = self.play(task.instruction, self.timeout_s, goal_options(VARIANTS[key.variant], self.settings),
                       key.variant, tail)
        result, objects, wall_s, calls = ep.result, ep.objects, ep.wall_s, tail.lines
        final = _state(objects)
        try:
            reward = task.reward(final)
        except ValueError as e:  # another scene's ground truth (a second graph on this ROS domain?)
            raise InfrastructureError(f"unusable ground truth after the episode: {e}") from e
        usage = llm_usage(line for _t, line in calls)
        kinds = transcript_kinds()
        events = [(kinds.get(e.kind, str(e.kind)), e.stamp.sec + e.stamp.nanosec * 1e-9) for e in result.transcript]
        llm_s, motion_s, rest_s = split_wall_time(wall_s, usage.wall_s, motion_time(events, llm_intervals(calls)))
        decisions, single = decision_counts(transcript_events(result))
        return EpisodeRecord(
            task=key.task, variant=key.variant, index=key.index, seed=task.scene.seed,
            instruction=task.instruction, reward=reward,
            block_colors=list(task.scene.block_colors), bowl_colors=list(task.scene.bowl_colors),
            slots=dict(task.slots), steps=int(result.steps_taken), planner_success=bool(result.success),
            planner_error=error_name(result.error_code), planner_reason=str(result.reason),
            transcript_path=str(result.transcript_path), wall_s=wall_s, llm_s=llm_s, motion_s=motion_s,
            rest_s=rest_s, setup_s=setup_s, llm_calls=usage.calls, prompt_tokens=usage.prompt_tokens,
            new_tokens=usage.new_tokens, completion_tokens=usage.completion_tokens,
            final_state={n: [round(v, 4) for v in b.position] for n, b in final.items()}, started=ep.started,
            decisions=decisions, single_candidate=single,
        )


def decision_counts(events: Sequence[tuple[str, str, Mapping[str, object]]]) -> tuple[int, int]:
    """(decisions, single_candidate) of the planner's EPISODE_END event ((-1, -1) without them: an older planner)."""
    for kind, _text, data in events:
        dec, single = data.get("decisions"), data.get("single_candidate")
        if kind == "EPISODE_END" and isinstance(dec, int) and isinstance(single, int):
            return dec, single
    return -1, -1


# The slots each family's tasks carry (the placeholders its wordings may use).
FAMILY_SLOTS: dict[str, tuple[str, ...]] = {
    "pick_place": ("block", "target"), "stack": (), "blocks_to_location": ("location",), "blocks_to_bowl": ("bowl",),
    "different_corners": (), "matching_bowls": (), "mismatched_bowls": (), "stack_on_location": ("location",)}


def wordings_path() -> Path:
    return default_config_dir() / "benchmarks" / "wordings.yaml"


def run(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite table1` (arguments parsed by bench.parse_args)."""
    setup_logging()
    try:
        tasks = parse_list(ns.tasks, list(FAMILIES), {
            "all": list(FAMILIES), "seen": [k for k, f in FAMILIES.items() if f.split == "seen"],
            "unseen": [k for k, f in FAMILIES.items() if f.split == "unseen"]}, "task")
        variants = parse_list(ns.variants, list(VARIANTS), {"all": list(VARIANTS)}, "variant")
        episodes = PAPER_EPISODES if ns.full else ns.episodes
        from monologue_bringup.up import parse_node_params

        settings = Settings(llm=ns.llm, seed=ns.seed, strategy=ns.strategy, affordances=ns.affordances == "on",
                            place_noise_m=ns.place_noise, max_steps=ns.max_steps, wording=ns.wording,
                            params=param_text(parse_node_params(ns.param)))
        settings.validate()
        static_overrides(settings, Path("runs"), ns.robot)  # a --param the bench owns fails here
        if settings.wording == "paraphrase":
            load_wordings(wordings_path(), FAMILY_SLOTS)  # a bad list fails here, before the graph starts
        plan = plan_episodes(tasks, variants, episodes)
        suffix = "" if ns.wording == "original" else f"-{ns.wording}"
        out = out_dir(ns, f"{ns.llm}-{ns.strategy}-seed{ns.seed}{suffix}")
        store = ResultStore(out, LOG)
        resumed = store.open(settings)
    except (ValueError, SettingsMismatch) as e:
        return usage_error(e)
    print(f"== IM Table 1 benchmark: {len(tasks)} task(s) x {len(variants)} variant(s) x {episodes} episode(s) "
          f"= {len(plan)} episodes; {settings_text(settings, episodes)}")
    print_output(out, resumed)

    def show(progress: Progress, rec: EpisodeRecord | None) -> None:
        print(progress.line(rec), flush=True)

    pending = {k for k in plan} - {r.key for r in store.load()}
    t0 = time.monotonic()
    rc, runner = run_on_graph(bool(pending), lambda: GraphRunner(settings, out, ns.timeout, ns.robot), "LLM loaded",
                              lambda r: run_benchmark(plan, store, r or _NoRunner(), show, LOG))
    done = {r.key: r for r in store.load()}
    records = [done[k] for k in plan if k in done]
    if not records:
        return rc or 1
    cells = summarize(records, tasks, variants)
    text = report_markdown(settings, cells, records, tasks, variants, TITLES, episodes)
    (out / "table.md").write_text(text, encoding="utf-8")
    write_json(out / "results.json", results_json(settings, cells, records, TITLES))
    write_chart(out / "chart.png", cells, tasks, variants, TITLES, settings_text(settings, episodes))
    print()
    print(markdown_table(cells, tasks, variants, TITLES))
    print(text.split("### Episode wall time (means per episode)\n\n", 1)[1])
    if runner is not None:
        print(f"graph start-up: {runner.start_s:.1f} s; this session: {time.monotonic() - t0:.0f} s")
        if ns.robot == "sim":  # machine-dependent, so next to the table rather than in it
            figures = simulator_figures()
            (out / "simulator.md").write_text(figures, encoding="utf-8")
            print(figures)
    print(f"== wrote {out / 'table.md'}, {out / 'results.json'}, {out / 'chart.png'}")
    return rc


def simulator_figures(timeout_s: float = SIMULATOR_FIGURES_TIMEOUT_S) -> str:
    """The MuJoCo simulator's speed on this machine (Markdown), measured by SIMULATOR_FIGURES_CMD."""
    try:
        run = subprocess.run(list(SIMULATOR_FIGURES_CMD), capture_output=True, text=True, timeout=timeout_s,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"### Simulator (MuJoCo)\n\n- unavailable: the timing did not finish in {timeout_s:.0f} s\n"
    if run.returncode != 0:
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return f"### Simulator (MuJoCo)\n\n- unavailable: the timing failed ({tail})\n"
    return run.stdout


class _NoRunner:
    """Used when every planned episode is already done (only the report is rebuilt)."""

    def run(self, key: EpisodeKey) -> EpisodeRecord:
        raise AssertionError(f"nothing should run, but {key} was asked for")

    def recover(self) -> None:
        pass


SUITE = Suite(
    "table1", "IM Table 1 on the tabletop (default; --robot sim or sim_kinematic)", run, variants=tuple(VARIANTS),
    arguments="--tasks, --variants, --episodes/--full, --robot, --strategy, --affordances, --place-noise, "
              "--wording, --param", paired=True)
