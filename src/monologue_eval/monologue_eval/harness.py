"""The benchmark harness every `monologue-bench --suite` shares: the suite plug-in (`Suite`), argument
helpers, the graph's lifecycle (`SuiteGraph`: the static part of the graph, the scene's node(s)
restarted per episode, the benchmark's own probe node), signal handling and rclpy start-up/shutdown
(`run_on_graph`), progress over suites that bring up a graph per episode (`run_each`), and writing
the report files. The resumable store and the episode loop are ROS-free: core/store.py.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from monologue_bringup.graph import EXPERT
from monologue_domain.expert.channel import write_task

from .client import stop_on_signals
from .core.store import Eta, InfrastructureError, Record, RecordStore, run_pending

if TYPE_CHECKING:  # annotations only (mypy sees generated messages as Any: rosidl ships no type information)
    from monologue_bringup.up import Supervisor
    from monologue_interfaces.msg import SceneDescription, SceneObject

T = TypeVar("T")
S = TypeVar("S")
G = TypeVar("G", bound="SuiteGraph")
R = TypeVar("R", bound=Record[Any])
PLANNER_TIMEOUT_S = 240.0  # s for a (re)started planner to load its LLM and answer
INTERRUPTED = "\n== interrupted; rerun the same command to continue"


@dataclass(frozen=True)
class Suite:
    """One `monologue-bench --suite`: registered in monologue_eval.suites.SUITES under `name`.

    `run(ns)` runs it from monologue-bench's parsed arguments (plan, episodes, report) and returns the
    exit status; `variants` are the names --variants takes; `arguments` says what the shared flags mean
    for this suite (for --help); `paired`: --compare / --table (finished IM Table 1 format runs) apply."""

    name: str
    description: str
    run: Callable[[argparse.Namespace], int]
    variants: tuple[str, ...] = ()
    arguments: str = ""
    paired: bool = False


class BenchmarkAborted(RuntimeError):
    """An error that retrying cannot fix (the planner refused the goal, no usable scene)."""


# ----- arguments -------------------------------------------------------------------------------------
def parse_list(text: str, known: Sequence[str], groups: Mapping[str, Sequence[str]], what: str) -> list[str]:
    """A comma list of `known` names and group names (expanded), in order, without repeats."""
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


def choose(text: str, known: Sequence[str], what: str) -> list[str]:
    """`all` or a comma list of `known` names (repeats kept)."""
    if text == "all":
        return list(known)
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown {what} {unknown or text!r}; choose from {list(known)} or all")
    return chosen


def out_dir(ns: argparse.Namespace, default_name: str) -> Path:
    """--out, or runs/bench/<default_name>, absolute."""
    out: Path = ns.out or Path("runs") / "bench" / default_name
    return out.resolve()


def usage_error(e: Exception, prog: str = "monologue-bench") -> int:
    print(f"{prog}: {e}", file=sys.stderr)
    return 2


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


# ----- transcripts and results ---------------------------------------------------------------------------
def event_data(text: str) -> dict[str, Any]:
    """A transcript event's data_json as a dict ({} when empty, malformed or not an object)."""
    try:
        data = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def transcript_kinds() -> dict[int, str]:
    """TranscriptEvent kind number -> name (without KIND_)."""
    from monologue_interfaces.msg import TranscriptEvent

    return {getattr(TranscriptEvent, n): n[5:] for n in dir(TranscriptEvent) if n.startswith("KIND_")}


def transcript_events(result: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind name, text, data) of each event of an ExecuteInstruction result's transcript."""
    kinds = transcript_kinds()
    return [(kinds.get(e.kind, str(e.kind)), e.text, event_data(e.data_json)) for e in result.transcript]


def error_name(code: int) -> str:
    """ExecuteInstruction.Result error code -> its constant's name."""
    from monologue_interfaces.action import ExecuteInstruction

    names = {getattr(ExecuteInstruction.Result, n): n for n in dir(ExecuteInstruction.Result)
             if n.isupper() and isinstance(getattr(ExecuteInstruction.Result, n), int)}
    return names.get(code, str(code))


