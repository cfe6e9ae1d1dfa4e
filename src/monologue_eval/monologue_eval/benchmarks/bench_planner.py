"""Planner benchmark (prints numbers; no assertions).

Run: `. scripts/env.sh && monologue-bench-planner` (or `python -m monologue_eval.benchmarks.bench_planner`).

1. Planner overhead per step, excluding LLM compute (a zero-cost scorer drives a 15-step episode).
2. Tokens the embedded model processes per step over a 15-step transcript, with and without prefix
   (KV-cache) reuse, and their ratio.
3. Scoring cost against the number of candidates (5, 10, 20, 40) on a warm prompt.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
from collections.abc import Sequence

from monologue_bringup.graph import default_config_dir
from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.transcript import Transcript
from monologue_llm.base import CandidateScore, Generation, ScoreResult
from monologue_llm.llama_cpp_backend import LlamaCppBackend
from monologue_llm.model_files import embedded_model_path
from planner_node.core.monologue import InnerMonologue
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport
from planner_node.core.prompts import PromptProfile, load_profile
from planner_node.core.settings import episode_defaults
from skills_node.core.backend import SimBackend

LOG = logging.getLogger("bench")


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
    records = []
    im = InnerMonologue(FreeScorer(), ports, ports, ports, profile, LOG, on_step=records.append)
    t0 = time.perf_counter()
    res = im.run("Stack all the blocks.", episode_defaults(default_config_dir(), max_steps=steps), Transcript("bench"))
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


def tokens(profile: PromptProfile, steps: int, threads: int) -> None:
    prompts = episode_prompts(profile, steps)
    totals = {}
    for reuse in (True, False):
        llm = LlamaCppBackend(str(embedded_model_path()), logger=LOG, n_threads=threads, reuse_prefix=reuse)
        new, wall = [], []
        for prompt, cands in prompts:
            r = llm.score(prompt, cands)
            new.append(r.new_tokens_processed)
            wall.append(r.wall_time_s)
        llm.close()
        totals[reuse] = sum(new)
        print(f"[2] reuse_prefix={reuse!s:5}: prompt {len(llm_tokens(prompts[-1][0]))} tokens at step {steps}; "
              f"new tokens per step median {statistics.median(new):.0f} (first {new[0]}), "
              f"scoring time per step median {statistics.median(wall):.2f} s, total {sum(wall):.1f} s")
    print(f"[2] tokens processed without / with reuse over {steps} steps: {totals[False]} / {totals[True]} "
          f"= {totals[False] / max(totals[True], 1):.2f}x")


_TOK: LlamaCppBackend | None = None


def llm_tokens(text: str) -> list[int]:
    global _TOK
    if _TOK is None:
        _TOK = LlamaCppBackend(str(embedded_model_path()), logger=LOG, n_threads=1)
    return _TOK.tokenize(text)


def candidates_cost(profile: PromptProfile, threads: int) -> None:
    prompt, cands = episode_prompts(profile, 1)[0]  # 4 blocks, 3 bowls: 60 distinct candidates
    pool = cands[:40]
    llm = LlamaCppBackend(str(embedded_model_path()), logger=LOG, n_threads=threads)
    llm.score(prompt, pool[:1])  # warm the prompt
    for n in (5, 10, 20, 40):
        sub = pool[:n] if n == 5 else pool[n // 2:n] + pool[:n // 2]  # new texts, not cached ones
        t = time.perf_counter()
        r = llm.score(prompt, sub)
        dt = time.perf_counter() - t
        print(f"[3] {n:2d} candidates: {dt:.2f} s ({dt / n * 1e3:.0f} ms per candidate, "
              f"{r.new_tokens_processed} tokens evaluated)")
    llm.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", default="im_sim_object_success")
    ns = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    profile = load_profile(default_config_dir() / "prompts", ns.profile)
    overhead(profile, ns.steps)
    tokens(profile, ns.steps, ns.threads)
    candidates_cost(profile, ns.threads)


if __name__ == "__main__":
    main()
