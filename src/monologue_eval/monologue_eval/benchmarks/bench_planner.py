"""Planner benchmark (prints numbers; no assertions).

Run: `. scripts/env.sh && monologue-bench-planner` (or `python -m monologue_eval.benchmarks.bench_planner`).

1. Planner overhead per step, excluding LLM compute (a zero-cost scorer drives a 15-step episode).
2. Tokens the embedded model processes per step over a 15-step transcript: without prefix (KV-cache)
   reuse, with reuse (candidate by candidate), and with tree scoring (all candidates in one
   multi-sequence decode over a token trie). Target: <= 0.15 of the prompt length per step.
3. Scoring cost against the number of candidates (5, 10, 20, 40) on a warm prompt, candidate by
   candidate and as a tree, against generating one action line. Target: 20 candidates <= 3x one line.
4. A 3-block matching-bowls episode on the kinematic world (the planner with the real model, the
   simulated skills at sim_kinematic's 0.1 s per motion phase, success from the world), both ways.
   Target: <= 20 s wall when it takes 3 steps + done.
Every target line prints the measured figure and whether it is met.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from monologue_bringup.graph import default_config_dir
from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.transcript import Transcript
from monologue_llm.base import CandidateScore, Generation, ScoreResult
from monologue_llm.llama_cpp_backend import LlamaCppBackend
from monologue_llm.model_files import embedded_model_path
from planner_node.core import strategies
from planner_node.core.episode import EpisodeOptions, EpisodeResult, StepRecord
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport
from planner_node.core.prompts import PromptProfile, load_profile
from planner_node.core.runner import run_episode
from planner_node.core.settings import episode_defaults
from planner_node.core.strategy import EpisodeContext
from planner_node.core.strategy import Ports as PlannerPorts
from skills_node.robots.kinematic.core.backend import SimBackend

LOG = logging.getLogger("bench")


def run_im(llm: Any, ports: Any, profile: PromptProfile, instruction: str, options: EpisodeOptions,
           transcript: Transcript, on_step: Callable[[StepRecord], None]) -> EpisodeResult:
    """One `inner_monologue` episode over `ports` (skills, scene and success), run as the planner's runner does."""
    ep = EpisodeContext(llm, PlannerPorts(ports, ports, ports), profile, transcript, instruction, options, LOG,
                        on_step=on_step)
    return run_episode(strategies.get("inner_monologue"), ep)


class FreeScorer:
    """Constant-time scorer that never chooses done, so an episode runs all its steps."""

    name = "free"

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        scores = tuple(CandidateScore(c, -1.0 - 0.01 * i - (9.0 if "None" in c else 0.0), 3, ())
                       for i, c in enumerate(candidates))
        return ScoreResult(scores, 0, 0, 0.0)

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        raise NotImplementedError

    def close(self) -> None:
        pass


class Ports:
    def __init__(self, world: TabletopWorld) -> None:
        self.sim = SimBackend(world, LOG, phase_duration_s=0.0)

    def affordances(self) -> list[SkillOption]:
        return [SkillOption(a.skill, a.args, a.affordance) for a in self.sim.affordances()]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        t = time.time()
        o = self.sim.execute(skill, args, lambda *_: None, cancel)
        return SkillResult(int(o.error), o.error.name, o.message, o.failed_precondition, t, time.time())

    def describe(self) -> list[SceneItem]:
        return [SceneItem(s.name, s.category) for s in self.sim.ground_truth()]

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        return SuccessReport(True, 1.0, "bench")


def overhead(profile: PromptProfile, steps: int) -> None:
    ports = Ports(TabletopWorld.random(1, num_blocks=4, num_bowls=3))
    records: list[StepRecord] = []
    t0 = time.perf_counter()
    res = run_im(FreeScorer(), ports, profile, "Stack all the blocks.",
                 episode_defaults(default_config_dir(), max_steps=steps), Transcript("bench"), records.append)
    total = time.perf_counter() - t0
    per_step = [r.step_s - r.llm_s for r in records]
    print(f"[1] planner overhead per step (no LLM compute), {res.steps_taken} steps: "
          f"median {statistics.median(per_step) * 1e3:.2f} ms, max {max(per_step) * 1e3:.2f} ms; "
          f"whole episode incl. sim skills {total * 1e3:.1f} ms")


