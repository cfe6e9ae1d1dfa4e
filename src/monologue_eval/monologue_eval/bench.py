"""`monologue-bench`: IM Table 1 (IM §4.1) through the real node graph; with `--suite saycan | im_kitchen`
SC Table 2 / IM Table 3 on the symbolic kitchen (kitchen_bench.py); with `--suite cape` CAPE Tables I-II
on the household (cape_bench.py).

Runs N episodes per task family x planner variant, each on a scene sampled for that episode, and
scores each with the task's ground-truth reward on the final `sim/ground_truth` state. Writes
`<out>/episodes.jsonl` as it goes (a rerun with the same --out continues where a run stopped), then
`results.json`, `table.md` and `chart.png`.

    monologue-bench [--suite table1|saycan|im_kitchen|cape]
                    [--llm embedded|openai] [--seed N] [--episodes N | --full] [--tasks all|seen|unseen|a,b]
                    [--variants all|a,b] [--out DIR] [--strategy scoring|generative] [--affordances on|off]
                    [--place-noise M] [--max-steps K] [--timeout S] [--robot sim|sim_kinematic]
                    [--families all|a,b] [--instructions N] [--conditions all|none|disturbances]  (kitchen)

The planner, perception and success detector stay up for the whole run; the node(s) holding the
scene (see `scene_overrides`) are restarted for every episode, because that is how a fresh scene is
set. Node output goes to `<out>/graph.log`. With `--robot sim`, the simulator's own speed on this
machine is measured afterwards in a separate process (`monologue-bench-sim --summary`) into
`<out>/simulator.md`.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from monologue_bringup.graph import default_config_dir, graph_for, robot_entry, scene_node, simulated_robots
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

from .core.benchmark import (
    K_STEPS,
    PAPER_EPISODES,
    STRATEGIES,
    VARIANTS,
    WORDINGS,
    EpisodeKey,
    EpisodeRecord,
    InfrastructureError,
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
from .core.cape_bench import CAPE_VARIANTS
from .core.kitchen_bench import IM_SUITE_VARIANTS, KITCHEN_SUITES, SAYCAN_SUITE_VARIANTS
from .core.report import markdown_table, report_markdown, results_json, settings_text, write_chart, write_json

if TYPE_CHECKING:  # annotations only (mypy sees generated messages as Any: rosidl ships no type information)
    from monologue_bringup.up import Supervisor
    from monologue_interfaces.msg import SceneDescription, SceneObject

LOG = logging.getLogger("monologue_bench")
DEFAULT_EPISODES = 1  # per cell; 8 tasks x 3 variants ~ 10 min with the embedded model on 2 cores
SCENE_ATTEMPTS = 5  # redraws when a sampled scene already satisfies its task
TITLES = {k: (f.title, f.split) for k, f in FAMILIES.items()}
SUITES = ("table1", *KITCHEN_SUITES, "cape", "statler", "statler_cups", "multitalk")  # --suite choices
SIMULATOR_FIGURES_TIMEOUT_S = 300.0  # s for the MuJoCo timing process
# The simulator's speed is measured by the simulator benchmark in a process of its own: the bench talks
# to the graph and never imports a node package's internals.
SIMULATOR_FIGURES_CMD = (sys.executable, "-m", "monologue_eval.benchmarks.bench_sim", "--summary")


def tabletop_robots() -> tuple[str, ...]:
    """The simulated robots in a tabletop world: the IM Table 1 suite's choices."""
    return tuple(r for r in simulated_robots() if robot_entry(r).world == "tabletop")


class BenchmarkAborted(RuntimeError):
    """An error that retrying cannot fix (the planner refused the goal, no usable scene)."""


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


class LineSink:
    """Node output lines -> a log file."""

    def __init__(self, path: Path) -> None:
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.write(line + "\n")
                self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()


