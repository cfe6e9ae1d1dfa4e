"""Issue 20 R3: faults in the real graph over DDS, one graph for the module (robot:=sim_kinematic, the
planner on llm:=openai against an OpenAI-compatible server process, and the bag recorder), each fault checked
on the transcript file and the world. The server is test/scripted_llm_server.py (echo + logprobs scoring by
a fixed rule, so the episodes are deterministic and take seconds; llama_cpp.server with the embedded model
computes full-vocabulary logits for every prompt token and needs minutes per step on 2 cores):

1. perception stalls (SIGSTOP) -> the episode ends after a bounded wait, saying what did not answer;
2. the planner is killed mid-episode (SIGKILL), the crash cut the file's last line, the planner restarts
   and resumes -> nothing lost or duplicated, the cut line skipped with a warning; the bag recorder is
   killed at the same time -> its bag is readable up to its last flush;
3. the LLM server is killed mid-episode -> LLM_FAILED after the retries, the transcript file intact;
4. the skills node is killed mid-skill -> the step fails after a bounded wait, the episode ends with a
   clear error (last: the skills node is not started again).
A full disk while writing the transcript is tested at the core (src/planner_node/test/test_transcript_faults.py).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from monologue_bringup.testing import GraphPeer

from .conftest import GraphLog

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
INSTRUCTION = "Put the blocks in their matching bowls."
SERVICE_TIMEOUT_S = 5.0  # the planner's timeouts.service in this graph
SKILL_TIMEOUT_S = 8.0  # the planner's timeouts.skill (a skill here takes 4 phases of 0.4 s)
LLM_RETRIES = 2


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, cond: Callable[[], bool], timeout_s: float, log: GraphLog | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}\n"
                                 + (log.text()[-4000:] if log is not None else ""))
        time.sleep(0.05)


class LlmServer:
    """The OpenAI-compatible server process on a fixed port, which the tests kill (SIGKILL) and start again."""

    def __init__(self, log_path: Path) -> None:
        self.log_path, self.port = log_path, _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 90.0) -> None:
        cmd = [sys.executable, str(REPO / "test" / "scripted_llm_server.py"), "--port", str(self.port)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the LLM server exited: {self.log_path.read_text(errors='replace')[-2000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/models", timeout=1.0).close()
                return True
            except urllib.error.HTTPError:
                return True
            except OSError:
                return False

        _wait("the LLM server", up, timeout_s)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlmServer]:
    server = LlmServer(tmp_path_factory.mktemp("llm_server") / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@dataclass
class Graph:
    sup: Any
    log: GraphLog
    bag: Path
    server: LlmServer
    killed: set[str] = field(default_factory=set)

    def kill(self, name: str) -> None:
        """SIGKILL one node (its process group), as a crash would."""
        proc = self.sup.procs[name]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        self.killed.add(name)

    def restart(self, name: str) -> int:
        """Start the node again with the same command line; returns the log position of its first line."""
        mark = len(self.log.lines)
        proc = subprocess.Popen(self.sup.commands()[name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=self.sup.env, start_new_session=True)
        self.sup.procs[name] = proc

        def pump() -> None:
            assert proc.stdout is not None
            for raw in iter(proc.stdout.readline, b""):
                self.log(f"[{name}] {raw.decode('utf-8', 'replace').rstrip()}")

        threading.Thread(target=pump, daemon=True).start()
        self.killed.discard(name)
        return mark

    def lines_since(self, mark: int) -> str:
        with self.log._lock:
            return "\n".join(self.log.lines[mark:])


@pytest.fixture(scope="module")
def graph(ros_domain: int, llm_server: LlmServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    from monologue_bringup.up import Supervisor

    bag = tmp_path_factory.mktemp("faults") / "bag"
    log = GraphLog()
    sup = Supervisor("sim_kinematic", "openai", config_dir=REPO / "config", sink=log, record=bag, node_params={
        "skills": {"sim.seed": "11", "sim.num_blocks": "2", "sim.num_bowls": "3", "sim.matching_bowls": "true",
                   "sim.phase_duration": "0.4"},
        "planner": {"llm.base_url": llm_server.base_url, "llm.max_retries": str(LLM_RETRIES),
                    "llm.backoff_s": "0.2", "llm.timeout_s": "60.0", "timeouts.service": str(SERVICE_TIMEOUT_S),
                    "timeouts.skill": str(SKILL_TIMEOUT_S)},
    })
    sup.start()
    g = Graph(sup, log, bag, llm_server)
    try:
        yield g
    finally:
        for p in sup.procs.values():  # a test that failed while perception was stopped
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGCONT)
        codes = sup.stop()
        crashed = {n: c for n, c in codes.items() if n not in g.killed and c not in (0, -2, -15, 130)}
        assert not crashed, f"nodes exited with errors {crashed}\n{log.text()[-5000:]}"


class Probe(GraphPeer):
    """A client node: sends ExecuteInstruction goals, collects their feedback events, the ground truth and
    the recorder's progress."""

    def __init__(self) -> None:
        from action_msgs.msg import GoalStatusArray
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.qos import qos_profile_action_status_default
        from std_msgs.msg import String

        from monologue_common.actions import ActionClient
        from monologue_common.qos import LATCHED
        from monologue_interfaces.action import ExecuteInstruction
        from monologue_interfaces.msg import SceneDescription

        super().__init__("faults_probe", lambda: MultiThreadedExecutor(num_threads=2))
        self.truth: list[Any] = []
        self.progress: dict[str, Any] = {}
        self.events: list[Any] = []
        self.node.create_subscription(SceneDescription, "sim/ground_truth", self.truth.append, LATCHED)
        self.node.create_subscription(String, "recorder/progress",
                                      lambda m: self.progress.update(json.loads(m.data)), LATCHED)
        self.skill_status: list[Any] = []  # the skills node's goal status arrays (action_msgs/GoalStatusArray)
        self.node.create_subscription(GoalStatusArray, "execute_skill/_action/status", self.skill_status.append,
                                      qos_profile_action_status_default)
        self.client = ActionClient(self.node, ExecuteInstruction, "execute_instruction")
        self.Goal = ExecuteInstruction.Goal
        self.Result = ExecuteInstruction.Result
        self.spin_in_background()

    def send(self, goal: Any, resend_after_s: float = 0.0) -> Any:
        """Send `goal`; returns the goal handle (its feedback events go to self.events). With `resend_after_s`,
        the goal is sent again when nobody answered in that time (a server that was just restarted may not
        have matched this client yet); the one that was accepted is returned."""
        self.events.clear()
        assert self.client.wait_for_server(timeout_sec=120.0), "no execute_instruction"
        futures = [self.client.send_goal_async(goal, feedback_callback=lambda fb: self.events.append(fb.feedback.event))]
        sent, deadline = time.monotonic(), time.monotonic() + 30.0
        while not any(f.done() and f.result() is not None and f.result().accepted for f in futures):
            assert time.monotonic() < deadline and not all(f.done() for f in futures), "the goal was not accepted"
            if resend_after_s and time.monotonic() - sent > resend_after_s:
                futures.append(self.client.send_goal_async(
                    goal, feedback_callback=lambda fb: self.events.append(fb.feedback.event)))
                sent = time.monotonic()
            time.sleep(0.05)
        return next(f.result() for f in futures if f.done() and f.result() is not None and f.result().accepted)

    def publisher_gids(self, topic: str) -> set[bytes]:
        """The endpoint ids of the publishers of `topic` (a restarted node has new ones)."""
        return {bytes(i.endpoint_gid) for i in self.node.get_publishers_info_by_topic(topic)}

    def result(self, handle: Any, timeout_s: float, log: GraphLog) -> Any:
        future = handle.get_result_async()
        _wait("the episode's result", future.done, timeout_s, log)
        return future.result().result

    def first(self, kind: int, timeout_s: float, log: GraphLog) -> Any:
        """The first feedback event of `kind` (waits for it)."""
        _wait(f"a feedback event of kind {kind}", lambda: any(e.kind == kind for e in self.events), timeout_s, log)
        return next(e for e in self.events if e.kind == kind)

    def skill_executing(self, timeout_s: float, log: GraphLog) -> None:
        """Wait until the skills node executes a goal (its action status says so): a ROBOT_ACTION event
        comes before the planner sends the skill's goal."""
        from action_msgs.msg import GoalStatus

        _wait("a skill goal executing", lambda: any(
            s.status == GoalStatus.STATUS_EXECUTING for a in self.skill_status[-1:] for s in a.status_list),
            timeout_s, log)

    def world(self, timeout_s: float = 10.0) -> dict[str, tuple[float, float, float]]:
        """The newest ground truth: object -> position (m)."""
        _wait("sim/ground_truth", lambda: bool(self.truth), timeout_s)
        return {o.name: (o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z)
                for o in self.truth[-1].objects}


