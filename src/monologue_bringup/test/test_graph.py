"""One graph description drives the launch file and `monologue-up`."""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest
import yaml

from monologue_bringup.graph import (
    EXPERT,
    GRAPH,
    LIVE,
    LLMS,
    REPLAY,
    ROBOTS,
    all_nodes,
    camera_node,
    find,
    graph_for,
    params_files,
    parse_launch_args,
    record_params,
    robot_entry,
    robot_params,
    robots,
    ros_args,
    scene_node,
    select,
    simulated_robots,
)
from monologue_bringup.up import Supervisor, parse_node_params

CONFIG = Path(__file__).resolve().parents[3] / "config"
LAUNCH_FILE = CONFIG.parent / "launch" / "monologue.launch.py"


def test_graph_has_the_nodes() -> None:
    assert [s.name for s in GRAPH] == ["recorder", "skills", "perception", "success_detector", "planner", "viz",
                                       "bag_player", "web", "foxglove_bridge"]
    assert find("planner").package == "planner_node"
    with pytest.raises(KeyError):
        find("nope")
    # the physics simulator runs only for robot:=sim, the RealSense driver only for ur5e, before the rest
    assert [s.name for s in graph_for("sim")] == ["tabletop_sim", *[s.name for s in select(LIVE)]]
    assert graph_for("sim_kinematic") == select(LIVE)
    assert [s.name for s in graph_for("ur5e")] == ["camera", *[s.name for s in select(LIVE)]]
    assert (find("camera").package, find("camera").executable) == ("perception_node", "realsense_publisher")
    assert "camera" not in {s.name for s in graph_for("ur5e", REPLAY)}  # a bag holds its images
    with pytest.raises(ValueError):
        graph_for("r2d2")


def test_the_robot_table_decides_backend_camera_perception_and_success() -> None:
    """One vocabulary: a robot name; its entry names the skills plug-in, camera, perception source and
    success judge, and the graph passes them to the nodes (after the parameter files)."""
    assert ROBOTS == robots() == ("sim", "sim_kinematic", "ur5e", "sim_kitchen", "sim_household", "spot",
                                 "spot_realsense")
    assert simulated_robots() == ("sim", "sim_kinematic", "sim_kitchen", "sim_household")
    assert robot_entry("sim_kitchen").world == "kitchen" and robot_entry("ur5e").world == "tabletop"
    assert robot_params("ur5e") == {"skills": {"backend": "ur5e"}, "perception": {"source": "camera"},
                                    "success_detector": {"judge": "tabletop"}}
    assert robot_params("sim")["skills"] == {"backend": "mujoco"}
    assert robot_params("sim_kinematic")["skills"] == {"backend": "kinematic"}
    assert (camera_node("ur5e"), camera_node("sim"), camera_node("sim_kinematic")) == ("camera", "tabletop_sim", "")
    assert (scene_node("sim"), scene_node("sim_kinematic")) == ("tabletop_sim", "skills")
    with pytest.raises(ValueError, match="no simulated scene"):
        scene_node("ur5e")
    args = ros_args(find("perception"), CONFIG, "ur5e", "embedded", {"score_threshold": "0.2"})
    assert args[-4:] == ["-p", "source:=camera", "-p", "score_threshold:=0.2"]
    assert "backend:=kinematic" in ros_args(find("skills"), CONFIG, "sim_kinematic", "embedded")
    # the table is the only place: no robot's parameter file (nor the skills section) sets what it decides
    for robot in ROBOTS:
        for f in params_files(CONFIG, robot, "embedded"):
            data = yaml.safe_load(f.read_text())
            if f.name == "monologue.yaml":
                data = {"skills": data["skills"]}
            for node, decided in robot_params(robot).items():
                params = (data.get(node) or {}).get("ros__parameters", {})
                assert not set(decided) & set(params), f"{f}: {node} sets {set(decided) & set(params)}"