def read_jsonl(path: Path, parse: Callable[[dict[str, Any]], T]) -> list[T]:
    """Every non-empty line of `path`, parsed ([] when there is no file)."""
    if not path.is_file():
        return []
    return [parse(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def append_jsonl(path: Path, obj: Any, ensure_ascii: bool = True) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(obj, ensure_ascii=ensure_ascii) + "\n")


def settings_line(robot: str, settings: Any, records: int, items: int, what: str) -> str:
    """The report's one line about the run (settings with llm, seed and max_steps)."""
    return (f"Robot {robot}, LLM {settings.llm}, seed {settings.seed}, max {settings.max_steps} steps; "
            f"{records} episode(s) over {items} {what}(s).")


def write_results(out: Path, table: str, data: dict[str, Any], settings: Any, records: Iterable[Any]) -> None:
    """<out>/table.md and <out>/results.json: `data` with the settings (suite, llm, seed, max_steps) and
    the per-episode records."""
    from .core.report import write_json

    (out / "table.md").write_text(table, encoding="utf-8")
    data["settings"] = {k: getattr(settings, k) for k in ("suite", "llm", "seed", "max_steps")}
    data["records"] = [r.to_json() for r in records]
    write_json(out / "results.json", data)


def print_output(out: Path, resumed: bool) -> None:
    print(f"== output: {out}{' (resuming)' if resumed else ''}; node logs: {out / 'graph.log'}", flush=True)


def print_written(out: Path) -> None:
    """The report's table, then where the files are."""
    print()
    print((out / "table.md").read_text(encoding="utf-8"))
    print(f"== wrote {out / 'table.md'}, {out / 'results.json'}, {out / 'chart.png'}")


# ----- the graph -----------------------------------------------------------------------------------------
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
        name_set = names_of or things

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


def things(objects: Sequence[SceneObject]) -> set[str]:
    """Names of a scene's objects other than its locations."""
    return {o.name for o in objects if o.category != "location"}


@dataclass(frozen=True)
class Played:
    """One instruction run on the graph: the planner's result, the final ground truth's objects."""

    result: Any  # ExecuteInstruction.Result
    objects: list[Any]  # SceneObject messages
    started: float  # s since the epoch, goal sent
    wall_s: float  # s, goal sent -> final state read


def on_off() -> tuple[int, int]:
    """ExecuteInstruction.Goal's OPTION_ON and OPTION_OFF."""
    from monologue_interfaces.action import ExecuteInstruction

    return ExecuteInstruction.Goal.OPTION_ON, ExecuteInstruction.Goal.OPTION_OFF


def record_expert_task(truth_dir: Path | None, instruction: str, world: str, goal: Mapping[str, Any]) -> None:
    """Write the goal of `instruction` to the expert stand-in's side channel `truth_dir` (a GraphRun's or
    SuiteGraph's `expert_truth_dir`/`expert_dir`; None, i.e. another LLM: nothing). The goal is the world's
    expert planner's (monologue_domain.expert.<world>)."""
    if truth_dir is not None:
        write_task(truth_dir, instruction, world, goal)


class SuiteGraph:
    """A suite's graph on `robot`: the static nodes (`start`), the scene's node(s) restarted per episode
    (`restart_scene`) and the benchmark's probe node; node output goes to <out>/graph.log. A suite's
    runner subclasses it with `start()` and `run(key)` (core/store.Runner)."""

    def __init__(self, robot: str, llm: str, out: Path, timeout_s: float) -> None:
        self.robot = robot
        self.llm = llm
        self.out = out
        self.timeout_s = timeout_s  # s per episode
        self.sink = LineSink(out / "graph.log")
        self.graph: Supervisor | None = None
        self.scene_sup: Supervisor | None = None
        self.probe: SceneProbe | None = None
        self.start_s = 0.0  # s, last bring-up of the static graph (until the planner answered, if waited for)
        # llm:=expert: the stand-in's side channel, one for the whole run (every restarted scene writes there)
        self.expert_dir: Path | None = out / "expert_truth" if llm == EXPERT else None

    def supervisor(self, nodes: list[str], params: dict[str, dict[str, str]]) -> Supervisor:
        from monologue_bringup.up import Supervisor

        if self.expert_dir is not None:
            params = {**params, "planner": {**params.get("planner", {}), "llm.expert.truth_dir": str(self.expert_dir)}}
        return Supervisor(self.robot, self.llm, nodes=nodes, sink=self.sink, log_level="warn", node_params=params)

    def record_expert_task(self, instruction: str, world: str, goal: Mapping[str, Any]) -> None:
        """Tell the expert stand-in (llm:=expert only) the goal of `instruction`."""
        record_expert_task(self.expert_dir, instruction, world, goal)

    def start_graph(self, nodes: list[str], params: dict[str, dict[str, str]], wait_planner: bool) -> None:
        """Bring up the static nodes and the probe; with `wait_planner`, until the planner answers."""
        t0 = time.monotonic()
        self.graph = self.supervisor(nodes, params)
        self.graph.start()
        self.probe = SceneProbe()
        if wait_planner:
            self.probe.wait_planner(PLANNER_TIMEOUT_S)
        self.start_s = time.monotonic() - t0

    def start(self) -> None:
        raise NotImplementedError

    def run(self, key: Any) -> Any:
        """One episode's record (core/store.Runner)."""
        raise NotImplementedError

    def stop_more(self) -> None:
        """Stop what a subclass started besides the graph and the scene (before the probe and the graph)."""

    def stop(self) -> None:
        if self.scene_sup is not None:
            self.scene_sup.stop()
            self.scene_sup = None
        self.stop_more()
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

    def check_alive(self) -> None:
        assert self.graph is not None
        dead = self.graph.dead()
        if dead:
            raise InfrastructureError(f"node(s) exited: {dead}")

    def restart_scene(self, params: dict[str, dict[str, str]], names: set[str], timeout_s: float,
                      names_of: Callable[[Sequence[SceneObject]], set[str]] | None = None) -> list[SceneObject]:
        """Restart the scene's node(s) with `params`; the objects of their first ground truth with `names`."""
        assert self.probe is not None
        if self.scene_sup is not None:
            self.scene_sup.stop()
        since = time.time()
        self.scene_sup = self.supervisor(sorted(params), params)
        self.scene_sup.start()
        return self.probe.wait_scene(names, since, timeout_s, names_of=names_of)

    def send_goal(self, text: str, timeout_s: float, options: Mapping[str, str | int]) -> tuple[Any, list[Any]]:
        """The planner's result and the final ground truth's objects; the graph's failures are
        InfrastructureError."""
        from .client import run_episode

        try:
            return run_episode(text, timeout_s, print_event=lambda _e: None, ready_timeout_s=30.0,
                               goal_options=options)
        except (TimeoutError, RuntimeError) as e:
            raise InfrastructureError(str(e)) from e

    def play(self, text: str, timeout_s: float, options: Mapping[str, str | int], variant: str,
             tail: CassetteTail | None = None) -> Played:
        """Send the instruction and wait for its end (`tail` follows the LLM calls meanwhile); the graph's
        failures are InfrastructureError, a refused goal BenchmarkAborted (`check_result`)."""
        if tail is not None:
            tail.start()  # the planner is idle: only this episode's calls follow
        started = time.time()
        t0 = time.monotonic()
        try:
            result, objects = self.send_goal(text, timeout_s, options)
        finally:
            if tail is not None:
                tail.stop()
        wall_s = time.monotonic() - t0
        self.check_result(result, objects, variant)
        return Played(result, objects, started, wall_s)

    @staticmethod
    def check_result(result: Any, objects: Sequence[Any], variant: str) -> None:
        """InfrastructureError when the graph failed the episode, BenchmarkAborted when the planner refused
        the variant's goal."""
        from monologue_interfaces.action import ExecuteInstruction

        infra = {ExecuteInstruction.Result.SKILL_SERVER_UNAVAILABLE: "SKILL_SERVER_UNAVAILABLE",
                 ExecuteInstruction.Result.LLM_FAILED: "LLM_FAILED"}
        if result.error_code in infra:
            raise InfrastructureError(f"{infra[result.error_code]}: {result.reason}")
        if result.error_code == ExecuteInstruction.Result.INVALID_GOAL:
            raise BenchmarkAborted(f"the planner refused the {variant} goal: {result.reason}")
        if not objects:
            raise InfrastructureError("no ground truth after the episode")


def run_on_graph(pending: bool, make_runner: Callable[[], G], up_note: str,
                 loop: Callable[[G | None], object]) -> tuple[int, G | None]:
    """Start rclpy and the runner's graph when episodes are pending, run `loop(runner)`, and stop
    everything whatever happens: (exit status, the closed runner or None). Ctrl-C and `kill` raise
    KeyboardInterrupt (also in the background, where SIGINT would be ignored): the graph's nodes run in
    their own sessions and are stopped here."""
    stop_on_signals()
    runner: G | None = None
    rc = 0
    try:
        if pending:
            import rclpy
            from rclpy.signals import SignalHandlerOptions

            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)  # our handlers, not rclpy's
            runner = make_runner()
            print("== starting the graph ...", flush=True)
            runner.start()
            print(f"== graph up in {runner.start_s:.1f} s ({up_note})", flush=True)
        loop(runner)
    except InfrastructureError as e:
        print(f"== the graph failed twice in a row: {e}\n== rerun the same command to continue", file=sys.stderr)
        rc = 1
    except BenchmarkAborted as e:
        print(f"== benchmark aborted: {e}", file=sys.stderr)
        rc = 2
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        rc = 130
    finally:
        if runner is not None:
            runner.close()
            import rclpy
            from rclpy.utilities import ok

            if ok():
                rclpy.shutdown()
    return rc, runner


