"""`monologue-bench --suite cape`: CAPE Tables I-II on the household (robot sim_household) through the
real node graph.

The planner is restarted for every variant (its `strategy` and `cape.method` are node parameters), the
skills node (the world) for every episode with the task's scene and start state (`household.*`, noisy
affordances for SayCan (Noisy)); perception and the success detector stay up. The attempts come from the
transcript, the final state from `sim/ground_truth`; both are kept in `<out>/episodes.jsonl` (a rerun
with the same --out continues) and scored by core/cape_bench.py; then `results.json`, `table.md` and
`chart.png` (core/cape_report.py).
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

from .core.benchmark import InfrastructureError, SettingsMismatch
from .core.cape_bench import (
    CAPE_ROBOT,
    CAPE_VARIANTS,
    TASK_SETS,
    CapeKey,
    CapeRecord,
    CapeSettings,
    CapeStore,
    CapeSuite,
    attempts_from_events,
    goal_options,
    load_cape_suite,
    plan_cape,
    planner_parameters,
    rescore,
    score_episode,
    select_tasks,
    skills_parameters,
    state_json,
)
from .core.cape_report import report_markdown, results_json, write_chart
from .core.kitchen_bench import kitchen_seed
from .core.report import write_json

if TYPE_CHECKING:  # annotations only
    from monologue_bringup.up import Supervisor

    from .bench import SceneProbe

LOG = logging.getLogger("monologue_bench.cape")
SCENE_TIMEOUT_S = 60.0  # s for the restarted skills node's first ground truth and perception's copy
PLANNER_TIMEOUT_S = 240.0  # s for a (re)started planner to load its LLM and answer
# s added to --timeout for a variant's first episode: a fresh CAPE planner first embeds the scene's ~420
# admissible actions (3 min on a loaded 2-core machine, up to 15 under heavy load)
COLD_START_S = 1200.0


def _data(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _error_name(code: int) -> str:
    from .bench import _error_name as name

    return name(code)


def _household_things(msg_objects: Sequence[Any]) -> set[str]:
    return {o.name for o in msg_objects if o.category != "location"}


class CapeGraphRunner:
    """Runs CAPE episodes on the real graph: perception and the success detector stay up, the planner
    restarts per variant, the skills node per episode."""

    def __init__(self, settings: CapeSettings, suite: CapeSuite, out: Path, timeout_s: float) -> None:
        from .bench import LineSink

        self.settings = settings
        self.suite = suite
        self.tasks = suite.by_key()
        self.out = out
        self.timeout_s = timeout_s
        self.scene_node = scene_node(CAPE_ROBOT)
        self.sink = LineSink(out / "graph.log")
        self.graph: Supervisor | None = None
        self.planner: Supervisor | None = None
        self.planner_variant = ""
        self.scene_sup: Supervisor | None = None
        self.probe: SceneProbe | None = None
        self.start_s = 0.0

    def _supervisor(self, nodes: list[str], params: dict[str, dict[str, str]]) -> Supervisor:
        from monologue_bringup.up import Supervisor

        return Supervisor(CAPE_ROBOT, self.settings.llm, nodes=nodes, sink=self.sink, log_level="warn",
                          node_params=params)

    def start(self) -> None:
        from .bench import SceneProbe

        t0 = time.monotonic()
        names = [s.name for s in graph_for(CAPE_ROBOT) if s.name not in (self.scene_node, "planner")]
        self.graph = self._supervisor(names, {})
        self.graph.start()
        self.probe = SceneProbe()
        self.start_s = time.monotonic() - t0

    def _ensure_planner(self, variant: str) -> bool:
        """Start the variant's planner unless it runs; True when it was (re)started."""
        if self.planner is not None and self.planner_variant == variant and not self.planner.dead():
            return False
        assert self.probe is not None
        if self.planner is not None:
            self.planner.stop()
            self.planner = None
        # no LLM cassette: CAPE embeds every admissible action (~400 vectors per scene), which would
        # make it hundreds of MB; the transcripts keep every step, sample, score and error
        params = {"transcript_dir": str(self.out / "transcripts"),
                  **planner_parameters(CAPE_VARIANTS[variant], self.suite.demonstrations)}
        t0 = time.monotonic()
        self.planner = self._supervisor(["planner"], {"planner": params})
        self.planner.start()
        self.planner_variant = variant
        self.probe.wait_planner(PLANNER_TIMEOUT_S)
        print(f"== planner up for {variant} in {time.monotonic() - t0:.1f} s", flush=True)
        return True

    def stop(self) -> None:
        for sup in (self.scene_sup, self.planner):
            if sup is not None:
                sup.stop()
        self.scene_sup = self.planner = None
        self.planner_variant = ""
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

    def _set_scene(self, key: CapeKey) -> int:
        assert self.probe is not None
        task = self.tasks[key.task]
        if self.scene_sup is not None:
            self.scene_sup.stop()
        from .core.kitchen_bench import KitchenKey

        seed = kitchen_seed(self.settings.seed, KitchenKey(key.task, "cape", "none", key.index))
        params = {self.scene_node: skills_parameters(task, CAPE_VARIANTS[key.variant], seed, self.suite.noisy_flip)}
        since = time.time()
        self.scene_sup = self._supervisor([self.scene_node], params)
        self.scene_sup.start()
        start = task.start()
        objects = self.probe.wait_scene(set(start.object_locations), since, SCENE_TIMEOUT_S,
                                        names_of=_household_things)
        from .client import world_states

        seen = state_from_scene(world_states(objects))
        if (seen.object_locations, seen.states.get("robot")) != (start.object_locations, start.states.get("robot")):
            raise InfrastructureError(f"{key}: the world started in {state_json(seen)}, not in the task's start "
                                      f"state {state_json(start)}")
        return seed

    def run(self, key: CapeKey) -> CapeRecord:
        from monologue_interfaces.action import ExecuteInstruction
        from monologue_interfaces.msg import TranscriptEvent

        from .client import run_episode, world_states

        assert self.graph is not None
        dead = self.graph.dead()
        if dead:
            raise InfrastructureError(f"node(s) exited: {dead}")
        task = self.tasks[key.task]
        variant = CAPE_VARIANTS[key.variant]
        t_setup = time.monotonic()
        cold = self._ensure_planner(key.variant)
        seed = self._set_scene(key)
        setup_s = time.monotonic() - t_setup
        started = time.time()
        t0 = time.monotonic()
        options = goal_options(variant, self.suite.prompt_profile, self.settings.max_steps,
                               ExecuteInstruction.Goal.OPTION_ON, ExecuteInstruction.Goal.OPTION_OFF)
        try:
            result, objects = run_episode(task.text, self.timeout_s + (COLD_START_S if cold else 0.0),
                                          print_event=lambda _e: None,
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
        attempts = attempts_from_events((kinds.get(e.kind, str(e.kind)), e.text, _data(e.data_json))
                                        for e in result.transcript)
        episode = score_episode(task, key.variant, key.index, attempts, final)
        return CapeRecord(
            episode=episode, instruction_text=task.text,
            attempts=[{**a.__dict__, "args": list(a.args)} for a in attempts], final_state=state_json(final),
            steps=int(result.steps_taken), planner_success=bool(result.success),
            planner_error=_error_name(result.error_code), planner_reason=str(result.reason),
            transcript_path=str(result.transcript_path), seed=seed, wall_s=wall_s, setup_s=setup_s, started=started)


def run_cape_episodes(plan: Sequence[CapeKey], store: CapeStore, runner: CapeGraphRunner | None,
                      retries: int = 1) -> None:
    """Run every planned episode not yet in the store, printing progress; an InfrastructureError is
    retried `retries` times after runner.recover(), then propagates (a rerun continues)."""
    done = {r.key for r in store.load()}
    pending = [k for k in plan if k not in done]
    n_done = len(plan) - len(pending)
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
        eta = (len(plan) - n_done) * sum(times) / len(times)
        ep = rec.episode
        print(f"[{n_done}/{len(plan)}] ETA {eta / 60:.0f} min | {key}: exec {int(ep.executable)}, goal {int(ep.goal)}, "
              f"{ep.plan_steps} steps, {ep.corrections} corrections, {len(ep.errors)} errors, LCS {ep.lcs:.0f}, "
              f"{rec.setup_s + rec.wall_s:.0f} s; plan: {' / '.join(ep.plan) or '-'}", flush=True)


def settings_line(settings: CapeSettings, records: Sequence[CapeRecord]) -> str:
    n = len({r.key.task for r in records})
    return (f"Robot {CAPE_ROBOT}, LLM {settings.llm}, seed {settings.seed}, max {settings.max_steps} steps; "
            f"{len(records)} episode(s) over {n} task(s).")


def write_cape_report(out: Path, suite: CapeSuite, records: Sequence[CapeRecord], variants: Sequence[str],
                      settings: CapeSettings) -> None:
    """table.md, results.json (settings, per-episode records) and chart.png, scored from the records."""
    tasks = suite.by_key()
    records = [rescore(r, tasks[r.key.task]) if r.key.task in tasks else r for r in records]
    episodes = [r.episode for r in records]
    line = settings_line(settings, records)
    (out / "table.md").write_text(report_markdown(episodes, variants, line), encoding="utf-8")
    data = results_json(episodes, variants)
    data["settings"] = {k: getattr(settings, k) for k in ("suite", "llm", "seed", "max_steps")}
    data["records"] = [r.to_json() for r in records]
    write_json(out / "results.json", data)
    write_chart(out / "chart.png", episodes, variants, f"{suite.title}; {line}")


def main(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite cape` (arguments parsed by bench.parse_args)."""
    from .bench import BenchmarkAborted, _parse_list

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        suite = load_cape_suite(default_config_dir())
        known = list(CAPE_VARIANTS)
        variants = _parse_list(ns.variants, known, {"all": known}, "variant")
        sets = list(TASK_SETS) if ns.families == "all" else [f.strip() for f in ns.families.split(",") if f.strip()]
        tasks = select_tasks(suite, sets, ns.instructions)
        settings = CapeSettings(suite="cape", llm=ns.llm, seed=ns.seed, max_steps=ns.max_steps)
        settings.validate()
        plan = plan_cape(tasks, variants, ns.episodes)
        out = (ns.out or Path("runs") / "bench" / f"cape-{ns.llm}-seed{ns.seed}").resolve()
        store = CapeStore(out, LOG)
        resumed = store.open(settings)
    except (ValueError, KeyError, SettingsMismatch) as e:
        print(f"monologue-bench: {e}", file=sys.stderr)
        return 2
    print(f"== {suite.title}: {len(tasks)} task(s) x {len(variants)} variant(s) x {ns.episodes} episode(s) = "
          f"{len(plan)} episodes; llm {ns.llm}, seed {ns.seed}, max {ns.max_steps} steps")
    print(f"== output: {out}{' (resuming)' if resumed else ''}; node logs: {out / 'graph.log'}", flush=True)

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    pending = set(plan) - {r.key for r in store.load()}
    runner: CapeGraphRunner | None = None
    rc = 0
    try:
        if pending:
            import rclpy
            from rclpy.signals import SignalHandlerOptions

            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
            runner = CapeGraphRunner(settings, suite, out, ns.timeout)
            print("== starting the graph ...", flush=True)
            runner.start()
            print(f"== graph up in {runner.start_s:.1f} s (the planner starts per variant)", flush=True)
        run_cape_episodes(plan, store, runner)
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
    write_cape_report(out, suite, records, variants, settings)
    print()
    print((out / "table.md").read_text(encoding="utf-8"))
    print(f"== wrote {out / 'table.md'}, {out / 'results.json'}, {out / 'chart.png'}")
    return rc