def test_a_broken_robot_table_is_refused_with_every_problem() -> None:
    from monologue_domain.robots import parse_robots

    with pytest.raises(ValueError) as e:
        parse_robots({"robots": {"spot": {"description": "d", "skills_backend": "spot", "perception": "lidar",
                                          "success": "tabletop", "camera": "cam"}}})
    assert "perception: must be one of" in str(e.value) and "'cam' is not one of its nodes" in str(e.value)
    with pytest.raises(ValueError, match="needs a non-empty"):
        parse_robots({})
    base = {"description": "d", "skills_backend": "spot", "perception": "oracle", "success": "skill_result"}
    with pytest.raises(ValueError) as e:  # a variant extends a robot that exists and extends none
        parse_robots({"robots": {"a": {**base, "extends": "b"}, "b": {**base, "extends": "c"}, "c": base,
                                 "d": {**base, "extends": "nobody"}}})
    assert "robots.a.extends" in str(e.value) and "robots.d.extends" in str(e.value)
    assert "robots.b.extends" not in str(e.value)


def test_a_variant_loads_its_base_robots_file_first() -> None:
    files = params_files(CONFIG, "spot_realsense", "embedded")
    assert [f.relative_to(CONFIG).as_posix() for f in files] == [
        "monologue.yaml", "robots/spot.yaml", "robots/spot_realsense.yaml", "llm/embedded.yaml"]


def test_live_replay_and_recording_select_from_the_one_list() -> None:
    assert [s.name for s in select(LIVE)] == ["skills", "perception", "success_detector", "planner", "viz"]
    assert [s.name for s in select(LIVE, web=True)][-1] == "web"  # web:=true (off by default)
    assert "web" in {s.name for s in graph_for("ur5e", LIVE, web=True)} - {s.name for s in graph_for("ur5e")}
    # foxglove:=true (off by default), in live runs and replays alike
    assert [s.name for s in select(LIVE, foxglove=True)][-1] == "foxglove_bridge"
    assert {s.name for s in graph_for("sim", REPLAY, foxglove=True)} - {s.name for s in graph_for("sim", REPLAY)} == {
        "foxglove_bridge"}
    assert "foxglove_bridge" not in {s.name for s in graph_for("sim", LIVE, record=True, web=True)}
    assert [s.name for s in select(LIVE, record=True)][0] == "recorder"
    # a bag stands in for the robot or simulator: everything that consumes it runs as recorded
    assert [s.name for s in select(REPLAY)] == ["perception", "success_detector", "planner", "viz", "bag_player"]
    assert "recorder" in {s.name for s in select(REPLAY, record=True)}
    with pytest.raises(ValueError):
        select("dream")


def test_recording_puts_cassette_and_transcripts_next_to_the_bag(tmp_path: Path) -> None:
    p = record_params(tmp_path / "bag", LIVE, **{"monologue.robot": "sim"})
    assert p["recorder"] == {"output": str(tmp_path / "bag"), "custom_data": '["monologue.robot=sim"]'}
    assert p["planner"] == {"transcript_dir": str(tmp_path / "bag" / "transcripts"), "llm.cassette_mode": "record",
                            "llm.cassette_path": str(tmp_path / "bag" / "llm_cassette.jsonl")}
    assert "llm.cassette_mode" not in record_params(tmp_path, REPLAY)["planner"]  # a replay keeps replaying
    sup = Supervisor(config_dir=CONFIG, record=tmp_path / "bag", node_params={"planner": {"max_steps": "3"}})
    assert [s.name for s in sup.specs][0] == "recorder"
    assert sup.node_params["planner"]["max_steps"] == "3" and "llm.cassette_path" in sup.node_params["planner"]
    with pytest.raises(ValueError, match=r"keeps the planner's \['transcript_dir'\] in the bag"):
        Supervisor(config_dir=CONFIG, record=tmp_path / "bag2", node_params={"planner": {"transcript_dir": "/x"}})
    assert [s.name for s in Supervisor(config_dir=CONFIG).specs] == [s.name for s in graph_for("sim")]
    assert [s.name for s in Supervisor("sim_kinematic", config_dir=CONFIG).specs] == [s.name for s in select(LIVE)]
    web = Supervisor("sim_kinematic", config_dir=CONFIG, web=True, node_params={"planner": {"transcript_dir": "/t"}})
    assert web.specs[-1].name == "web" and web.node_params["web"] == {"transcript_dir": "/t"}  # history follows
    assert Supervisor("sim_kinematic", config_dir=CONFIG, foxglove=True).specs[-1].name == "foxglove_bridge"
    # recorded: the recorder starts first; replayed: the simulator and skills stay off
    assert [s.name for s in graph_for("sim", LIVE, record=True)][:2] == ["recorder", "tabletop_sim"]
    assert "tabletop_sim" not in {s.name for s in graph_for("sim", REPLAY)}


