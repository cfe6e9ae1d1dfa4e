"""`monologue-bench --suite saycan | im_kitchen`: SC Table 2 / IM Table 3 through the real node graph.

The robot is `sim_kitchen` (the symbolic kitchen inside the skills node). For every episode the skills
node is restarted with the instruction's start state (and, under "disturbances", IM §4.3's disturbance
rates: core/kitchen_bench.DISTURBANCE_RATES); the planner, perception and success detector stay up. The
skills the planner chose come from the transcript, the final world from `sim/ground_truth`; both are
scored with core/kitchen_report.score_episode and appended to `<out>/episodes.jsonl` (a rerun with the
same --out continues), then `results.json`, `table.md` and `chart.png` are written.
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monologue_bringup.graph import default_config_dir, graph_for, scene_node
from monologue_domain.kitchen.scene import state_from_scene
from monologue_domain.kitchen.state import KitchenState
from monologue_domain.kitchen.suites import Instruction, Suite, SuiteError, load_suite, suite_path

from .core.benchmark import InfrastructureError, SettingsMismatch
from .core.kitchen_bench import (
    KITCHEN_ROBOT,
    SUITE_VARIANTS,
    VARIANT_LABELS,
    KitchenKey,
    KitchenRecord,
    KitchenSettings,
    KitchenStore,
    chosen_skills,
    goal_options,
    kitchen_seed,
    plan_kitchen,
    select_instructions,
    skills_parameters,
    suite_conditions,
)
from .core.kitchen_report import (
    chart_layout,
    im_cells,
    report_markdown,
    results_json,
    saycan_cells,
    score_episode,
    write_chart,
)
from .core.report import write_json

if TYPE_CHECKING:  # annotations only
    from monologue_bringup.up import Supervisor

    from .bench import SceneProbe

LOG = logging.getLogger("monologue_bench.kitchen")
SCENE_TIMEOUT_S = 60.0  # s for the restarted skills node's first ground truth and perception's copy


def state_json(state: KitchenState) -> dict[str, Any]:
    return {"robot": state.robot_location, "holding": state.holding, "objects": dict(state.object_locations),
            "open": sorted(state.open_containers)}


def _error_name(code: int) -> str:
    from .bench import _error_name as name

    return name(code)


class KitchenGraphRunner:
    """Runs kitchen episodes on the real graph; the skills node (the world) is restarted per episode."""

    def __init__(self, settings: KitchenSettings, suite: Suite, out: Path, timeout_s: float) -> None:
        from .bench import LineSink

        self.settings = settings
        self.suite = suite
        self.instructions = suite.by_key()
        self.out = out
        self.timeout_s = timeout_s
        self.scene_node = scene_node(KITCHEN_ROBOT)
        self.planner_params = {"transcript_dir": str(out / "transcripts"), "llm.cassette_mode": "record",
                               "llm.cassette_path": str(out / "llm_calls.jsonl")}
        self.sink = LineSink(out / "graph.log")
        self.graph: Supervisor | None = None
        self.scene_sup: Supervisor | None = None
        self.probe: SceneProbe | None = None
        self.start_s = 0.0  # s from bring-up until the planner answered

    def start(self) -> None:
        from monologue_bringup.up import Supervisor

        from .bench import SceneProbe

        t0 = time.monotonic()
        names = [s.name for s in graph_for(KITCHEN_ROBOT) if s.name != self.scene_node]
        self.graph = Supervisor(KITCHEN_ROBOT, self.settings.llm, nodes=names, sink=self.sink, log_level="warn",
                                node_params={"planner": self.planner_params} if "planner" in names else {})
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

    def _set_scene(self, key: KitchenKey, instr: Instruction) -> int:
        """Restart the skills node in the instruction's start state; return its kitchen.seed."""
        from monologue_bringup.up import Supervisor

        assert self.probe is not None
        if self.scene_sup is not None:
            self.scene_sup.stop()
        seed = kitchen_seed(self.settings.seed, key)
        params = {self.scene_node: skills_parameters(instr, key.condition, seed)}
        since = time.time()
        self.scene_sup = Supervisor(KITCHEN_ROBOT, self.settings.llm, nodes=[self.scene_node], node_params=params,
                                    sink=self.sink, log_level="warn")
        self.scene_sup.start()
        objects = self.probe.wait_scene(set(instr.start.object_locations), since, SCENE_TIMEOUT_S,
                                        names_of=_kitchen_objects)
        from .client import world_states

        start = state_from_scene(world_states(objects))
        if (start.robot_location, start.holding) != (instr.start.robot_location, instr.start.holding):
            raise InfrastructureError(f"{key}: the world started in {state_json(start)}, not in the instruction's "
                                      f"start state")
        return seed

    def run(self, key: KitchenKey) -> KitchenRecord:
        from monologue_interfaces.action import ExecuteInstruction
        from monologue_interfaces.msg import TranscriptEvent

        from .client import run_episode, world_states

        assert self.graph is not None
        dead = self.graph.dead()
        if dead:
            raise InfrastructureError(f"node(s) exited: {dead}")
        instr = self.instructions[key.instruction]
        variant = SUITE_VARIANTS[self.settings.suite][key.variant]
        t_setup = time.monotonic()
        seed = self._set_scene(key, instr)
        setup_s = time.monotonic() - t_setup
        started = time.time()
        t0 = time.monotonic()
        options = goal_options(variant, self.settings.max_steps, ExecuteInstruction.Goal.OPTION_ON,
                               ExecuteInstruction.Goal.OPTION_OFF)
        try:
            result, objects = run_episode(instr.text, self.timeout_s, print_event=lambda _e: None,
                                          ready_timeout_s=30.0, goal_options=options)
        except (TimeoutError, RuntimeError) as e:
            raise InfrastructureError(str(e)) from e
        wall_s = time.monotonic() - t0
        infra = {ExecuteInstruction.Result.SKILL_SERVER_UNAVAILABLE: "SKILL_SERVER_UNAVAILABLE",
                 ExecuteInstruction.Result.LLM_FAILED: "LLM_FAILED"}
        if result.error_code in infra:
            raise InfrastructureError(f"{infra[result.error_code]}: {result.reason}")
        if result.error_code == ExecuteInstruction.Result.INVALID_GOAL:
            from .bench import BenchmarkAborted

            raise BenchmarkAborted(f"the planner refused the {key.variant} goal: {result.reason}")
        if not objects:
            raise InfrastructureError("no ground truth after the episode")
        final = state_from_scene(world_states(objects))
        kinds = {getattr(TranscriptEvent, n): n[5:] for n in dir(TranscriptEvent) if n.startswith("KIND_")}
        skills = chosen_skills((kinds.get(e.kind, str(e.kind)), e.text, _data(e.data_json))
                               for e in result.transcript)
        episode = score_episode(self.settings.suite, instr, key.variant, key.condition, key.index, skills, final,
                                collapse_repeats=variant.collapse_repeats)
        return KitchenRecord(
            episode=episode, seed=seed, instruction_text=instr.text, steps=int(result.steps_taken),
            planner_success=bool(result.success), planner_error=_error_name(result.error_code),
            planner_reason=str(result.reason), transcript_path=str(result.transcript_path), wall_s=wall_s,
            setup_s=setup_s, final_state=state_json(final), started=started)


