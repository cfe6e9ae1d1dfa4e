"""The launch files, loaded with small stand-ins for `launch` / `launch_ros` (not on PyPI), and the
launch arguments they share with `monologue-up`: a node that exits shuts the launch down, a record:=
directory holding a bag is refused, sim.launch.py passes its arguments through."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from monologue_bringup.graph import LIVE, LLMS, ROBOTS, graph_for
from monologue_bringup.up import LAUNCH_ARGUMENTS, launch_values, main, record_dir_error

REPO = Path(__file__).resolve().parents[3]
LAUNCH = REPO / "launch"


class Recorded:
    """A launch action stand-in: keeps its arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


class LaunchConfiguration(Recorded):
    def perform(self, context: dict[str, str]) -> str:
        return context[self.args[0]]


def _stand_ins() -> dict[str, ModuleType]:
    mods = {name: ModuleType(name) for name in (
        "launch", "launch.actions", "launch.event_handlers", "launch.substitutions",
        "launch.launch_description_sources", "launch_ros", "launch_ros.actions")}
    kinds = {
        "launch": ["LaunchDescription"],
        "launch.actions": ["DeclareLaunchArgument", "OpaqueFunction", "RegisterEventHandler", "SetEnvironmentVariable",
                           "Shutdown", "IncludeLaunchDescription", "ExecuteProcess"],
        "launch.event_handlers": ["OnProcessExit"],
        "launch.launch_description_sources": ["PythonLaunchDescriptionSource"],
        "launch_ros.actions": ["Node"],
    }
    for mod, names in kinds.items():
        for name in names:
            setattr(mods[mod], name, type(name, (Recorded,), {}))
    mods["launch.substitutions"].LaunchConfiguration = LaunchConfiguration  # type: ignore[attr-defined]
    return mods


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, mod in _stand_ins().items():
        monkeypatch.setitem(sys.modules, name, mod)

    def _load(file: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(file.replace(".", "_"), LAUNCH / file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    yield _load


def _declared(description: Any) -> dict[str, Recorded]:
    entities = description.args[0]
    return {e.args[0]: e for e in entities if type(e).__name__ == "DeclareLaunchArgument"}


def _context(**values: str) -> dict[str, str]:
    return {**{a.name: a.default for a in LAUNCH_ARGUMENTS}, **values}


def test_arguments_are_monologue_ups_with_the_graphs_choices(load: Any) -> None:
    declared = _declared(load("monologue.launch.py").generate_launch_description())
    assert list(declared) == ["robot", "llm", "log_level", "record", "scene", "web", "foxglove", "secure",
                              "keystore", "fake", "preflight"]
    assert declared["scene"].kwargs["default_value"] == "" and "disinfection" in declared["scene"].kwargs["choices"]
    assert declared["robot"].kwargs["choices"] == list(ROBOTS) and declared["robot"].kwargs["default_value"] == "sim"
    assert declared["llm"].kwargs["choices"] == list(LLMS)
    assert declared["log_level"].kwargs["default_value"] == "info" and "choices" not in declared["log_level"].kwargs


@pytest.mark.parametrize("robot", ROBOTS)
def test_every_node_is_started_and_its_exit_shuts_the_launch_down(load: Any, robot: str) -> None:
    module = load("monologue.launch.py")
    actions = module._nodes(_context(robot=robot, log_level="debug", preflight="false"))
    nodes = [a for a in actions if type(a).__name__ == "Node"]
    handlers = [a for a in actions if type(a).__name__ == "RegisterEventHandler"]
    assert [n.kwargs["name"] for n in nodes] == [s.name for s in graph_for(robot, LIVE)]
    assert len(handlers) == len(nodes)
    for node, handler in zip(nodes, handlers):
        on_exit = handler.args[0]
        assert type(on_exit).__name__ == "OnProcessExit" and on_exit.kwargs["target_action"] is node
        assert [type(a).__name__ for a in on_exit.kwargs["on_exit"]] == ["Shutdown"]
        assert node.kwargs["arguments"] == ["--ros-args", "--log-level", "debug"]
        assert any(str(p).endswith(f"robots/{robot}.yaml") for p in node.kwargs["parameters"])


def test_a_record_directory_holding_a_bag_is_refused_and_an_empty_one_records(load: Any, tmp_path: Path) -> None:
    module = load("monologue.launch.py")
    used = tmp_path / "used"
    used.mkdir()
    (used / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    assert record_dir_error(used) is not None and record_dir_error(tmp_path / "new") is None
    assert record_dir_error("") is None and record_dir_error(None) is None
    with pytest.raises(RuntimeError, match="already holds a bag"):
        module._nodes(_context(record=str(used)))
    actions = module._nodes(_context(record=str(tmp_path / "new")))
    nodes = {a.kwargs["name"]: a for a in actions if type(a).__name__ == "Node"}
    assert next(iter(nodes)) == "recorder"  # before anything publishes
    recorder_params = nodes["recorder"].kwargs["parameters"][-1]
    assert recorder_params["output"] == str((tmp_path / "new").resolve())
    assert nodes["planner"].kwargs["parameters"][-1]["llm.cassette_mode"] == "record"


def test_scene_sets_the_scene_nodes_sim_scene(load: Any) -> None:
    """scene:= (Statler's domains) goes to the robot's scene node; a robot without a scene refuses it."""
    from monologue_bringup.up import scene_params

    nodes = {a.kwargs["name"]: a for a in load("monologue.launch.py")._nodes(
        _context(robot="sim_kinematic", scene="disinfection")) if type(a).__name__ == "Node"}
    assert {"sim.scene": "disinfection"} in nodes["skills"].kwargs["parameters"]
    assert {"sim.scene": "disinfection"} not in nodes["planner"].kwargs["parameters"]
    assert scene_params("sim", "covers") == {"tabletop_sim": {"sim.scene": "covers"}} and scene_params("sim", "") == {}
    with pytest.raises(ValueError, match="no simulated scene"):
        scene_params("ur5e", "covers")
    assert main(["robot:=ur5e", "scene:=covers"]) == 2


def test_sim_launch_passes_every_argument_through(load: Any) -> None:
    description = load("sim.launch.py").generate_launch_description()
    declared = _declared(description)
    assert list(declared) == [a.name for a in LAUNCH_ARGUMENTS]
    assert declared["robot"].kwargs["default_value"] == "sim" and declared["robot"].kwargs["choices"] == list(ROBOTS)
    include = next(e for e in description.args[0] if type(e).__name__ == "IncludeLaunchDescription")
    assert include.args[0].args[0] == str(LAUNCH / "monologue.launch.py")
    passed = dict(include.kwargs["launch_arguments"])
    assert set(passed) == set(declared)
    for name, value in passed.items():  # the user's value, not a fixed one
        assert isinstance(value, LaunchConfiguration) and value.args == (name,)


def test_monologue_up_takes_the_same_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values, rest = launch_values(["robot:=sim_kinematic", "log_level:=debug", "--param", "planner:max_steps=2"])
    assert values == {"robot": "sim_kinematic", "llm": "embedded", "log_level": "debug", "record": "", "scene": "",
                      "web": "false", "foxglove": "false", "secure": "false", "keystore": "", "fake": "false",
                      "preflight": "true"}
    assert rest == ["--param", "planner:max_steps=2"]
    with pytest.raises(ValueError, match="not one of"):
        launch_values(["robot:=r2d2"])
    assert main(["robot:=r2d2"]) == 2
    used = tmp_path / "bag"
    used.mkdir()
    (used / "run_0.mcap").write_bytes(b"")
    assert main([f"record:={used}"]) == 2
    assert "already holds a bag" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # one spelling: log_level:=, not --log-level
        main(["--log-level", "debug"])
    assert exc.value.code == 2


def test_package_xml_depends_on_every_package_the_graph_starts() -> None:
    import xml.etree.ElementTree as ET

    from monologue_bringup.graph import all_nodes

    root = ET.parse(REPO / "src" / "monologue_bringup" / "package.xml").getroot()
    exec_depends = {e.text for e in root.iter("exec_depend")}
    started = {s.package for robot in ROBOTS for s in all_nodes(robot)}
    assert started <= exec_depends, sorted(started - exec_depends)
    assert {"launch", "launch_ros", "monologue_common", "monologue_interfaces"} <= exec_depends
    assert "monologue_eval" not in exec_depends  # eval depends on the bring-up, not the reverse


class _FakeGraph:
    """A GraphRun stand-in: start() may fail; dead() reports `exits` from its `after`-th call on."""

    def __init__(self, exits: dict[str, int], after: int = 2, start_error: str = "",
                 final: dict[str, int] | None = None) -> None:
        self.exits, self.after, self.start_error, self.final = exits, after, start_error, final or {}
        self.polls, self.stopped = 0, False

    def start(self) -> _FakeGraph:
        if self.start_error:
            raise RuntimeError(self.start_error)
        return self

    def dead(self) -> dict[str, int]:
        self.polls += 1
        return dict(self.exits) if self.polls >= self.after else {}

    def stop(self) -> dict[str, int]:
        self.stopped = True
        return dict(self.final)


@pytest.fixture()
def keep_signals() -> Iterator[None]:
    import signal

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def test_run_until_signal_stops_the_graph_when_a_node_exits(keep_signals: None,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from monologue_bringup.up import run_until_signal

    seen: list[dict[str, int]] = []
    g = _FakeGraph({"bag_player": 0})
    assert run_until_signal(g, "prog", lambda dead: seen.append(dead) or 7) == 7  # type: ignore[arg-type, func-returns-value]
    assert seen == [{"bag_player": 0}] and g.polls == 2 and g.stopped
    broken = _FakeGraph({}, start_error="perception failed to load")
    assert run_until_signal(broken, "prog", lambda dead: 0) == 1  # type: ignore[arg-type]
    assert broken.stopped and "prog: perception failed to load" in capsys.readouterr().err


def test_wait_for_fails_with_the_log_when_a_node_exits_or_time_is_up() -> None:
    from monologue_bringup.testing import wait_for

    wait_for("nothing", lambda: True, 0.0, _FakeGraph({}), [])  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match=r"node\(s\) exited: \{'planner': 1\}\nthe last line"):
        wait_for("the scene", lambda: False, 60.0, _FakeGraph({"planner": 1}, after=1), ["the last line"])  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="timed out waiting for the scene"):
        wait_for("the scene", lambda: False, 0.0, _FakeGraph({}, after=10**9), [])  # type: ignore[arg-type]


def test_running_stops_the_graph_then_checks_exit_codes_and_secrets() -> None:
    from monologue_bringup.testing import running

    calls: list[str] = []
    g = _FakeGraph({}, final={"skills": -15})
    with running(g, ["a line"], then=lambda: calls.append("fake stopped"), secret="pw"):  # type: ignore[arg-type]
        inside = g.stopped
    assert not inside and g.stopped and calls == ["fake stopped"]
    with pytest.raises(AssertionError, match="'planner': 1"):
        with running(_FakeGraph({}, final={"planner": 1}), []):  # type: ignore[arg-type]
            pass
    with pytest.raises(AssertionError):
        with running(_FakeGraph({}), ["login pw=hunter2"], secret="hunter2"):  # type: ignore[arg-type]
            pass


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl tool is not installed")
def test_launch_file_puts_each_node_in_its_enclave(tmp_path: Path, load: Any) -> None:
    """secure:=true: each node in its enclave of keystore:=, with the Enforce environment; a
    keystore without a node's enclave is refused before anything starts."""
    from monologue_bringup.keystore import create_keystore, graph_node_names

    keystore, full = tmp_path / "part", tmp_path / "full"
    create_keystore(keystore, ["planner"], 84, days=1)
    module = load("monologue.launch.py")
    with pytest.raises(RuntimeError, match="/monologue/perception"):
        module._nodes(_context(robot="sim_kinematic", secure="true", keystore=str(keystore)))
    create_keystore(full, graph_node_names(REPO / "config"), 84, days=1)
    nodes = {a.kwargs["name"]: a for a in module._nodes(
        _context(robot="sim_kinematic", secure="true", keystore=str(full))) if type(a).__name__ == "Node"}
    for name, node in nodes.items():
        assert node.kwargs["arguments"][-2:] == ["--enclave", f"/monologue/{name}"]
        assert node.kwargs["additional_env"]["ROS_SECURITY_STRATEGY"] == "Enforce"
        assert node.kwargs["additional_env"]["ROS_SECURITY_ENCLAVE_OVERRIDE"] == f"/monologue/{name}"
    plain = [a for a in module._nodes(_context(robot="sim_kinematic")) if type(a).__name__ == "Node"]
    assert all("additional_env" not in a.kwargs and "--enclave" not in a.kwargs["arguments"] for a in plain)


class Exit:
    def __init__(self, returncode: int) -> None:
        self.returncode = returncode


@pytest.mark.parametrize("robot", ["ur5e", "spot"])
def test_a_real_robots_nodes_start_only_after_the_preflight_passes(load: Any, robot: str) -> None:
    actions = load("monologue.launch.py")._nodes(_context(robot=robot))
    check, handler = actions
    assert type(check).__name__ == "ExecuteProcess" and check.kwargs["cmd"][0].endswith("monologue-check")
    assert check.kwargs["cmd"][1:] == [f"robot:={robot}", "llm:=embedded"]
    then = handler.args[0].kwargs["on_exit"]
    started = [a.kwargs["name"] for a in then(Exit(0), {}) if type(a).__name__ == "Node"]
    assert started == [s.name for s in graph_for(robot, LIVE)]
    assert [type(a).__name__ for a in then(Exit(1), {})] == ["Shutdown"]  # a failed check starts nothing
    sim = load("monologue.launch.py")._nodes(_context(robot="sim_kinematic"))
    assert not any(type(a).__name__ == "ExecuteProcess" for a in sim)  # simulated robots: no preflight


def test_the_launch_files_dry_run_starts_the_fakes_first_and_the_nodes_wait_for_them(load: Any) -> None:
    actions = load("monologue.launch.py")._nodes(_context(robot="spot", fake="true"))
    names = [a.kwargs.get("name") for a in actions if type(a).__name__ in ("Node", "ExecuteProcess")]
    assert names[0] == "fake_spot" and "skills" in names
    fake = actions[0]
    ready = fake.kwargs["cmd"][fake.kwargs["cmd"].index("--ready-file") + 1]
    skills = next(a for a in actions if type(a).__name__ == "Node" and a.kwargs["name"] == "skills")
    assert ready in skills.kwargs["prefix"] and "wait_ready" in skills.kwargs["prefix"]
    assert skills.kwargs["additional_env"]["BOSDYN_CLIENT_USERNAME"]
    with pytest.raises(ValueError, match="already simulated"):
        load("monologue.launch.py")._nodes(_context(robot="sim", fake="true"))