def test_every_node_has_a_config_section_and_every_section_a_node() -> None:
    names = {s.name for s in GRAPH}
    for robot in ROBOTS:
        robot_sections = {s.name for s in all_nodes(robot)} | {"/**"}  # /**: the shared llm block
        for llm in LLMS:
            if llm == EXPERT and not robot_entry(robot, CONFIG).simulated:
                with pytest.raises(ValueError, match="not simulated"):  # the stand-in never drives a real robot
                    params_files(CONFIG, robot, llm)
                continue
            for f in params_files(CONFIG, robot, llm):
                data = yaml.safe_load(f.read_text())
                assert set(data) <= robot_sections, f"{f}: sections {set(data) - robot_sections} are not nodes"
                for section in data.values():
                    assert "ros__parameters" in section
    assert set(yaml.safe_load((CONFIG / "monologue.yaml").read_text())) == names


def test_ros_args_carry_params_files_in_override_order() -> None:
    args = ros_args(find("planner"), CONFIG, "sim", "embedded", {"max_steps": "3"})
    files = [args[i + 1] for i, a in enumerate(args) if a == "--params-file"]
    assert [Path(f).name for f in files] == ["monologue.yaml", "sim.yaml", "embedded.yaml"]
    assert args[:3] == ["--ros-args", "-r", "__node:=planner"]
    assert f"prompt_dir:={CONFIG / 'prompts'}" in args and "max_steps:=3" in args


def test_unknown_robot_or_llm_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown robot"):
        params_files(CONFIG, "r2d2", "embedded")
    with pytest.raises(ValueError, match="unknown llm"):
        params_files(CONFIG, "sim", "gpt-9")


def test_launch_style_arguments() -> None:
    values, rest = parse_launch_args(["robot:=sim", "--log-level", "debug"], {"robot": "x", "llm": "y"})
    assert values == {"robot": "sim", "llm": "y"} and rest == ["--log-level", "debug"]
    with pytest.raises(ValueError, match="unknown argument"):
        parse_launch_args(["colour:=red"], {"robot": "x"})
    assert parse_node_params(["skills:sim.seed=3", "planner:max_steps=2"]) == {
        "skills": {"sim.seed": "3"}, "planner": {"max_steps": "2"}}
    with pytest.raises(ValueError):
        parse_node_params(["bad"])


def test_launch_file_builds_nodes_from_the_graph_description() -> None:
    tree = ast.parse(LAUNCH_FILE.read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "monologue_bringup.graph"
                for a in n.names}
    assert {"graph_for", "params_files", "node_overrides"} <= imported
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not literals & {s.package for s in graph_for("sim")}, "the launch file must not list nodes itself"


