"""`monologue-bench --suite saycan | im_kitchen` (saycan.py, im_kitchen.py): SC Table 2 / IM Table 3
through the real node graph.

The robot is `sim_kitchen` (the symbolic kitchen inside the skills node). For every episode the skills
node is restarted with the instruction's start state (and, under "disturbances", IM §4.3's disturbance
rates: core/kitchen_bench.DISTURBANCE_RATES); the planner, perception and success detector stay up. The
skills the planner chose come from the transcript, the final world from `sim/ground_truth`; both are
scored with core/kitchen_report.score_episode and appended to `<out>/episodes.jsonl` (a rerun with the
same --out continues), then `results.json`, `table.md` and `chart.png` are written. With `--llm expert` each
instruction's goal (predicate and example plans: monologue_domain.expert.kitchen.goal_of) is written to the
stand-in's side channel before its episode.
"""
from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monologue_bringup.graph import default_config_dir, graph_for, scene_node
from monologue_domain.expert.kitchen import WORLD as KITCHEN_WORLD
from monologue_domain.expert.kitchen import goal_of
from monologue_domain.kitchen.scene import state_from_scene
from monologue_domain.kitchen.state import KitchenState
from monologue_domain.kitchen.suites import Instruction, Suite, SuiteError, load_suite, suite_path

from ..client import world_states
from ..core.benchmark import param_text
from ..core.kitchen_bench import (
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
    planner_params,
    select_instructions,
    skills_parameters,
    suite_conditions,
)
from ..core.kitchen_report import (
    chart_layout,
    im_cells,
    report_markdown,
    results_json,
    saycan_cells,
    score_episode,
    write_chart,
)
from ..core.store import InfrastructureError, SettingsMismatch
from ..harness import Suite as BenchSuite
from ..harness import (
    SuiteGraph,
    error_name,
    on_off,
    out_dir,
    parse_list,
    print_output,
    run_planned,
    settings_line,
    setup_logging,
    transcript_events,
    usage_error,
    write_results,
)

LOG = logging.getLogger("monologue_bench.kitchen")
SCENE_TIMEOUT_S = 60.0  # s for the restarted skills node's first ground truth and perception's copy


def state_json(state: KitchenState) -> dict[str, Any]:
    return {"robot": state.robot_location, "holding": state.holding, "objects": dict(state.object_locations),
            "open": sorted(state.open_containers)}


class KitchenGraphRunner(SuiteGraph):
    """Runs kitchen episodes on the real graph; the skills node (the world) is restarted per episode."""

    def __init__(self, settings: KitchenSettings, suite: Suite, out: Path, timeout_s: float) -> None:
        super().__init__(KITCHEN_ROBOT, settings.llm, out, timeout_s)
        self.settings = settings
        self.suite = suite
        self.instructions = suite.by_key()
        self.scene_node = scene_node(KITCHEN_ROBOT)
        self.planner_params = {"transcript_dir": str(out / "transcripts"), "llm.cassette_mode": "record",
                               "llm.cassette_path": str(out / "llm_calls.jsonl"), **planner_params(settings.params)}

    def start(self) -> None:
        names = [s.name for s in graph_for(KITCHEN_ROBOT) if s.name != self.scene_node]
        self.start_graph(names, {"planner": self.planner_params} if "planner" in names else {}, wait_planner=True)

    def _set_scene(self, key: KitchenKey, instr: Instruction) -> int:
        """Restart the skills node in the instruction's start state; return its kitchen.seed."""
        seed = kitchen_seed(self.settings.seed, key)
        objects = self.restart_scene({self.scene_node: skills_parameters(instr, key.condition, seed)},
                                     set(instr.start.object_locations), SCENE_TIMEOUT_S, names_of=_kitchen_objects)
        start = state_from_scene(world_states(objects))
        if (start.robot_location, start.holding) != (instr.start.robot_location, instr.start.holding):
            raise InfrastructureError(f"{key}: the world started in {state_json(start)}, not in the instruction's "
                                      f"start state")
        return seed

    def run(self, key: KitchenKey) -> KitchenRecord:
        self.check_alive()
        instr = self.instructions[key.instruction]
        variant = SUITE_VARIANTS[self.settings.suite][key.variant]
        t_setup = time.monotonic()
        seed = self._set_scene(key, instr)
        setup_s = time.monotonic() - t_setup
        self.record_expert_task(instr.text, KITCHEN_WORLD, goal_of(instr))  # llm:=expert only: its goal
        ep = self.play(instr.text, self.timeout_s, goal_options(variant, self.settings.max_steps, *on_off()),
                       key.variant)
        result = ep.result
        final = state_from_scene(world_states(ep.objects))
        episode = score_episode(self.settings.suite, instr, key.variant, key.condition, key.index,
                                chosen_skills(transcript_events(result)), final,
                                collapse_repeats=variant.collapse_repeats)
        return KitchenRecord(
            episode=episode, seed=seed, instruction_text=instr.text, steps=int(result.steps_taken),
            planner_success=bool(result.success), planner_error=error_name(result.error_code),
            planner_reason=str(result.reason), transcript_path=str(result.transcript_path), wall_s=ep.wall_s,
            setup_s=setup_s, final_state=state_json(final), started=ep.started)