def _kitchen_objects(msg_objects: Sequence[Any]) -> set[str]:
    """Names of a kitchen scene's objects (no locations, robot or drawers)."""
    return {o.name for o in msg_objects if o.category != "location" and not o.category.startswith("drawer@")}


def _data(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def run_kitchen_episodes(plan: Sequence[KitchenKey], store: KitchenStore, runner: KitchenGraphRunner | None,
                         retries: int = 1) -> None:
    """Run every planned episode not yet in the store, printing progress; an InfrastructureError is
    retried `retries` times after runner.recover(), then propagates (a rerun continues)."""
    done = {r.key for r in store.load()}
    pending = [k for k in plan if k not in done]
    n_done = len(plan) - len(pending)
    successes = sum(r.episode.execution_success for r in store.load() if r.key in set(plan))
    times: list[float] = []
    print(f"[{n_done}/{len(plan)}] episodes already done", flush=True)
    for key in pending:
        assert runner is not None
        t0 = time.monotonic()
        for attempt in range(retries + 1):
            try:
                rec = runner.run(key)
                break
            except InfrastructureError as e:
                if attempt == retries:
                    raise
                LOG.warning("%s: %s; restarting the graph and retrying", key, e)
                runner.recover()
        store.append(rec)
        times.append(time.monotonic() - t0)
        n_done += 1
        successes += rec.episode.execution_success
        eta = (len(plan) - n_done) * sum(times) / len(times)
        ep = rec.episode
        print(f"[{n_done}/{len(plan)}] success so far {successes}/{n_done}  ETA {eta / 60:.0f} min  | {key}: "
              f"plan {int(ep.plan_success)}, execute {int(ep.execution_success)}, {rec.steps} steps, "
              f"{rec.setup_s + rec.wall_s:.0f} s; skills: {' / '.join(ep.skills) or '-'}", flush=True)


def main(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite saycan | im_kitchen` (arguments parsed by bench.parse_args)."""
    from .bench import BenchmarkAborted, _parse_list

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    name = ns.suite
    try:
        suite = load_suite(suite_path(default_config_dir(), name))
        variants_known = list(SUITE_VARIANTS[name])
        variants = _parse_list(ns.variants, variants_known, {"all": variants_known}, "variant")
        families = None if ns.families == "all" else [f.strip() for f in ns.families.split(",") if f.strip()]
        instructions = select_instructions(suite, families, ns.instructions)
        conds_known = list(suite_conditions(name))
        conditions = _parse_list(ns.conditions, conds_known, {"all": conds_known}, "condition")
        settings = KitchenSettings(suite=name, llm=ns.llm, seed=ns.seed, max_steps=ns.max_steps)
        settings.validate()
        plan = plan_kitchen(instructions, variants, conditions, ns.episodes)
        out = (ns.out or Path("runs") / "bench" / f"{name}-{ns.llm}-seed{ns.seed}").resolve()
        store = KitchenStore(out, LOG)
        resumed = store.open(settings)
    except (ValueError, KeyError, SuiteError, SettingsMismatch) as e:
        print(f"monologue-bench: {e}", file=sys.stderr)
        return 2
    print(f"== {suite.title}: {len(instructions)} instruction(s) x {len(variants)} variant(s) x "
          f"{len(conditions)} condition(s) x {ns.episodes} episode(s) = {len(plan)} episodes; llm {ns.llm}, "
          f"seed {ns.seed}, max {ns.max_steps} steps")
    print(f"== output: {out}{' (resuming)' if resumed else ''}; node logs: {out / 'graph.log'}", flush=True)

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    pending = set(plan) - {r.key for r in store.load()}
    runner: KitchenGraphRunner | None = None
    rc = 0
    try:
        if pending:
            import rclpy
            from rclpy.signals import SignalHandlerOptions

            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
            runner = KitchenGraphRunner(settings, suite, out, ns.timeout)
            print("== starting the graph ...", flush=True)
            runner.start()
            print(f"== graph up in {runner.start_s:.1f} s (LLM loaded)", flush=True)
        run_kitchen_episodes(plan, store, runner)
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
    wanted = set(plan)
    records = [r for r in store.load() if r.key in wanted]
    if not records:
        return rc or 1
    write_kitchen_report(out, suite, records, variants, settings)
    print()
    print((out / "table.md").read_text(encoding="utf-8"))
    print(f"== wrote {out / 'table.md'}, {out / 'results.json'}, {out / 'chart.png'}")
    return rc


def settings_line(settings: KitchenSettings, records: Sequence[KitchenRecord]) -> str:
    n = len({r.key.instruction for r in records})
    return (f"Robot sim_kitchen, LLM {settings.llm}, seed {settings.seed}, max {settings.max_steps} steps; "
            f"{len(records)} episode(s) over {n} instruction(s).")


def write_kitchen_report(out: Path, suite: Suite, records: Sequence[KitchenRecord], variants: Sequence[str],
                         settings: KitchenSettings) -> None:
    """table.md, results.json (with the settings and the bench's per-episode records) and chart.png."""
    episodes = [r.episode for r in records]
    line = settings_line(settings, records)
    (out / "table.md").write_text(report_markdown(suite, episodes, variants, line), encoding="utf-8")
    data = results_json(suite, episodes, variants)
    data["settings"] = {k: getattr(settings, k) for k in ("suite", "llm", "seed", "max_steps")}
    data["records"] = [r.to_json() for r in records]
    write_json(out / "results.json", data)
    cells = saycan_cells(suite, episodes, variants) if suite.name == "saycan" else im_cells(suite, episodes, variants)
    rows, cols = chart_layout(suite, variants)
    labels = VARIANT_LABELS[suite.name]
    write_chart(out / "chart.png", cells, rows, cols,
                f"{suite.title} — {', '.join(labels.get(v, v) for v in variants)}; {line}")