class CassetteTail:
    """Follows the planner's LLM cassette during an episode and stamps each call record (s since the
    epoch) as it appears, which is when the call ended: this places LLM time on the transcript's time
    line. The file is emptied at start (the planner is idle then and appends one line per call)."""

    def __init__(self, path: Path, period_s: float = 0.02) -> None:
        self.path = path
        self.period_s = period_s  # s between polls
        self.lines: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._offset = 0
        self._partial = b""

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"")
        self.lines, self._offset, self._partial = [], 0, b""
        self._stop.clear()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def stop(self) -> list[tuple[float, str]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._poll()
        return self.lines

    def _follow(self) -> None:
        while not self._stop.wait(self.period_s):
            self._poll()

    def _poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        if not chunk:
            return
        now = time.time()
        self._offset += len(chunk)
        data = self._partial + chunk
        *complete, self._partial = data.split(b"\n")
        self.lines += [(now, line.decode("utf-8", "replace")) for line in complete if line.strip()]


class SceneProbe:
    """The benchmark's own ROS node: watches `sim/ground_truth` and asks perception for the scene."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        from monologue_common.actions import ActionClient
        from monologue_common.qos import LATCHED
        from monologue_interfaces.action import ExecuteInstruction
        from monologue_interfaces.msg import SceneDescription
        from monologue_interfaces.srv import DescribeScene

        self._rclpy = rclpy
        self.node = rclpy.create_node(f"monologue_bench_{os.getpid()}")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.latest: SceneDescription | None = None
        self.node.create_subscription(SceneDescription, "sim/ground_truth", self._on_truth, LATCHED)
        self.describe = self.node.create_client(DescribeScene, "describe_scene")
        self.request = DescribeScene.Request
        self.planner = ActionClient(self.node, ExecuteInstruction, "execute_instruction")

    def _on_truth(self, msg: SceneDescription) -> None:
        self.latest = msg

    def wait_planner(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.planner.server_is_ready():
            if time.monotonic() > deadline:
                raise InfrastructureError(f"the planner's execute_instruction did not appear in {timeout_s:.0f} s")
            self.executor.spin_once(timeout_sec=0.2)

    def wait_scene(self, names: set[str], since: float, timeout_s: float,
                   names_of: Callable[[Sequence[SceneObject]], set[str]] | None = None) -> list[SceneObject]:
        """Objects of the first ground truth stamped after `since` (s, epoch) with exactly `names`
        (`names_of(objects)`; default: every object but the locations, i.e. blocks and bowls), once
        perception describes the same scene."""
        deadline = time.monotonic() + timeout_s

        def object_names(objects: Sequence[SceneObject]) -> set[str]:
            return {o.name for o in objects if o.category != "location"}

        name_set = names_of or object_names

        def fresh(msg: SceneDescription) -> bool:
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            return stamp >= since and name_set(msg.objects) == names

        while self.latest is None or not fresh(self.latest):
            if time.monotonic() > deadline:
                seen = [] if self.latest is None else sorted(o.name for o in self.latest.objects)
                raise InfrastructureError(f"no ground truth with {sorted(names)} in {timeout_s:.0f} s; last: {seen}")
            self.executor.spin_once(timeout_sec=0.1)
        objects = list(self.latest.objects)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise InfrastructureError(f"perception did not describe the new scene in {timeout_s:.0f} s")
            if self.describe.wait_for_service(timeout_sec=min(1.0, remaining)):
                future = self.describe.call_async(self.request(refresh=True))
                self.executor.spin_until_future_complete(future, timeout_sec=min(3.0, remaining))
                res = future.result()
                if res is not None and res.success and fresh(res.scene):
                    return objects
            self.executor.spin_once(timeout_sec=0.1)

    def close(self) -> None:
        self.executor.shutdown()  # drops spin_once's suspended wait (it holds the node's handles)
        self.node.destroy_node()


class GraphRunner:
    """Runs benchmark episodes on the real graph (EpisodeRunner)."""

    def __init__(self, settings: Settings, out: Path, timeout_s: float, robot: str = "sim") -> None:
        self.settings = settings
        self.out = out
        self.timeout_s = timeout_s
        self.robot = robot
        self.static = static_overrides(settings, out, robot)
        self.cassette = out / "llm_calls.jsonl"
        probe_scene = scene_overrides(TaskScene(("red",), (), 0), 0.0, robot)
        self.scene_nodes = sorted(probe_scene)
        self.sink = LineSink(out / "graph.log")
        self.graph: Supervisor | None = None
        self.scene_sup: Supervisor | None = None
        self.probe: SceneProbe | None = None
        self.start_s = 0.0  # s, last bring-up of the static graph until the planner answered
        self.wordings = (load_wordings(wordings_path(), FAMILY_SLOTS) if settings.wording == "paraphrase" else {})

    def start(self) -> None:
        from monologue_bringup.up import Supervisor

        t0 = time.monotonic()
        names = [s.name for s in graph_for(self.robot) if s.name not in self.scene_nodes]
        self.graph = Supervisor(self.robot, self.settings.llm, nodes=names, sink=self.sink, log_level="warn",
                                node_params={n: p for n, p in self.static.items() if n in names})
        self.graph.start()
        self.probe = SceneProbe()
        self.probe.wait_planner(240.0)
        self.start_s = time.monotonic() - t0

    def stop(self) -> None:
        if self.scene_sup is not None:
            self.scene_sup.stop()
            self.scene_sup = None
        if self.probe is not None:
            self.probe.close()
            self.probe = None
        if self.graph is not None:
            self.graph.stop()
            self.graph = None

    def recover(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        self.sink.close()

    def _set_scene(self, task: TaskInstance) -> State:
        """Restart the scene's node(s) with the task's scene; return the observed initial state."""
        from monologue_bringup.up import Supervisor

        assert self.probe is not None
        if self.scene_sup is not None:
            self.scene_sup.stop()
        scene = scene_overrides(task.scene, self.settings.place_noise_m, self.robot)
        params = {n: {**self.static.get(n, {}), **p} for n, p in scene.items()}
        since = time.time()
        self.scene_sup = Supervisor(self.robot, self.settings.llm, nodes=sorted(params), node_params=params,
                                    sink=self.sink, log_level="warn")
        self.scene_sup.start()
        objects = self.probe.wait_scene(set(task.scene.objects), since, 60.0)
        return _state(objects)

    def run(self, key: EpisodeKey) -> EpisodeRecord:
        from monologue_interfaces.action import ExecuteInstruction
        from monologue_interfaces.msg import TranscriptEvent

        from .client import run_episode

        assert self.graph is not None
        dead = self.graph.dead()
        if dead:
            raise InfrastructureError(f"node(s) exited: {dead}")
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
        tail = CassetteTail(self.cassette)
        tail.start()  # the planner is idle: only this episode's calls follow
        started = time.time()
        t0 = time.monotonic()
        try:
            result, objects = run_episode(task.instruction, self.timeout_s, print_event=lambda _e: None,
                                          ready_timeout_s=30.0,
                                          goal_options=goal_options(VARIANTS[key.variant], self.settings))
        except (TimeoutError, RuntimeError) as e:
            raise InfrastructureError(str(e)) from e
        finally:
            calls = tail.stop()
        wall_s = time.monotonic() - t0
        infra = {ExecuteInstruction.Result.SKILL_SERVER_UNAVAILABLE: "SKILL_SERVER_UNAVAILABLE",
                 ExecuteInstruction.Result.LLM_FAILED: "LLM_FAILED"}
        if result.error_code in infra:
            raise InfrastructureError(f"{infra[result.error_code]}: {result.reason}")
        if result.error_code == ExecuteInstruction.Result.INVALID_GOAL:
            raise BenchmarkAborted(f"the planner refused the {key.variant} goal: {result.reason}")
        if not objects:
            raise InfrastructureError("no ground truth after the episode")
        final = _state(objects)
        try:
            reward = task.reward(final)
        except ValueError as e:  # another scene's ground truth (a second graph on this ROS domain?)
            raise InfrastructureError(f"unusable ground truth after the episode: {e}") from e
        usage = llm_usage(line for _t, line in calls)
        kinds = {getattr(TranscriptEvent, n): n[5:] for n in dir(TranscriptEvent) if n.startswith("KIND_")}
        events = [(kinds.get(e.kind, str(e.kind)), e.stamp.sec + e.stamp.nanosec * 1e-9) for e in result.transcript]
        llm_s, motion_s, rest_s = split_wall_time(wall_s, usage.wall_s, motion_time(events, llm_intervals(calls)))
        return EpisodeRecord(
            task=key.task, variant=key.variant, index=key.index, seed=task.scene.seed,
            instruction=task.instruction, reward=reward,
            block_colors=list(task.scene.block_colors), bowl_colors=list(task.scene.bowl_colors),
            slots=dict(task.slots), steps=int(result.steps_taken), planner_success=bool(result.success),
            planner_error=_error_name(result.error_code), planner_reason=str(result.reason),
            transcript_path=str(result.transcript_path), wall_s=wall_s, llm_s=llm_s, motion_s=motion_s,
            rest_s=rest_s, setup_s=setup_s, llm_calls=usage.calls, prompt_tokens=usage.prompt_tokens,
            new_tokens=usage.new_tokens, completion_tokens=usage.completion_tokens,
            final_state={n: [round(v, 4) for v in b.position] for n, b in final.items()}, started=started,
        )


def _error_name(code: int) -> str:
    from monologue_interfaces.action import ExecuteInstruction

    names = {getattr(ExecuteInstruction.Result, n): n for n in dir(ExecuteInstruction.Result)
             if n.isupper() and isinstance(getattr(ExecuteInstruction.Result, n), int)}
    return names.get(code, str(code))


def _parse_list(text: str, known: Sequence[str], groups: Mapping[str, Sequence[str]], what: str) -> list[str]:
    out: list[str] = []
    for item in (i.strip() for i in text.split(",") if i.strip()):
        if item in groups:
            out += [k for k in groups[item] if k not in out]
        elif item in known:
            if item not in out:
                out.append(item)
        else:
            raise ValueError(f"unknown {what} {item!r}; choose from {list(groups) + list(known)}")
    if not out:
        raise ValueError(f"no {what} given")
    return out


# The slots each family's tasks carry (the placeholders its wordings may use).
FAMILY_SLOTS: dict[str, tuple[str, ...]] = {
    "pick_place": ("block", "target"), "stack": (), "blocks_to_location": ("location",), "blocks_to_bowl": ("bowl",),
    "different_corners": (), "matching_bowls": (), "mismatched_bowls": (), "stack_on_location": ("location",)}


def wordings_path() -> Path:
    return default_config_dir() / "benchmarks" / "wordings.yaml"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="monologue-bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=SUITES, default="table1",
                    help="table1: IM Table 1 on the tabletop (default); saycan: SayCan's 101 instructions "
                         "(SC Table 2); im_kitchen: IM Table 3. The kitchen suites run on robot sim_kitchen; "
                         "cape: CAPE Tables I-II on robot sim_household; statler: S Tables I-II on sim_kinematic "
                         "(--variants: methods, --families: domains, --instructions: episodes per domain); "
                         "statler_cups: S Fig. 2's cup game through the LLM directly (--families: styles "
                         "plain,cot,state, --instructions: max swaps, --episodes: trials per n); "
                         "multitalk: MultiTalk's variants beside IM on tabletop scenes of sim_kinematic "
                         "(--instructions: scenes, seeds --seed, --seed+1, ...; multitalk_bench.py)")
    ap.add_argument("--llm", choices=("embedded", "openai"), default="embedded")
    ap.add_argument("--robot", choices=tabletop_robots(), default="sim",
                    help="table1: sim (default: the MuJoCo simulator) or sim_kinematic (the in-process "
                         "kinematic tabletop)")
    ap.add_argument("--seed", type=int, default=0, help="base seed of the scenes (default 0)")
    ap.add_argument("--episodes", type=int, default=DEFAULT_EPISODES,
                    help=f"episodes per task and variant (default {DEFAULT_EPISODES})")
    ap.add_argument("--full", action="store_true", help=f"the paper's protocol: {PAPER_EPISODES} episodes per cell")
    ap.add_argument("--tasks", default="all", help=f"table1: all, seen, unseen, or a comma list of {list(FAMILIES)}")
    ap.add_argument("--variants", default="all",
                    help=f"all or a comma list of: table1 {list(VARIANTS)}; saycan {list(SAYCAN_SUITE_VARIANTS)}; "
                         f"im_kitchen {list(IM_SUITE_VARIANTS)}; cape {list(CAPE_VARIANTS)}")
    ap.add_argument("--families", default="all",
                    help="kitchen suites: all or a comma list of the suite's families; cape: all, paper "
                         "(CAPE's 6 Spot tasks x 2 scenes) or generated")
    ap.add_argument("--instructions", type=int, default=None,
                    help="kitchen suites: only the first N instructions of each family (default: all)")
    ap.add_argument("--conditions", default="all",
                    help="im_kitchen: all, none or disturbances (IM §4.3; saycan: none only)")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory; rerunning with the same one resumes (default runs/bench/<llm>-<strategy>"
                         "-seed<seed>)")
    ap.add_argument("--strategy", choices=list(STRATEGIES), default="scoring",
                    help="scoring: the LLM ranks the admissible steps (default); generative: it writes each step "
                         "(IM's sim)")
    ap.add_argument("--affordances", choices=("on", "off"), default="off",
                    help="SayCan-style affordances in the planner (IM's sim has none: default off)")
    ap.add_argument("--place-noise", type=float, default=0.02,
                    help="std of the Gaussian noise on place positions, m (IM: 0.02)")
    ap.add_argument("--max-steps", type=int, default=K_STEPS, help=f"k, skills per episode (IM: {K_STEPS})")
    ap.add_argument("--wording", choices=WORDINGS, default="original",
                    help="table1: the instructions as IM Table 1 words them, or the fixed paraphrase list "
                         "config/benchmarks/wordings.yaml (paraphrased, misspelled, Chinese, German; same goals)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), default=None,
                    help="table1: no episodes; compare two finished runs (DIR, or DIR:VARIANT for one variant "
                         "of a run) episode by episode on the same scenes: flips and McNemar's exact p")
    ap.add_argument("--table", nargs="+", metavar="RUN", default=None,
                    help="table1: no episodes; finished runs (DIR or DIR:VARIANT) side by side, one row per "
                         "task: rate, 95%% Wilson interval, counts, and the mean over tasks (ablation tables)")
    ap.add_argument("--timeout", type=float, default=900.0, help="s per episode before it is cancelled")
    ap.add_argument("--param", action="append", default=[], metavar="NODE:NAME=VALUE",
                    help="table1: a node parameter override for the whole run (repeatable), e.g. "
                         "planner:scoring.normalization=mean; recorded in the settings (run.json, "
                         "results.json), so --compare shows what differed")
    return ap.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    if ns.suite == "cape":
        from .cape_bench import main as cape_main

        return cape_main(ns)
    if ns.suite == "statler":  # S Tables I-II on the kinematic tabletop (statler_bench.py)
        from .statler_bench import main as statler_main

        return statler_main(ns)
    if ns.suite == "statler_cups":  # S Fig. 2's cup game, the LLM without a graph (statler_bench.py)
        from .statler_bench import cups_main

        return cups_main(ns)
    if ns.suite == "multitalk":  # plans accepted, analyzer rounds, questions, simulator rejections (multitalk_bench.py)
        from .multitalk_bench import main as multitalk_main

        return multitalk_main(ns)
    if ns.compare is not None:
        from .core.paired import Side, compare, comparison_markdown

        try:
            print(comparison_markdown(compare(Side.parse(ns.compare[0]), Side.parse(ns.compare[1])), list(FAMILIES)))
        except (ValueError, OSError) as e:
            print(f"monologue-bench: {e}", file=sys.stderr)
            return 2
        return 0
    if ns.table is not None:
        from .core.paired import Side, ablation_markdown

        try:
            print(ablation_markdown([Side.parse(t) for t in ns.table], list(FAMILIES),
                                    {k: title for k, (title, _split) in TITLES.items()}))
        except (ValueError, OSError) as e:
            print(f"monologue-bench: {e}", file=sys.stderr)
            return 2
        return 0
    if ns.suite != "table1":
        from .kitchen_bench import main as kitchen_main

        return kitchen_main(ns)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        tasks = _parse_list(ns.tasks, list(FAMILIES), {
            "all": list(FAMILIES), "seen": [k for k, f in FAMILIES.items() if f.split == "seen"],
            "unseen": [k for k, f in FAMILIES.items() if f.split == "unseen"]}, "task")
        variants = _parse_list(ns.variants, list(VARIANTS), {"all": list(VARIANTS)}, "variant")
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
        out = (ns.out or Path("runs") / "bench" / f"{ns.llm}-{ns.strategy}-seed{ns.seed}{suffix}").resolve()
        store = ResultStore(out, LOG)
        resumed = store.open(settings)
    except (ValueError, SettingsMismatch) as e:
        print(f"monologue-bench: {e}", file=sys.stderr)
        return 2
    print(f"== IM Table 1 benchmark: {len(tasks)} task(s) x {len(variants)} variant(s) x {episodes} episode(s) "
          f"= {len(plan)} episodes; {settings_text(settings, episodes)}")
    print(f"== output: {out}{' (resuming)' if resumed else ''}; node logs: {out / 'graph.log'}", flush=True)

    def show(progress: Progress, rec: EpisodeRecord | None) -> None:
        print(progress.line(rec), flush=True)

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # Ctrl-C and `kill` stop the graph (its nodes run in their own sessions) and write the report,
    # also when started in the background, where SIGINT would otherwise be ignored
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    pending = {k for k in plan} - {r.key for r in store.load()}
    runner: GraphRunner | None = None
    rc = 0
    t0 = time.monotonic()
    try:
        if pending:
            import rclpy
            from rclpy.signals import SignalHandlerOptions

            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)  # our handlers above, not rclpy's
            runner = GraphRunner(settings, out, ns.timeout, ns.robot)
            print("== starting the graph ...", flush=True)
            runner.start()
            print(f"== graph up in {runner.start_s:.1f} s (LLM loaded)", flush=True)
        records = run_benchmark(plan, store, runner or _NoRunner(), show, LOG)
    except InfrastructureError as e:
        print(f"== the graph failed twice in a row: {e}\n== rerun the same command to continue", file=sys.stderr)
        rc = 1
    except BenchmarkAborted as e:
        print(f"== benchmark aborted: {e}", file=sys.stderr)
        rc = 2
    except KeyboardInterrupt:
        print("\n== interrupted; rerun the same command to continue", file=sys.stderr)
        rc = 130
    finally:
        if runner is not None:
            runner.close()
            import rclpy
            from rclpy.utilities import ok

            if ok():
                rclpy.shutdown()
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


if __name__ == "__main__":
    sys.exit(main())