def _kitchen_objects(msg_objects: Sequence[Any]) -> set[str]:
    """Names of a kitchen scene's objects (no locations, robot or drawers)."""
    return {o.name for o in msg_objects if o.category != "location" and not o.category.startswith("drawer@")}


def describe(rec: KitchenRecord) -> str:
    """The progress line's end for one finished episode."""
    ep = rec.episode
    return (f"plan {int(ep.plan_success)}, execute {int(ep.execution_success)}, {rec.steps} steps, "
            f"{rec.setup_s + rec.wall_s:.0f} s; skills: {' / '.join(ep.skills) or '-'}")


def run(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite saycan | im_kitchen` (arguments parsed by bench.parse_args)."""
    setup_logging()
    name = ns.suite
    try:
        suite = load_suite(suite_path(default_config_dir(), name))
        variants_known = list(SUITE_VARIANTS[name])
        variants = parse_list(ns.variants, variants_known, {"all": variants_known}, "variant")
        families = None if ns.families == "all" else [f.strip() for f in ns.families.split(",") if f.strip()]
        instructions = select_instructions(suite, families, ns.instructions)
        conds_known = list(suite_conditions(name))
        conditions = parse_list(ns.conditions, conds_known, {"all": conds_known}, "condition")
        from monologue_bringup.up import parse_node_params

        settings = KitchenSettings(suite=name, llm=ns.llm, seed=ns.seed, max_steps=ns.max_steps,
                                   params=param_text(parse_node_params(ns.param)))
        settings.validate()
        plan = plan_kitchen(instructions, variants, conditions, ns.episodes)
        out = out_dir(ns, f"{name}-{ns.llm}-seed{ns.seed}")
        store = KitchenStore(out, LOG)
        resumed = store.open(settings)
    except (ValueError, KeyError, SuiteError, SettingsMismatch) as e:
        return usage_error(e)
    print(f"== {suite.title}: {len(instructions)} instruction(s) x {len(variants)} variant(s) x "
          f"{len(conditions)} condition(s) x {ns.episodes} episode(s) = {len(plan)} episodes; llm {ns.llm}, "
          f"seed {ns.seed}, max {ns.max_steps} steps")
    print_output(out, resumed)
    return run_planned(plan, store, lambda: KitchenGraphRunner(settings, suite, out, ns.timeout), "LLM loaded",
                       describe, lambda records: write_kitchen_report(out, suite, records, variants, settings), LOG,
                       success=lambda r: r.episode.execution_success)


def write_kitchen_report(out: Path, suite: Suite, records: Sequence[KitchenRecord], variants: Sequence[str],
                         settings: KitchenSettings) -> None:
    """table.md, results.json (with the settings and the bench's per-episode records) and chart.png."""
    episodes = [r.episode for r in records]
    line = settings_line(KITCHEN_ROBOT, settings, len(records), len({r.key.instruction for r in records}),
                         "instruction")
    if settings.params:
        line += f" Parameters: {settings.params}."
    write_results(out, report_markdown(suite, episodes, variants, line), results_json(suite, episodes, variants),
                  settings, records)
    cells = saycan_cells(suite, episodes, variants) if suite.name == "saycan" else im_cells(suite, episodes, variants)
    rows, cols = chart_layout(suite, variants)
    labels = VARIANT_LABELS[suite.name]
    write_chart(out / "chart.png", cells, rows, cols,
                f"{suite.title} — {', '.join(labels.get(v, v) for v in variants)}; {line}")


def kitchen_suite(name: str, description: str) -> BenchSuite:
    """The Suite of one kitchen suite (saycan, im_kitchen)."""
    return BenchSuite(name, description, run, variants=tuple(SUITE_VARIANTS[name]),
                      arguments="--families, --instructions, --conditions, --variants, --episodes, --param planner:...",
                      paired=True)
