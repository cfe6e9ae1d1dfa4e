"""CAPE's household through the real graph: robot:=sim_household (the symbolic household with
preconditions inside the skills node), oracle perception, the `kitchen` success strategy (household
rules), the planner with the expert LLM stand-in (llm:=expert: it plans from the world's truth and the
task's goal) and the `household` prompt profile, as separate processes over DDS. One planner step, then
skills sent directly through
execute_skill / get_affordances, checked on the world state (sim/ground_truth, perception's scene) and
on the structured precondition errors."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monologue_domain.kitchen.scene import state_from_scene
from monologue_domain.kitchen.skills import parse_precondition
from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.transcript import EventKind
from monologue_eval.demo import run_episode, world_states

pytestmark = [pytest.mark.system, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 30.0  # s, every ROS wait


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines)


TASK = "put the phone on the nightstand"


@pytest.fixture(scope="module")
def household_graph(ros_domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, _Log]]:
    from monologue_bringup.up import Supervisor

    tmp = tmp_path_factory.mktemp("household")
    log = _Log()
    sup = Supervisor(
        "sim_household", "expert",
        config_dir=REPO / "config",
        node_params={
            "skills": {"household.scene": "lab", "household.skill_duration": "0.05"},
            "planner": {"transcript_dir": str(tmp / "transcripts")},
        },
        sink=log,
    )
    from monologue_domain.expert.channel import write_task

    assert sup.expert_truth_dir is not None  # the expert stand-in plans from the world's truth and this goal
    write_task(sup.expert_truth_dir, TASK, "household", {"atoms": ["at(phone, nightstand)"]})
    sup.start()
    try:
        yield sup, log
    finally:
        codes = sup.stop()
        crashed = {n: c for n, c in codes.items() if c not in (0, -2, -15, 130)}
        assert not crashed, f"nodes exited with errors {crashed}\n{log.text()[-5000:]}"


class _Client:
    """execute_skill, get_affordances, detect_success and describe_scene of the running graph."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.utilities import ok

        from monologue_common.actions import ActionClient
        from monologue_interfaces.action import ExecuteSkill
        from monologue_interfaces.srv import DescribeScene, DetectSuccess, GetAffordances

        self._own = not ok()
        if self._own:
            rclpy.init(args=[])
        self.node = rclpy.create_node("household_system_test")
        self.ex = SingleThreadedExecutor()
        self.ex.add_node(self.node)
        self.skill = ActionClient(self.node, ExecuteSkill, "execute_skill")
        self.affs = self.node.create_client(GetAffordances, "get_affordances")
        self.detect = self.node.create_client(DetectSuccess, "detect_success")
        self.describe = self.node.create_client(DescribeScene, "describe_scene")
        self.types = (ExecuteSkill, GetAffordances, DetectSuccess, DescribeScene)
        assert self.skill.wait_for_server(timeout_sec=WAIT_S), "execute_skill not available"
        for c in (self.affs, self.detect, self.describe):
            assert c.wait_for_service(timeout_sec=WAIT_S), f"{c.srv_name} not available"

    def close(self) -> None:
        import rclpy

        self.node.destroy_node()
        if self._own:
            rclpy.shutdown()

    def _wait(self, fut: Any, what: str) -> Any:
        self.ex.spin_until_future_complete(fut, timeout_sec=WAIT_S)
        assert fut.result() is not None, f"no {what} within {WAIT_S} s"
        return fut.result()

    def run(self, skill: str, *args: str) -> tuple[Any, bool, str]:
        """ExecuteSkill result, then the success detector's verdict on it."""
        execute_skill = self.types[0]
        start = self.node.get_clock().now().to_msg()
        handle = self._wait(self.skill.send_goal_async(execute_skill.Goal(skill=skill, args=list(args))), "goal handle")
        assert handle.accepted
        result = self._wait(handle.get_result_async(), "ExecuteSkill result").result
        req = self.types[2].Request(skill=skill, args=list(args), skill_start=start,
                                    skill_end=self.node.get_clock().now().to_msg())
        verdict = self._wait(self.detect.call_async(req), "DetectSuccess answer")
        return result, bool(verdict.success), str(verdict.explanation)

    def affordances(self) -> dict[tuple[str, tuple[str, ...]], float]:
        ans = self._wait(self.affs.call_async(self.types[1].Request(include_unaffordable=True)), "affordances")
        assert ans.success, ans.message
        return {(a.skill, tuple(a.args)): a.affordance for a in ans.skills}

    def scene(self) -> KitchenState:
        """The world as oracle perception describes it (a copy of sim/ground_truth)."""
        ans = self._wait(self.describe.call_async(self.types[3].Request(refresh=True)), "scene")
        assert ans.success, ans.message
        return state_from_scene(world_states(ans.scene.objects))

    def scene_when(self, ok: Any, what: str) -> KitchenState:
        """Poll the scene until `ok(state)` (a skill's change reaches perception through a topic)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            s = self.scene()
            if ok(s):
                return s
            assert time.monotonic() < deadline, f"{what} not in the scene within {WAIT_S} s: {s}"
            self.ex.spin_once(timeout_sec=0.2)


def test_a_planner_step_then_skills_with_cape_precondition_errors(household_graph: tuple[Any, _Log]) -> None:
    sup, log = household_graph
    # One planner step: with the perfect oracle only "stand up" is afforded (Spot sits, CAPE Fig. 1), so
    # scoring x affordance must choose it over "done." (affordance 0.1); the kitchen success strategy
    # judges it on the household's ground truth.
    result, objects = run_episode(TASK, timeout_s=300.0, print_event=lambda _e: None,
                                  goal_options={"strategy": "inner_monologue", "prompt_profile": "household",
                                                "success_feedback": 1, "object_feedback": 2, "use_affordances": 1,
                                                "max_steps": 1})
    text = "\n".join(e.text for e in result.transcript)
    assert result.error_code == 1, f"{result.reason}\n{text}"  # MAX_STEPS_REACHED after the one step
    lines = [e.text for e in result.transcript]
    assert lines[:2] == ["Task: put the phone on the nightstand", "stand up"], f"{text}\n{log.text()[-3000:]}"
    success = next(e for e in result.transcript if e.kind == EventKind.SUCCESS)
    data = json.loads(success.data_json)
    assert data["success"] is True and "standing" in data["explanation"], data
    s = state_from_scene(world_states(objects))
    assert s.states["robot"] == {"standing"} and s.robot_location == "lab", s

    c = _Client()
    try:
        affs = c.affordances()
        assert affs[("walk_to", ("desk",))] == 1.0 and affs[("walk_to", ("shelf",))] == 0.0  # behind a closed door
        assert affs[("stand_up", ())] == 0.0 and affs[("pick_up", ("phone",))] == 0.0
        # a failed precondition: nothing happens, the result names the proposition and CAPE's level
        res, ok, why = c.run("pick_up", "phone")
        assert res.error_code == 3, res  # PRECONDITION_FAILED
        assert res.error_msg == "I cannot pick up the phone because I am not near the phone"
        assert parse_precondition(res.failed_precondition) == ("not_near", 3, res.error_msg)
        assert not ok, why
        res, ok, why = c.run("walk_to", "shelf")
        assert parse_precondition(res.failed_precondition)[:2] == ("door_closed", 4)
        assert "the door between the lab and the storage room is closed" in res.error_msg
        for step in (("walk_to", "desk"), ("pick_up", "phone")):
            res, ok, why = c.run(*step)
            assert res.error_code == 0 and ok, (step, res, why)
        s = c.scene_when(lambda s: s.holding == "phone", "the held phone")
        assert s.robot_location == "desk" and s.location_of("phone") == HELD and {"lab", "desk"} <= s.visited
        res, ok, _ = c.run("pick_up", "mail")  # Spot has one arm
        assert (res.error_code, *parse_precondition(res.failed_precondition)[:2]) == (3, "hand_full", 4)
        assert c.affordances()[("pick_up", ("mail",))] == 0.0
        for move in (("walk_to", "nightstand"), ("put", "phone", "nightstand")):
            res, ok, why = c.run(*move)
            assert res.error_code == 0 and ok, (move, res, why)
        s = c.scene_when(lambda s: s.location_of("phone") == "nightstand", "the phone on the nightstand")
        assert s.holding is None and s.robot_location == "nightstand" and "desk" in s.visited
    finally:
        c.close()
    assert not sup.dead()
