"""How the planner's goal grounding (`planner.scoring.goal_grounding`) reads a list of wordings.

    . scripts/env.sh && nice python -m monologue_eval.benchmarks.goal_grounding [--wordings dev|heldout|original]
                                                                  [--scenes 3] [--threads 1]

For every text of the list (`dev`: config/benchmarks/wordings_dev.yaml, the list to choose a method on;
`heldout`: config/benchmarks/wordings.yaml, the benchmark's paraphrase column; `original`: IM Table 1's
wordings) on the first `--scenes` scenes of its task family (monologue_domain.tasks.sample_task), it reads
the goal as the planner would: the parser first, and when it reads nothing, core/goal_check.ground_goal
over goal_candidates() of the scene's pick-and-place pairs with the im_sim_object_success profile's goal
prompt and the embedded model, under each grounding rule: `llm`, `llm_named`, `llm_named_calibrated`.
A goal is right when it has the facts (or the tower) the family's reward asks for; a relational family
(different corners, matching or mismatched bowls) is right when read as no goal. Prints numbers per family
and rule; asserts nothing.
"""
from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from functools import partial

import yaml

from monologue_bringup.graph import default_config_dir
from monologue_domain.tabletop import LOCATIONS
from monologue_domain.tasks import FAMILIES, TaskInstance, reword, sample_task
from monologue_llm.llama_cpp_backend import LlamaCppBackend
from monologue_llm.model_files import embedded_model_path
from planner_node.core.goal_check import NO_GOAL, Goal, goal_candidates, ground_goal, parse_goal
from planner_node.core.goal_examples import GOAL_EXAMPLES_K, goal_head, retrieve
from planner_node.core.prompts import PromptProfile, load_profile

CONFIG = default_config_dir()
LISTS = {"dev": CONFIG / "benchmarks" / "wordings_dev.yaml", "heldout": CONFIG / "benchmarks" / "wordings.yaml"}
RULES = ("llm", "llm_named", "llm_named_calibrated", "llm_named_retrieved")


def categories(task: TaskInstance) -> dict[str, str]:
    return {**{b: "block" for b in task.scene.blocks}, **{b: "bowl" for b in task.scene.bowls},
            **{n: "location" for n in LOCATIONS}}


def wanted(task: TaskInstance, cands: list[str], profile: PromptProfile, cats: Mapping[str, str]) -> str:
    """The goal text (one of `cands`) the family's reward asks for; NO_GOAL for a relational family."""
    s = task.slots
    if task.family == "pick_place":
        return profile.skill_text("pick_place", (s["block"], s["target"]), cats)
    if task.family == "stack":
        return "Stack every block."
    if task.family == "stack_on_location":
        return f"Stack every block on the {s['location']}."
    if task.family in ("blocks_to_location", "blocks_to_bowl"):
        target = s.get("location") or s["bowl"]
        return next(c for c in cands if c.startswith("Pick every block") and c.endswith(f"the {target}."))
    return NO_GOAL


def place_text(profile: PromptProfile, cats: Mapping[str, str], obj: str, target: str) -> str:
    """The profile's pick-and-place step text for (obj, target)."""
    return profile.skill_text("pick_place", (obj, target), cats)


def same(a: Goal, b: Goal) -> bool:
    return set(a.facts) == set(b.facts) and set(a.tower) == set(b.tower) and a.base == b.base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordings", choices=("dev", "heldout", "original"), default="dev")
    ap.add_argument("--scenes", type=int, default=3, help="scenes per family and wording (default 3)")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default 1)")
    ns = ap.parse_args()
    profile = load_profile(CONFIG / "prompts", "im_sim_object_success")
    texts: dict[str, list[str | None]] = (
        {f: [None] for f in FAMILIES} if ns.wordings == "original"
        else yaml.safe_load(LISTS[ns.wordings].read_text(encoding="utf-8")))
    llm = LlamaCppBackend(embedded_model_path(), n_ctx=2048, n_threads=ns.threads, logger=logging.getLogger("llm"))
    total = {r: [0, 0] for r in RULES}
    for family, wordings in texts.items():
        right = {r: 0 for r in RULES}
        n = 0
        for wording in wordings:
            for seed in range(ns.scenes):
                task = sample_task(family, seed)
                if wording is not None:
                    task = reword(task, wording)
                cats = categories(task)
                pairs = [(b, t) for b in task.scene.blocks for t in cats if t != b]
                cands = goal_candidates(pairs, cats, partial(place_text, profile, cats))
                want = wanted(task, cands, profile, cats)
                want_goal = Goal() if want == NO_GOAL else parse_goal(want, cats)
                parsed = parse_goal(task.instruction, cats)
                n += 1
                line = []
                for rule in RULES:
                    if parsed:
                        goal, text = parsed, "(parser)"
                    else:
                        head = profile.goal_prompt
                        if rule == "llm_named_retrieved" and profile.goal_examples is not None:
                            head = goal_head(profile.goal_examples,
                                             retrieve(profile.goal_examples, task.instruction, cats, GOAL_EXAMPLES_K))
                        goal, text, _ = ground_goal(llm, head, task.instruction, cands, cats,
                                                    named=rule.startswith("llm_named"),
                                                    calibrated=rule == "llm_named_calibrated")
                    ok = same(goal, want_goal)
                    right[rule] += ok
                    line.append(f"{'+' if ok else '-'}{text[:34]}")
                print(f"{family:18s} {task.instruction[:44]:44s} " + " | ".join(line), flush=True)
        print(f"== {family}: " + ", ".join(f"{r} {right[r]}/{n}" for r in RULES), flush=True)
        for r in RULES:
            total[r][0] += right[r]
            total[r][1] += n
    llm.close()
    for r, (k, n) in total.items():
        print(f"{ns.wordings} {r}: {k}/{n} right")


if __name__ == "__main__":
    main()
