"""How the LLM goal grounding (`planner.scoring.goal_grounding: llm | llm_named`) reads the paraphrase list.

    . scripts/env.sh && nice python -m benchmarks.goal_grounding [--threads 1]

For every text of config/benchmarks/wordings.yaml (slots filled with one scene's names) it scores the
goals the planner would offer (core/goal_check.goal_candidates, the im_sim_object_success profile's
goal prompt) with the embedded model and prints what five rules choose: `raw` (`llm`: the highest sum
of log-probabilities, "Something else." included), `mean` (the best goal when its mean log-probability
per token beats "Something else."'s), `first1` and `first2` (two stages: the kind of goal by the
log-probability of the first one or two tokens, which every goal of a kind shares, then the highest
sum within that kind), and `named` (`llm_named`: the highest sum among goal_check.named_goals, the
goals over the scene names the text mentions). A text of a relational family (different corners,
matching or mismatched bowls) is right when read as no goal. Prints numbers; asserts nothing.
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

import yaml

from monologue_domain.tabletop import LOCATIONS
from monologue_llm.llama_cpp_backend import LlamaCppBackend
from monologue_llm.model_files import embedded_model_path
from planner_node.core.goal_check import NO_GOAL, goal_candidates, named_goals
from planner_node.core.prompts import load_profile

REPO = Path(__file__).resolve().parents[1]
BLOCKS = ("red block", "green block", "blue block")
BOWLS = ("yellow bowl", "blue bowl", "red bowl")
SLOTS = {"block": "red block", "target": "blue bowl", "prep": "in", "location": "middle", "bowl": "blue bowl"}
WANT = {"pick_place": "Pick the red block and place it in the blue bowl.", "stack": "Stack every block.",
        "blocks_to_location": "Pick every block and place it on the middle.",
        "blocks_to_bowl": "Pick every block and place it in the blue bowl.",
        "stack_on_location": "Stack every block on the middle.", "different_corners": NO_GOAL,
        "matching_bowls": NO_GOAL, "mismatched_bowls": NO_GOAL}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default 1)")
    ns = ap.parse_args()
    profile = load_profile(REPO / "config" / "prompts", "im_sim_object_success")
    cats = {**{b: "block" for b in BLOCKS}, **{b: "bowl" for b in BOWLS}, **{n: "location" for n in LOCATIONS}}
    pairs = [(b, t) for b in BLOCKS for t in cats if t != b]
    cands = goal_candidates(pairs, cats, lambda o, t: profile.skill_text("pick_place", (o, t), cats))
    none = cands.index(NO_GOAL)
    wordings = yaml.safe_load((REPO / "config" / "benchmarks" / "wordings.yaml").read_text(encoding="utf-8"))
    llm = LlamaCppBackend(embedded_model_path(), n_ctx=2048, n_threads=ns.threads, logger=logging.getLogger("llm"))
    tally = {r: [0, 0, 0] for r in ("raw", "mean", "first1", "first2", "named")}  # right, wrong goal, missed goal
    for family, texts in wordings.items():
        for text in texts:
            instruction = text.format(**SLOTS)
            prompt = f"{profile.goal_prompt.rstrip()}\nInstruction: {instruction}\nGoal:"
            scores = llm.score(prompt, [" " + c for c in cands]).scores
            lp = [s.logprob for s in scores]
            per_token = [s.logprob / max(1, len(s.token_logprobs)) for s in scores]
            best_goal = max((i for i in range(len(cands)) if i != none), key=lambda i: lp[i])
            picks = {"raw": cands[max(range(len(cands)), key=lambda i: lp[i])],
                     "mean": cands[best_goal] if per_token[best_goal] > per_token[none] else NO_GOAL}
            for k in (1, 2):
                head = [tuple(llm.tokenize(prompt + " " + c))[:len(llm.tokenize(prompt)) + k] for c in cands]
                kind = {h: sum(scores[i].token_logprobs[:k]) for i, h in enumerate(head)}
                top = max(kind, key=lambda h: kind[h])
                picks[f"first{k}"] = cands[max((i for i in range(len(cands)) if head[i] == top), key=lambda i: lp[i])]
            named = [cands.index(c) for c in named_goals(instruction, cands, cats)]
            picks["named"] = cands[max(named, key=lambda i: lp[i])]
            for rule, pick in picks.items():
                tally[rule][0 if pick == WANT[family] else 2 if pick == NO_GOAL else 1] += 1
            print(f"{family:18s} {instruction[:40]:40s} raw: {picks['raw']:50s} named: {picks['named']}", flush=True)
    llm.close()
    n = sum(len(t) for t in wordings.values())
    for rule, (right, wrong, missed) in tally.items():
        print(f"{rule}: {right}/{n} right, {wrong} wrong goals, {missed} no goal where one was meant")


if __name__ == "__main__":
    main()
