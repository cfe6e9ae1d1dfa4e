"""Bring up the Inner Monologue graph on a full ROS 2 install.

    ros2 launch monologue_bringup monologue.launch.py [robot:=sim] [llm:=embedded] [log_level:=info]
                                                      [record:=<bag dir>] [web:=true] [foxglove:=true]
                                                      [secure:=true keystore:=<dir>] [fake:=true]
                                                      [preflight:=false]

The node list and parameter files come from monologue_bringup.graph and the launch arguments from
monologue_bringup.up.LAUNCH_ARGUMENTS: the same description and arguments as `monologue-up` on
pip-only machines. As there, a node that exits ends the whole launch, and a record:= directory that
already holds a bag is refused. secure:=true runs each node in its SROS2 enclave (/monologue/<node>)
of keystore:= (docs/security.md); a missing keystore or enclave is refused before anything starts.
fake:=true is the dry run of a real robot (monologue_bringup.dryrun): its fakes start as processes and the
nodes wait until they serve. On a real robot the preflight (monologue-check) runs first and the nodes start
only when it passes (preflight:=false skips it); for a dry run, run `monologue-check robot:=<robot> fake:=true`
first, or use monologue-up, which runs it between the fakes and the nodes.
"""
import os
import sys
import tempfile
from pathlib import Path

from launch.actions import (
    DeclareLaunchArgument,
    ExecuteProcess,
    OpaqueFunction,
    RegisterEventHandler,
    SetEnvironmentVariable,
    Shutdown,
)
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from monologue_bringup.dryrun import SPOT_PORT, fake_command, free_port
from monologue_bringup.dryrun import plan as dryrun_plan
from monologue_bringup.graph import (
    EXPERT,
    LIVE,
    dds_env,
    default_config_dir,
    expert_params,
    graph_for,
    node_overrides,
    params_custom_data,
    params_files,
    record_params,
    robot_entry,
)
from monologue_bringup.security import enclave_args, enclave_name, keystore_problems, security_env
from monologue_bringup.up import LAUNCH_ARGUMENTS, record_dir_error, scene_params, security_keystore


def _nodes(context, *args, **kwargs):
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in LAUNCH_ARGUMENTS}
    robot, llm, log_level, record = values["robot"], values["llm"], values["log_level"], values["record"]
    error = record_dir_error(record)
    if error:
        raise RuntimeError(f"record:={record}: {error}")
    config_dir = default_config_dir()
    files = [str(f) for f in params_files(config_dir, robot, llm)]
    custom = {"monologue.robot": robot, "monologue.llm": llm, "monologue.mode": LIVE,
              **params_custom_data({}, robot, config_dir)}
    recording = record_params(record, LIVE, **custom) if record else {}
    scene = scene_params(robot, values["scene"], config_dir)  # scene:= (Statler's domains)
    if llm == EXPERT:  # the stand-in's side channel: a fresh directory the simulator writes, the planner reads
        for name, params in expert_params(robot, tempfile.mkdtemp(prefix="monologue-expert-"), config_dir).items():
            scene.setdefault(name, {}).update(params)
    specs = graph_for(robot, LIVE, record=bool(record), config_dir=config_dir, web=values["web"] == "true",
                      foxglove=values["foxglove"] == "true")
    keystore = security_keystore(values)  # secure:=true: each node in its enclave, or nothing starts
    if keystore is not None:
        problems = keystore_problems(keystore, [s.name for s in specs])
        if problems:
            raise RuntimeError(f"secure:=true keystore:={keystore}: {'; '.join(problems)}")
    actions = []
    dry = None
    if values["fake"] == "true":  # the dry run: the fakes as processes, the nodes start once they serve
        from ament_index_python.packages import get_package_prefix

        dry = dryrun_plan(robot, tempfile.mkdtemp(prefix="monologue-dryrun-"), config_dir, dict(os.environ),
                          spot_port=free_port(SPOT_PORT))
        dry.write_files()
        for p in dry.processes:
            fake = ExecuteProcess(cmd=fake_command(p, Path(get_package_prefix(p.package))), name=p.name,
                                  output="screen", additional_env=dry.node_env.get(p.name, {}))
            actions += [fake, RegisterEventHandler(OnProcessExit(
                target_action=fake, on_exit=[Shutdown(reason=f"fake {p.name} exited; stopping the graph")]))]
        for name, params in dry.node_params.items():
            scene.setdefault(name, {}).update(params)
    ready = [p.ready_file for p in dry.processes if p.ready_file] if dry is not None else []
    for spec in specs:
        # the override too: one inherited from the shell would otherwise win over --enclave
        secured = ({"additional_env": {**security_env(keystore), "ROS_SECURITY_ENCLAVE_OVERRIDE": enclave_name(spec.name)}}
                   if keystore is not None else {})
        if dry is not None and dry.node_env.get(spec.name):
            secured["additional_env"] = {**secured.get("additional_env", {}), **dry.node_env[spec.name]}
        node = Node(
            package=spec.package,
            executable=spec.executable,
            name=spec.name,
            output="screen",
            parameters=files + [node_overrides(spec, config_dir, robot), scene.get(spec.name, {}),
                                _typed(recording.get(spec.name, {}))],
            arguments=["--ros-args", "--log-level", log_level,
                       *(enclave_args(spec.name) if keystore is not None else [])],
            **secured,
            **({"prefix": f"{sys.executable} -m monologue_bringup.wait_ready --timeout 60 {' '.join(ready)} --"}
               if ready else {}),
        )
        # A node that exits (crash or not) ends the whole graph, as in monologue-up.
        stop = Shutdown(reason=f"node {spec.name} exited; stopping the graph")
        actions += [node, RegisterEventHandler(OnProcessExit(target_action=node, on_exit=[stop]))]
    if dry is None and values["preflight"] == "true" and not robot_entry(robot, config_dir).simulated:
        return _after_preflight(actions, robot, llm)
    return actions


def _after_preflight(actions, robot, llm):
    """A real robot: monologue-check runs first; the nodes start only when it passes (preflight:=false skips it)."""
    from ament_index_python.packages import get_package_prefix

    exe = Path(get_package_prefix("monologue_bringup")) / "lib" / "monologue_bringup" / "monologue-check"
    check = ExecuteProcess(cmd=[str(exe), f"robot:={robot}", f"llm:={llm}"], name="preflight", output="screen")

    def then(event, context):
        if event.returncode == 0:
            return actions
        return [Shutdown(reason="preflight failed (the FAIL lines above say how to fix each); preflight:=false skips it")]

    return [check, RegisterEventHandler(OnProcessExit(target_action=check, on_exit=then))]


def _typed(params):
    """record_params gives command-line strings; launch parameters need YAML values."""
    import yaml

    return {k: yaml.safe_load(v) for k, v in params.items()}


def declare_arguments():
    """DeclareLaunchArgument for every entry of LAUNCH_ARGUMENTS (sim.launch.py declares the same)."""
    return [
        DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                              **({"choices": list(a.choices)} if a.choices else {}))
        for a in LAUNCH_ARGUMENTS
    ]


def generate_launch_description():
    dds = [SetEnvironmentVariable(k, v) for k, v in dds_env(default_config_dir()).items() if k not in os.environ]
    return LaunchDescription(dds + declare_arguments() + [OpaqueFunction(function=_nodes)])