def episode_prompts(profile: PromptProfile, steps: int) -> list[tuple[str, list[str]]]:
    world = TabletopWorld.random(2, num_blocks=4, num_bowls=3)
    cats = {o.name: o.category for o in world.objects}
    lines = [profile.objects([o.name for o in world.objects]), profile.instruction("Stack all the blocks.")]
    out = []
    for i in range(steps):
        affs = world.affordances()
        cands = [profile.action(a.skill, a.args, cats) for a in affs] + [profile.done_line]
        out.append((profile.render_prompt(lines), cands))
        a = affs[i % len(affs)]
        world.pick_place(*a.args)
        lines += [profile.action(a.skill, a.args, cats), profile.success(True)]
    return out


MODES: dict[str, dict[str, Any]] = {"no reuse": {"reuse_prefix": False}, "reuse": {}, "tree": {"tree_scoring": True}}
TOKEN_TARGET = 0.15  # tokens evaluated per step / prompt tokens, after the first step
CANDIDATE_TARGET = 3.0  # scoring 20 candidates / generating one action line
EPISODE_TARGET_S = 20.0  # wall of a 3-step matching-bowls episode


def _met(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def tokens(profile: PromptProfile, steps: int, threads: int, modes: Sequence[str]) -> None:
    prompts = episode_prompts(profile, steps)
    totals = {}
    for mode in modes:
        kwargs = MODES[mode]
        llm = LlamaCppBackend(str(embedded_model_path()), logger=LOG, n_threads=threads, **kwargs)
        new, wall, ratio = [], [], []
        for prompt, cands in prompts:
            r = llm.score(prompt, cands)
            new.append(r.new_tokens_processed)
            wall.append(r.wall_time_s)
            ratio.append(r.new_tokens_processed / r.prompt_tokens)
        llm.close()
        totals[mode] = sum(new)
        later = ratio[1:] or ratio
        print(f"[2] {mode:8}: prompt {r.prompt_tokens} tokens at step {steps}, {len(prompts[-1][1])} candidates; "
              f"tokens evaluated per step median {statistics.median(new):.0f} (first {new[0]}) = "
              f"{statistics.mean(later):.2f} of the prompt (steps 2-{steps}, mean); "
              f"scoring time per step median {statistics.median(wall):.2f} s, total {sum(wall):.1f} s")
        if mode == "tree":
            print(f"[2] target: tokens per step <= {TOKEN_TARGET} of the prompt: {statistics.mean(later):.2f} "
                  f"{_met(statistics.mean(later) <= TOKEN_TARGET)}")
    print(f"[2] tokens processed over {steps} steps: " + ", ".join(f"{m} {n}" for m, n in totals.items()))


def candidates_cost(profile: PromptProfile, threads: int, modes: Sequence[str]) -> None:
    prompt, cands = episode_prompts(profile, 1)[0]  # 4 blocks, 3 bowls: 60 distinct candidates
    pool = cands[:40]
    for mode in [m for m in modes if m != "no reuse"]:
        llm = LlamaCppBackend(str(embedded_model_path()), logger=LOG, n_threads=threads, **MODES[mode])
        gen = llm.generate(prompt, stop=["\n"], max_tokens=48)  # warms the prompt
        gen = llm.generate(prompt, stop=["\n"], max_tokens=48)
        cost = {}
        for n in (5, 10, 20, 40):
            sub = pool[:n] if n == 5 else pool[n // 2:n] + pool[:n // 2]  # new texts, not cached ones
            t = time.perf_counter()
            r = llm.score(prompt, sub)
            cost[n] = time.perf_counter() - t
            print(f"[3] {mode:5} {n:2d} candidates: {cost[n]:.2f} s ({cost[n] / n * 1e3:.0f} ms per candidate, "
                  f"{r.new_tokens_processed} tokens evaluated)")
        llm.close()
        print(f"[3] {mode:5} generating one action line ({gen.completion_tokens} tokens, {gen.text.strip()!r}): "
              f"{gen.wall_time_s:.2f} s; 20 candidates / one line = {cost[20] / gen.wall_time_s:.1f}x")
        if mode == "tree":
            ratio = cost[20] / gen.wall_time_s
            print(f"[3] target: scoring 20 candidates <= {CANDIDATE_TARGET:.0f}x one line: {ratio:.1f}x "
                  f"{_met(ratio <= CANDIDATE_TARGET)}")


class WorldPorts(Ports):
    """Ports whose success detector reads the kinematic world (the bench's ground truth)."""

    def __init__(self, world: TabletopWorld) -> None:
        self.sim = SimBackend(world, LOG, phase_duration_s=0.1)  # config/robots/sim_kinematic.yaml
        self.world = world

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        ok = len(args) == 2 and self.world.is_on(args[0], args[1])
        return SuccessReport(ok, 1.0 if ok else 0.0, "world")


def episode(profile: PromptProfile, threads: int, episodes: int, modes: Sequence[str]) -> None:
    from monologue_domain.kinematic_world import SceneSpec

    colours = ("red", "green", "blue")
    for mode in [m for m in modes if m != "no reuse"]:
        walls, three = [], []
        for seed in range(episodes):
            # a fresh model per episode: the scenes' prompts repeat, and cached log-probs would answer them
            llm = LlamaCppBackend(str(embedded_model_path()), logger=LOG, n_threads=threads, **MODES[mode])
            world = TabletopWorld.from_spec(SceneSpec(colours, colours), seed=seed)
            ports = WorldPorts(world)
            records: list[StepRecord] = []
            t0 = time.perf_counter()
            run_im(llm, ports, profile, "Put the blocks in their matching bowls.",
                   episode_defaults(default_config_dir(), max_steps=15), Transcript(f"bench-{seed}"), records.append)
            wall = time.perf_counter() - t0
            done = all(world.is_on(f"{c} block", f"{c} bowl") for c in colours)
            moves = sum(r.chosen.option is not None for r in records)
            walls.append(wall)
            if moves == 3 and len(records) == 4:
                three.append(wall)
            print(f"[4] {mode:5} seed {seed}: {moves} moves + {len(records) - moves} done "
                  f"({'goal reached' if done else 'goal not reached'}), {wall:.1f} s wall, "
                  f"LLM {sum(r.llm_s for r in records):.1f} s")
            llm.close()
        print(f"[4] {mode:5} mean {statistics.mean(walls):.1f} s over {len(walls)} episodes; "
              f"3 steps + done: {len(three)} episodes, mean {statistics.mean(three) if three else float('nan'):.1f} s")
        if mode == "tree" and three:
            m = statistics.mean(three)
            print(f"[4] target: a 3-step + done episode <= {EPISODE_TARGET_S:.0f} s: {m:.1f} s "
                  f"{_met(m <= EPISODE_TARGET_S)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", default="im_sim_object_success")
    ap.add_argument("--episodes", type=int, default=3, help="matching-bowls episodes per scoring mode ([4])")
    ap.add_argument("--only", default="1,2,3,4", help="which figures to measure, e.g. 3,4")
    ap.add_argument("--modes", default="no reuse,reuse,tree", help=f"scoring modes to compare, of {list(MODES)}")
    ns = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    profile = load_profile(default_config_dir() / "prompts", ns.profile)
    only = {x.strip() for x in ns.only.split(",")}
    modes = [m.strip() for m in ns.modes.split(",")]
    if unknown := [m for m in modes if m not in MODES]:
        ap.error(f"unknown --modes {unknown}; choose from {list(MODES)}")
    if "1" in only:
        overhead(profile, ns.steps)
    if "2" in only:
        tokens(profile, ns.steps, ns.threads, modes)
    if "3" in only:
        candidates_cost(profile, ns.threads, modes)
    if "4" in only:
        episode(profile, ns.threads, ns.episodes, modes)


if __name__ == "__main__":
    main()