def test_supervisor_stops_children_and_reports_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that ignores SIGINT is escalated to SIGTERM; output lines are prefixed."""
    script = tmp_path / "fake_node"
    script.write_text(
        "#!" + sys.executable + "\n"
        "import signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n")
    script.chmod(0o755)
    monkeypatch.setattr("monologue_bringup.up.executable_path", lambda spec: script)
    lines: list[str] = []
    sup = Supervisor(config_dir=CONFIG, nodes=["skills"], sink=lines.append)
    sup.start()
    import time
    deadline = time.monotonic() + 10
    while "[skills] ready" not in lines and time.monotonic() < deadline:
        time.sleep(0.05)
    codes = sup.stop(timeout_s=0.5)
    assert "[skills] ready" in lines
    assert codes == {"skills": -15}
    with pytest.raises(ValueError, match="unknown nodes"):
        Supervisor(config_dir=CONFIG, node_params={"ghost": {"a": "1"}})


def test_rviz_layout_shows_camera_tf_detections_scene_and_transcript() -> None:
    rviz = yaml.safe_load((CONFIG / "monologue.rviz").read_text())
    manager = rviz["Visualization Manager"]
    displays = {d["Class"]: d for d in manager["Displays"] if d["Class"] != "rviz_default_plugins/MarkerArray"}
    markers = {d["Topic"]["Value"] for d in manager["Displays"] if d["Class"] == "rviz_default_plugins/MarkerArray"}
    assert "rviz_default_plugins/TF" in displays
    assert displays["rviz_default_plugins/Image"]["Topic"]["Value"] == "/camera/color/image_raw"
    assert markers == {"/perception/markers", "/monologue/scene_markers", "/monologue/markers"}
    viz = yaml.safe_load((CONFIG / "monologue.yaml").read_text())["viz"]["ros__parameters"]
    assert manager["Global Options"]["Fixed Frame"] == viz["frame_id"]
    recorded = yaml.safe_load((CONFIG / "monologue.yaml").read_text())["recorder"]["ros__parameters"]["topics"]
    assert markers <= set(recorded)  # what RViz shows is in every bag too


def test_perception_and_success_parameters_travel_in_the_bag() -> None:
    from monologue_bringup.graph import params_custom_data, params_from_custom_data

    params = {"perception": {"source": "camera", "candidates": "[red block, blue bowl]", "refresh_timeout": "8.0"},
              "success_detector": {"judge": "tabletop"}, "planner": {"transcript_dir": "/tmp/x"}}
    custom = params_custom_data(params)
    assert set(custom) == {"monologue.params.perception", "monologue.params.success_detector"}
    assert all(c not in v for v in custom.values() for c in ' ,"[]')  # safe inside custom_data's string list
    assert params_from_custom_data({**custom, "monologue.robot": "sim"}) == {
        "perception": params["perception"], "success_detector": params["success_detector"]}
    # what the robot table sets travels too (the recorded overrides win)
    ur5e = params_from_custom_data(params_custom_data({"perception": {"score_threshold": "0.2"}}, "ur5e"))
    assert ur5e == {"perception": {"source": "camera", "score_threshold": "0.2"},
                    "success_detector": {"judge": "tabletop"}}
    assert params_from_custom_data(params_custom_data(params, "sim"))["perception"]["source"] == "camera"


def test_nodes_get_the_fast_dds_profile_unless_one_is_set(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import xml.etree.ElementTree as ET

    from monologue_bringup.graph import dds_env
    from monologue_bringup.up import Supervisor

    config = Path(__file__).resolve().parents[3] / "config"
    profile = dds_env(config)["FASTRTPS_DEFAULT_PROFILES_FILE"]
    ns = "{http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles}"
    sizes = [int(e.text or 0) for e in ET.parse(profile).getroot().iter(f"{ns}segment_size")]
    assert sizes == [4 * 1024 * 1024]  # bytes: room for a few 640x480 RGB-D frames
    assert dds_env(tmp_path) == {}
    env = {k: v for k, v in os.environ.items() if k != "FASTRTPS_DEFAULT_PROFILES_FILE"}
    assert Supervisor("sim_kinematic", "embedded", config_dir=config, env=env).env[
        "FASTRTPS_DEFAULT_PROFILES_FILE"] == profile
    mine = Supervisor("sim_kinematic", "embedded", config_dir=config,
                      env={**env, "FASTRTPS_DEFAULT_PROFILES_FILE": "/etc/my.xml"})
    assert mine.env["FASTRTPS_DEFAULT_PROFILES_FILE"] == "/etc/my.xml"
