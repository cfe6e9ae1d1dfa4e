"""Bring up the Inner Monologue graph on a full ROS 2 install.

    ros2 launch monologue_bringup monologue.launch.py robot:=sim llm:=embedded [record:=<bag dir>]

The node list and parameter files come from monologue_bringup.graph, the same description that
`monologue-up` uses on pip-only machines.
"""
import os

from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from monologue_bringup.graph import (
    LIVE,
    LLMS,
    ROBOTS,
    dds_env,
    default_config_dir,
    graph_for,
    node_overrides,
    params_files,
    record_params,
)


def _nodes(context, *args, **kwargs):
    robot = LaunchConfiguration("robot").perform(context)
    llm = LaunchConfiguration("llm").perform(context)
    log_level = LaunchConfiguration("log_level").perform(context)
    record = LaunchConfiguration("record").perform(context)
    config_dir = default_config_dir()
    files = [str(f) for f in params_files(config_dir, robot, llm)]
    recording = record_params(record, LIVE, **{"monologue.robot": robot, "monologue.llm": llm}) if record else {}
    return [
        Node(
            package=spec.package,
            executable=spec.executable,
            name=spec.name,
            output="screen",
            parameters=files + [node_overrides(spec, config_dir), _typed(recording.get(spec.name, {}))],
            arguments=["--ros-args", "--log-level", log_level],
        )
        for spec in graph_for(robot, LIVE, record=bool(record))
    ]


def _typed(params):
    """record_params gives command-line strings; launch parameters need YAML values."""
    import yaml

    return {k: yaml.safe_load(v) for k, v in params.items()}


def generate_launch_description():
    dds = [SetEnvironmentVariable(k, v) for k, v in dds_env(default_config_dir()).items() if k not in os.environ]
    return LaunchDescription(dds + [
        DeclareLaunchArgument("robot", default_value="sim", choices=list(ROBOTS),
                              description="Which robot backend to drive"),
        DeclareLaunchArgument("llm", default_value="embedded", choices=list(LLMS),
                              description="LLM backend: embedded Gemma 3 270M or an OpenAI-compatible server"),
        DeclareLaunchArgument("log_level", default_value="info", description="ROS log level"),
        DeclareLaunchArgument("record", default_value="",
                              description="Record the run into this rosbag2 MCAP directory (empty: no recording)"),
        OpaqueFunction(function=_nodes),
    ])
