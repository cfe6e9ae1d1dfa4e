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
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from monologue_bringup.graph import default_config_dir, graph_for, scene_node
from monologue_domain.expert.household import WORLD, goal_json
from monologue_domain.kitchen.scene import state_from_scene

from ..client import world_states
from ..core.benchmark import param_overrides, param_text
from ..core.cape_bench import (
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
from ..core.cape_report import report_markdown, results_json, write_chart
from ..core.kitchen_bench import KitchenKey, kitchen_seed
from ..core.store import InfrastructureError, SettingsMismatch
from ..harness import (
    PLANNER_TIMEOUT_S,
    Suite,
    SuiteGraph,
    error_name,
    on_off,
    out_dir,
    parse_list,
    print_output,
    run_planned,
    settings_line,
    setup_logging,
    things,
    transcript_events,
    usage_error,
    write_results,
)

if TYPE_CHECKING:  # annotations only
    from monologue_bringup.up import Supervisor

LOG = logging.getLogger("monologue_bench.cape")
SCENE_TIMEOUT_S = 60.0  # s for the restarted skills node's first ground truth and perception's copy
# s added to --timeout for a variant's first episode: a fresh CAPE planner first embeds the scene's ~420
# admissible actions (3 min on a loaded 2-core machine, up to 15 under heavy load)
COLD_START_S = 1200.0


class CapeGraphRunner(SuiteGraph):
    """Runs CAPE episodes on the real graph: perception and the success detector stay up, the planner
    restarts per variant, the skills node per episode."""

    def __init__(self, settings: CapeSettings, suite: CapeSuite, out: Path, timeout_s: float) -> None:
        super().__init__(CAPE_ROBOT, settings.llm, out, timeout_s)
        self.settings = settings
        self.suite = suite
        self.tasks = suite.by_key()
        self.scene_node = scene_node(CAPE_ROBOT)
        self.planner: Supervisor | None = None
        self.planner_variant = ""
        self.overrides = planner_overrides(settings.params)

    def start(self) -> None:
        names = [s.name for s in graph_for(CAPE_ROBOT) if s.name not in (self.scene_node, "planner")]
        self.start_graph(names, {}, wait_planner=False)

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
        params.update(self.overrides)
        if self.expert_dir is not None and CAPE_VARIANTS[variant].strategy == "cape":
            # the expert stand-in grounds with its own embeddings (hashed bag of words: exact texts match)
            params["cape.embedder"] = "llm"
        t0 = time.monotonic()
        self.planner = self.supervisor(["planner"], {"planner": params})
        self.planner.start()
        self.planner_variant = variant
        self.probe.wait_planner(PLANNER_TIMEOUT_S)
        print(f"== planner up for {variant} in {time.monotonic() - t0:.1f} s", flush=True)
        return True

    def stop_more(self) -> None:
        if self.planner is not None:
            self.planner.stop()
        self.planner = None
        self.planner_variant = ""

    def _set_scene(self, key: CapeKey) -> int:
        task = self.tasks[key.task]
        seed = kitchen_seed(self.settings.seed, KitchenKey(key.task, "cape", "none", key.index))
        params = {self.scene_node: skills_parameters(task, CAPE_VARIANTS[key.variant], seed, self.suite.noisy_flip)}
        start = task.start()
        objects = self.restart_scene(params, set(start.object_locations), SCENE_TIMEOUT_S, names_of=things)
        seen = state_from_scene(world_states(objects))
        if (seen.object_locations, seen.states.get("robot")) != (start.object_locations, start.states.get("robot")):
            raise InfrastructureError(f"{key}: the world started in {state_json(seen)}, not in the task's start "
                                      f"state {state_json(start)}")
        return seed

    def run(self, key: CapeKey) -> CapeRecord:
        self.check_alive()
        task = self.tasks[key.task]
        t_setup = time.monotonic()
        cold = self._ensure_planner(key.variant)
        seed = self._set_scene(key)
        setup_s = time.monotonic() - t_setup
        options = goal_options(CAPE_VARIANTS[key.variant], self.suite.prompt_profile, self.settings.max_steps,
                               *on_off())
        self.record_expert_task(task.text, WORLD, goal_json(task.goal))  # llm:=expert only
        ep = self.play(task.text, self.timeout_s + (COLD_START_S if cold else 0.0), options, key.variant)
        result = ep.result
        final = state_from_scene(world_states(ep.objects))
        attempts = attempts_from_events(transcript_events(result))
        episode = score_episode(task, key.variant, key.index, attempts, final)
        return CapeRecord(
            episode=episode, instruction_text=task.text,
            attempts=[{**a.__dict__, "args": list(a.args)} for a in attempts], final_state=state_json(final),
            steps=int(result.steps_taken), planner_success=bool(result.success),
            planner_error=error_name(result.error_code), planner_reason=str(result.reason),
            transcript_path=str(result.transcript_path), seed=seed, wall_s=ep.wall_s, setup_s=setup_s,
            started=ep.started)


def planner_overrides(params: str) -> dict[str, str]:
    """The planner's --param overrides (e.g. planner:llm.expert.error_rate=0.2); ValueError for another
    node (the skills node restarts per episode with the task's scene) or the variant's own parameters."""
    over = param_overrides(params)
    other = sorted(set(over) - {"planner"})
    if other:
        raise ValueError(f"--param: the cape suite takes planner parameters only, not {other}")
    mine = dict(over.get("planner", {}))
    clash = sorted(set(mine) & {"strategy", "cape.method", "cape.demonstrations", "transcript_dir"})
    if clash:
        raise ValueError(f"--param: the cape suite sets {clash} per variant")
    return mine


def describe(rec: CapeRecord) -> str:
    """The progress line's end for one finished episode."""
    ep = rec.episode
    return (f"exec {int(ep.executable)}, goal {int(ep.goal)}, {ep.plan_steps} steps, {ep.corrections} corrections, "
            f"{len(ep.errors)} errors, LCS {ep.lcs:.0f}, {rec.setup_s + rec.wall_s:.0f} s; "
            f"plan: {' / '.join(ep.plan) or '-'}")


def write_cape_report(out: Path, suite: CapeSuite, records: Sequence[CapeRecord], variants: Sequence[str],
                      settings: CapeSettings) -> None:
    """table.md, results.json (settings, per-episode records) and chart.png, scored from the records."""
    tasks = suite.by_key()
    records = [rescore(r, tasks[r.key.task]) if r.key.task in tasks else r for r in records]
    episodes = [r.episode for r in records]
    line = settings_line(CAPE_ROBOT, settings, len(records), len({r.key.task for r in records}), "task")
    write_results(out, report_markdown(episodes, variants, line), results_json(episodes, variants), settings,
                  records)
    write_chart(out / "chart.png", episodes, variants, f"{suite.title}; {line}")


def run(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite cape` (arguments parsed by bench.parse_args)."""
    setup_logging()
    try:
        suite = load_cape_suite(default_config_dir())
        known = list(CAPE_VARIANTS)
        variants = parse_list(ns.variants, known, {"all": known}, "variant")
        sets = list(TASK_SETS) if ns.families == "all" else [f.strip() for f in ns.families.split(",") if f.strip()]
        tasks = select_tasks(suite, sets, ns.instructions)
        from monologue_bringup.up import parse_node_params

        settings = CapeSettings(suite="cape", llm=ns.llm, seed=ns.seed, max_steps=ns.max_steps,
                                params=param_text(parse_node_params(ns.param)))
        planner_overrides(settings.params)
        settings.validate()
        plan = plan_cape(tasks, variants, ns.episodes)
        out = out_dir(ns, f"cape-{ns.llm}-seed{ns.seed}")
        store = CapeStore(out, LOG)
        resumed = store.open(settings)
    except (ValueError, KeyError, SettingsMismatch) as e:
        return usage_error(e)
    print(f"== {suite.title}: {len(tasks)} task(s) x {len(variants)} variant(s) x {ns.episodes} episode(s) = "
          f"{len(plan)} episodes; llm {ns.llm}, seed {ns.seed}, max {ns.max_steps} steps")
    print_output(out, resumed)
    return run_planned(plan, store, lambda: CapeGraphRunner(settings, suite, out, ns.timeout),
                       "the planner starts per variant", describe,
                       lambda records: write_cape_report(out, suite, records, variants, settings), LOG)


SUITE = Suite("cape", "CAPE Tables I-II on robot sim_household", run, variants=tuple(CAPE_VARIANTS),
              arguments="--families all|paper|generated, --instructions, --variants, --episodes, --param planner:...")