@pytest.fixture(scope="module")
def probe(graph: Graph) -> Iterator[Probe]:
    p = Probe()
    try:
        yield p
    finally:
        p.close()


def _records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a transcript file (a line that is not JSON is kept as {"cut": text})."""
    out = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            out.append({"cut": line})
    return out


def _events(path: str | Path) -> list[dict[str, Any]]:
    return [r for r in _records(path) if r.get("record") == "event"]


def _in_bowl(world: dict[str, tuple[float, float, float]], block: str, bowl: str) -> bool:
    """IM's sim rule: within 4 cm in x-y of the bowl and higher than it."""
    b, w = world[block], world[bowl]
    return abs(b[0] - w[0]) < 0.04 and abs(b[1] - w[1]) < 0.04 and b[2] > w[2]


def _work(probe: Probe) -> str:
    """An instruction the world does not satisfy yet, whatever earlier tests did: every block into a bowl
    that holds none (2 blocks, 3 bowls), so the scripted LLM chooses an action first."""
    world = probe.world()
    bowl = next(n for n in sorted(world) if n.endswith("bowl") and not any(
        _in_bowl(world, b, n) for b in world if b.endswith("block")))
    return f"Put all the blocks in the {bowl}."


def test_perception_stall_ends_the_episode_after_a_bounded_wait(graph: Graph, probe: Probe) -> None:
    from monologue_interfaces.msg import TranscriptEvent
    from monologue_interfaces.srv import DescribeScene

    before = probe.world(60.0)
    assert probe.client.wait_for_server(timeout_sec=120.0), graph.log.text()[-3000:]
    assert probe.node.create_client(DescribeScene, "describe_scene").wait_for_service(timeout_sec=60.0)
    perception = graph.sup.procs["perception"]
    os.killpg(perception.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        handle = probe.send(probe.Goal(instruction=INSTRUCTION))
        result = probe.result(handle, 60.0, graph.log)
        waited = time.monotonic() - t0
    finally:
        os.killpg(perception.pid, signal.SIGCONT)
    assert result.error_code == probe.Result.SKILL_SERVER_UNAVAILABLE, result.reason
    # (the planner's client may not have matched the stalled server yet: then it is "unavailable")
    why = re.compile(r"describe_scene (did not answer within|unavailable after) 5\.0 s")
    assert why.search(result.reason), result.reason
    assert waited < 3 * SERVICE_TIMEOUT_S, f"waited {waited:.1f} s"
    events = _events(result.transcript_path)
    assert [e["kind"] for e in events] == ["ERROR", "EPISODE_END"]
    assert why.search(events[0]["text"])
    assert _records(result.transcript_path)[-1]["error"] == "SKILL_SERVER_UNAVAILABLE"
    assert [e.kind for e in result.transcript][-1] == TranscriptEvent.KIND_EPISODE_END
    assert probe.world() == before  # nothing moved


def test_planner_killed_mid_skill_resumes_without_losing_or_repeating_events(graph: Graph, probe: Probe) -> None:
    """The planner and the bag recorder are killed while a skill runs; the crash also cut the file's last line.
    The restarted planner resumes the episode in the same file; the bag is readable up to the recorder's
    last flush."""
    from monologue_bag.core.bagio import Bag
    from monologue_interfaces.msg import TranscriptEvent

    handle = probe.send(probe.Goal(instruction=_work(probe), max_steps=4))
    action = probe.first(TranscriptEvent.KIND_ROBOT_ACTION, 120.0, graph.log)
    episode = action.episode_id
    # the action event is in the bag file (the recorder flushes every second), then both die mid-skill
    _wait("the recorder's flush of the action", lambda: probe.progress.get("flushed", {}).get(episode, 0) > action.index,
          10.0, graph.log)
    old_planner = probe.publisher_gids("/monologue/transcript")
    graph.kill("planner")
    graph.kill("recorder")
    received = list(probe.events)
    del handle  # its result never comes: the planner that had the goal is dead
    path = graph.bag / "transcripts" / f"{episode}.jsonl"
    before = _events(path)
    assert [e["text"] for e in before[: len(received)]] == [e.text for e in received]
    assert [e["index"] for e in before] == list(range(len(before)))
    assert not any(r.get("record") == "end" for r in _records(path))
    with path.open("a", encoding="utf-8") as f:  # what a crash in the middle of a write leaves
        f.write('{"record": "event", "episode_id": "' + episode + '", "index": ' + str(len(before)) + ', "ki')

    # the bag of the killed recorder: readable, every transcript event up to the flush, none invented
    with Bag(graph.bag) as bag:
        in_bag = [m for _t, m in bag.decoded("/monologue/transcript") if m.episode_id == episode]
    assert len(in_bag) > action.index
    assert [(m.index, m.text) for m in in_bag] == [(e["index"], e["text"]) for e in before[: len(in_bag)]]

    mark = graph.restart("planner")
    _wait("the restarted planner", lambda: "ready; strategy" in graph.lines_since(mark), 90.0, graph.log)
    started = graph.lines_since(mark)
    assert f"interrupted episode {episode}" in started and "not a complete record" in started, started
    _wait("the restarted planner's discovery",
          lambda: bool(probe.publisher_gids("/monologue/transcript") - old_planner), 30.0, graph.log)
    handle = probe.send(probe.Goal(resume_episode="latest"), resend_after_s=5.0)
    result = probe.result(handle, 180.0, graph.log)
    assert result.transcript_path == str(path) and result.error_code in (
        probe.Result.NONE, probe.Result.MAX_STEPS_REACHED), result.reason
    after = _events(path)
    # nothing lost, changed or duplicated: the events before the crash, then the resumed ones, gapless
    assert after[: len(before)] == before
    assert [e["index"] for e in after] == list(range(len(after)))
    assert after[len(before)]["text"].startswith("Resumed after an interruption, 1 steps in")
    assert after[-1]["kind"] == "EPISODE_END" and _records(path)[-1]["record"] == "end"
    assert [(e.index, e.text) for e in result.transcript] == [(e["index"], e["text"]) for e in after]
    # the Success lines match the world (the interrupted action's outcome was settled by looking at it):
    # the last successful move of each block put it where it is now
    world, last = probe.world(), {}
    for i, e in enumerate(after):
        if e["kind"] == "SUCCESS":
            act = next(a for a in reversed(after[:i]) if a["kind"] == "ROBOT_ACTION")
            block, target = act["data"]["args"]
            last[block] = (target, e["text"] == "Success: True")
    assert any(e["kind"] == "SUCCESS" for e in after[len(before):])
    for block, (target, ok) in last.items():
        if ok:
            assert _in_bowl(world, block, target), (block, target, world)


def test_llm_server_killed_mid_episode_fails_with_llm_failed_and_an_intact_transcript(
        graph: Graph, probe: Probe) -> None:
    from monologue_interfaces.msg import TranscriptEvent

    mark = len(graph.log.lines)
    handle = probe.send(probe.Goal(instruction=_work(probe), max_steps=4))
    probe.first(TranscriptEvent.KIND_ROBOT_ACTION, 120.0, graph.log)
    graph.server.kill()  # while the skill runs: the next step's scoring finds no server
    result = probe.result(handle, 60.0, graph.log)
    assert result.error_code == probe.Result.LLM_FAILED, result.reason
    assert f"failed after {LLM_RETRIES + 1} attempt(s)" in result.reason
    logged = graph.lines_since(mark)
    assert f"retry {LLM_RETRIES}/{LLM_RETRIES}" in logged
    events = _events(result.transcript_path)
    # intact: every event up to the failure, in order, the skill's outcome, then why it ended
    assert [(e["index"], e["text"]) for e in events] == [(e.index, e.text) for e in result.transcript]
    kinds = [e["kind"] for e in events]
    assert kinds[-2:] == ["ERROR", "EPISODE_END"] and "LLM failed" in events[-2]["text"]
    assert kinds.count("ROBOT_ACTION") == 1 and kinds[kinds.index("ROBOT_ACTION") + 1] == "SUCCESS"
    assert _records(result.transcript_path)[-1]["error"] == "LLM_FAILED"
    act = next(e for e in events if e["kind"] == "ROBOT_ACTION")
    success = next(e for e in events if e["kind"] == "SUCCESS")
    assert _in_bowl(probe.world(), *act["data"]["args"]) == (success["text"] == "Success: True")
    graph.server.start()  # for the next test


def test_skills_node_killed_mid_skill_fails_the_step_after_a_bounded_wait(graph: Graph, probe: Probe) -> None:
    from monologue_interfaces.msg import TranscriptEvent

    handle = probe.send(probe.Goal(instruction=_work(probe), max_steps=4))
    probe.first(TranscriptEvent.KIND_ROBOT_ACTION, 120.0, graph.log)
    probe.skill_executing(60.0, graph.log)
    graph.kill("skills")
    t0 = time.monotonic()
    result = probe.result(handle, 60.0, graph.log)
    waited = time.monotonic() - t0
    assert result.error_code == probe.Result.SKILL_SERVER_UNAVAILABLE, result.reason
    assert waited < SKILL_TIMEOUT_S + 3 * SERVICE_TIMEOUT_S, f"waited {waited:.1f} s"
    events = _events(result.transcript_path)
    assert [(e["index"], e["text"]) for e in events] == [(e.index, e.text) for e in result.transcript]
    texts = [e["text"] for e in events]
    i = next(i for i, e in enumerate(events) if e["kind"] == "ROBOT_ACTION")
    assert texts[i + 1] == f"Skill error TIMEOUT: no result within {SKILL_TIMEOUT_S:.1f} s; cancel sent"
    assert texts[i + 2] == "Success: False"
    assert events[-1]["kind"] == "EPISODE_END" and "get_affordances" in texts[-2], texts[-3:]
    assert _records(result.transcript_path)[-1]["error"] == "SKILL_SERVER_UNAVAILABLE"