def run_each(todo: Sequence[T], run_one: Callable[[T], S], label: Callable[[T], str],
             on_result: Callable[[int, T, S, float], None]) -> int:
    """For suites that bring up a graph per episode: `run_one` each item in turn, `on_result(n, item,
    result, seconds it took)`; a graph failure (TimeoutError, RuntimeError) is printed and the item left unscored. 130
    when interrupted (a rerun continues), else 0."""
    stop_on_signals()
    for n, item in enumerate(todo, 1):
        t0 = time.monotonic()
        try:
            result = run_one(item)
        except KeyboardInterrupt:
            print(INTERRUPTED, file=sys.stderr)
            return 130
        except (TimeoutError, RuntimeError) as e:
            if isinstance(e.__context__, KeyboardInterrupt):  # a signal, masked by the graph's shutdown error
                print(INTERRUPTED, file=sys.stderr)
                return 130
            print(f"== [{n}/{len(todo)}] {label(item)}: not scored ({e})", file=sys.stderr)
            continue
        on_result(n, item, result, time.monotonic() - t0)
    return 0


def run_planned(plan: Sequence[Any], store: RecordStore[R], make_runner: Callable[[], G], up_note: str,
                describe: Callable[[R], str], report: Callable[[list[R]], None], logger: logging.Logger,
                success: Callable[[R], bool] | None = None) -> int:
    """A graph suite's run after its plan: the pending episodes on the graph (`run_on_graph`), a progress
    line per episode (`describe(record)`, and the successes so far with `success`), then `report(records)`
    over the plan's finished records and the table printed. The exit status."""
    earlier = store.load()
    pending = [k for k in plan if k not in {r.key for r in earlier}]
    wanted = set(plan)
    eta = Eta(len(plan), len(plan) - len(pending))
    successes = sum(success(r) for r in earlier if r.key in wanted) if success is not None else 0

    def show(rec: R, seconds: float) -> None:
        nonlocal successes
        minutes = eta.add(seconds)
        if success is None:
            print(f"[{eta.done}/{len(plan)}] ETA {minutes:.0f} min | {rec.key}: {describe(rec)}", flush=True)
            return
        successes += success(rec)
        print(f"[{eta.done}/{len(plan)}] success so far {successes}/{eta.done}  ETA {minutes:.0f} min  | {rec.key}: "
              f"{describe(rec)}", flush=True)

    def loop(runner: G | None) -> None:
        print(f"[{eta.done}/{len(plan)}] episodes already done", flush=True)
        if runner is not None:
            run_pending(plan, store, runner, logger, show)

    rc, _runner = run_on_graph(bool(pending), make_runner, up_note, loop)
    records = [r for r in store.load() if r.key in wanted]
    if not records:
        return rc or 1
    report(records)
    print_written(store.out)
    return rc
