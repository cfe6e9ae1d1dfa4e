"""`monologue-demo` without a graph: --help, argument checks, graph:=running (the goal goes to the
running planner, nothing is started, the world is judged from the returned objects) and the refusal
to start a second graph beside a running one. The ROS client is replaced by stand-ins."""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from monologue_eval import demo


def _obj(name: str, x: float, y: float, z: float) -> SimpleNamespace:
    category = name.rsplit(" ", 1)[1]
    return SimpleNamespace(name=name, category=category, pose=SimpleNamespace(pose=SimpleNamespace(
        position=SimpleNamespace(x=x, y=y, z=z))), size=SimpleNamespace(x=0.04, y=0.04, z=0.04))


RESULT = SimpleNamespace(success=True, reason="done", steps_taken=2, transcript_path="/tmp/t.jsonl")
SOLVED = [_obj("red block", 0.5, 0.1, 0.05), _obj("red bowl", 0.5, 0.1, 0.0), _obj("blue bowl", 0.4, -0.1, 0.0)]
UNSOLVED = [_obj("red block", 0.3, 0.2, 0.02), _obj("red bowl", 0.5, 0.1, 0.0)]


class NoSupervisor:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("a graph was started")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """run_episode's calls; it answers with RESULT and the objects of calls[0]['objects'] (SOLVED by default)."""
    seen: list[dict[str, Any]] = [{"objects": SOLVED}]

    def fake_run_episode(instruction: str, timeout_s: float, print_event: Any = print, **kw: Any) -> Any:
        seen.append({"instruction": instruction, "timeout_s": timeout_s, **kw})
        if isinstance(seen[0]["objects"], Exception):
            raise seen[0]["objects"]
        return RESULT, seen[0]["objects"]

    monkeypatch.setattr(demo, "run_episode", fake_run_episode)
    monkeypatch.setattr(demo, "Supervisor", NoSupervisor)
    monkeypatch.setattr(demo, "planner_available", lambda timeout_s: True)
    return seen


def test_help_prints_the_usage_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "graph:=running" in out and "seed:=N" in out


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["colour:=red"]) == 2
    assert demo.main(["graph:=elsewhere"]) == 2
    assert demo.main(["stray"]) == 2
    assert demo.main(["seed:=three"]) == 2
    for own in (["seed:=3"], ["robot:=sim"], ["record:=runs/x"], ["--param", "planner:max_steps=2"]):
        assert demo.main(["graph:=running", *own]) == 2
    assert "graph:=running uses the running graph" in capsys.readouterr().err


def test_running_graph_gets_the_goal_and_the_world_is_judged(
        calls: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["graph:=running", "timeout:=30"]) == 0
    call = calls[1]
    assert call["instruction"] == demo.DEFAULT_INSTRUCTION and call["timeout_s"] == 30.0
    assert call["fallback_scene"] is True  # a real robot has no ground truth: perception's scene then
    out = capsys.readouterr().out
    assert "on the running graph" in out and "world state satisfies the instruction: True" in out

    calls[0]["objects"] = UNSOLVED  # the planner says done, the world disagrees
    assert demo.main(["graph:=running"]) == 1
    assert "world state satisfies the instruction: False" in capsys.readouterr().out


def test_running_graph_free_form_instruction_trusts_the_planner(calls: list[dict[str, Any]]) -> None:
    calls[0]["objects"] = []
    assert demo.main(["graph:=running", "instruction:=Wave."]) == 0
    assert calls[1]["instruction"] == "Wave."


def test_no_running_graph_is_a_failure_with_a_hint(
        calls: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    calls[0]["objects"] = TimeoutError("planner's execute_instruction not available after 15 s")
    assert demo.main(["graph:=running"]) == 1
    assert "is a graph running on ROS_DOMAIN_ID" in capsys.readouterr().err


def test_own_graph_is_refused_beside_a_running_planner(
        calls: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["seed:=3"]) == 2  # NoSupervisor: nothing was started
    assert "graph:=running" in capsys.readouterr().err
    assert len(calls) == 1


def test_symbolic_worlds_have_a_demo_whose_first_natural_step_violates_a_precondition() -> None:
    from monologue_domain.kitchen.household import SCENES, HouseholdWorld
    from monologue_domain.kitchen.skills import parse_precondition
    from monologue_domain.kitchen.state import HELD, KitchenState
    from monologue_domain.kitchen.world import DEFAULT_PLACEMENTS, KitchenWorld, make_state

    kitchen = demo.world_demo("kitchen")
    assert (kitchen.instruction, kitchen.prompt_profile, kitchen.cape_demonstrations) == (
        "Bring me the coke", "saycan", "cape_kitchen")
    placements = dict(p.strip("'").split("@") for p in kitchen.scene_params["kitchen.objects"][1:-1].split(", "))
    assert placements == {**DEFAULT_PLACEMENTS, "coke": HELD}
    w = KitchenWorld(make_state(placements, kitchen.scene_params["kitchen.robot_location"]))
    for skill in ("find", "pick_up"):  # what SayCan's "Bring me a coke" demonstration starts with
        err = w.check(skill, ["coke"])
        assert err is not None and err.proposition == "already_holding"
    assert not kitchen.goal(w.state())
    assert kitchen.goal(KitchenState("user", "coke", {**placements}))

    house = demo.world_demo("household")
    assert (house.prompt_profile, house.cape_demonstrations) == ("household", "cape_household")
    scene, start = SCENES[house.scene_params["household.scene"]]()
    standing = KitchenState(start.robot_location, None, start.object_locations, start.open_containers,
                            {"robot": frozenset({"standing"})})
    out = HouseholdWorld(scene, standing).execute("stand_up", [])  # every household demonstration starts so
    assert parse_precondition(out.failed_precondition)[:2] == ("already_standing", 1)
    with pytest.raises(ValueError):
        demo.world_demo("tabletop")


def test_strategy_goes_to_the_running_graph_and_method_needs_cape(
        calls: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    calls[0]["objects"] = []
    assert demo.main(["graph:=running", "instruction:=Wave.", "strategy:=cape"]) == 0
    assert calls[1]["goal_options"] == {"strategy": "cape"}
    assert demo.main(["method:=F_E"]) == 2
    assert "strategy:=cape" in capsys.readouterr().err


def test_secure_demo_fails_closed_and_joins_in_the_operator_enclave(
        calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    """secure:=true never runs an open graph: no keystore, a middleware without DDS Security or a keystore
    without the operator enclave exit 2 before anything starts; with all three, this process joins in the
    operator enclave (the environment rcl reads) and the goal goes out."""
    import monologue_bringup.up as up

    assert demo.main(["graph:=running", "secure:=true"]) == 2
    assert "needs keystore:=" in capsys.readouterr().err
    assert demo.main(["graph:=running", f"keystore:={tmp_path}"]) == 2
    monkeypatch.setattr(up, "middleware_security_error", lambda env=None: "no DDS Security here")
    assert demo.main(["graph:=running", "secure:=true", f"keystore:={tmp_path}"]) == 2
    assert "no DDS Security here" in capsys.readouterr().err
    monkeypatch.setattr(up, "middleware_security_error", lambda env=None: None)
    assert demo.main(["graph:=running", "secure:=true", f"keystore:={tmp_path}"]) == 2  # not a keystore
    assert "not a keystore" in capsys.readouterr().err
    enclave = tmp_path / "enclaves" / "monologue" / "operator"
    enclave.mkdir(parents=True)
    assert demo.main(["graph:=running", "secure:=true", f"keystore:={tmp_path}"]) == 2  # empty operator enclave
    assert "enclave /monologue/operator: missing" in capsys.readouterr().err
    assert len(calls) == 1  # nothing was sent
    for name in ("cert.pem", "key.pem", "identity_ca.cert.pem", "permissions_ca.cert.pem", "governance.p7s",
                 "permissions.p7s", "permissions.xml", "governance.xml"):
        (enclave / name).write_text("x")
    for key in ("ROS_SECURITY_ENABLE", "ROS_SECURITY_STRATEGY", "ROS_SECURITY_KEYSTORE",
                "ROS_SECURITY_ENCLAVE_OVERRIDE"):
        monkeypatch.setenv(key, "")  # recorded, so the values the demo sets are undone after the test
        monkeypatch.delenv(key)
    code = demo.main(["graph:=running", "secure:=true", f"keystore:={tmp_path}"])
    assert os.environ.get("ROS_SECURITY_ENCLAVE_OVERRIDE") == "/monologue/operator", capsys.readouterr().err
    assert os.environ.get("ROS_SECURITY_ENABLE") == "true"
    assert code == 0 and len(calls) == 2


def test_dry_run_arguments(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """fake:=true (the dry run of a real robot): refused for a simulated robot and with graph:=running; on a real
    robot the graph starts with its fakes and the world's dry-run instruction (docs/ur5e.md, docs/spot.md)."""
    assert demo.main(["fake:=yes"]) == 2
    assert demo.main(["graph:=running", "fake:=true"]) == 2
    assert demo.main(["robot:=sim_kitchen", "fake:=true", "web:=false"]) == 2
    assert "already simulated" in capsys.readouterr().err
    started: list[dict[str, Any]] = []

    class Sup:
        dry_run = None

        def __init__(self, robot: str, llm: str, **kw: Any) -> None:
            started.append({"robot": robot, **kw})
            self.robot, self.llm, self.preflight = robot, llm, None

        def start(self) -> Sup:
            return self

        def stop(self) -> dict[str, int]:
            return {"skills": 0}

    monkeypatch.setattr(demo, "Supervisor", Sup)
    monkeypatch.setattr(demo, "run_episode", lambda instruction, timeout_s, show, **kw: (RESULT, []))
    monkeypatch.setattr("monologue_bringup.up.set_preflight", lambda sup, values: None)
    assert demo.main(["robot:=spot", "fake:=true", "web:=false"]) == 0
    assert started[0]["robot"] == "spot" and started[0]["fake"] is True
    assert "Pick up the coke." in capsys.readouterr().out
