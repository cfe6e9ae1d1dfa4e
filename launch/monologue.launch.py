"""Bring up the Inner Monologue graph on a full ROS 2 install.

    ros2 launch monologue_bringup monologue.launch.py robot:=sim llm:=embedded

The node list and parameter files come from monologue_bringup.graph, the same description that
`monologue-up` uses on pip-only machines.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from monologue_bringup.graph import LLMS, ROBOTS, default_config_dir, graph_for, node_overrides, params_files


def _nodes(context, *args, **kwargs):
    robot = LaunchConfiguration("robot").perform(context)
    llm = LaunchConfiguration("llm").perform(context)
    log_level = LaunchConfiguration("log_level").perform(context)
    config_dir = default_config_dir()
    files = [str(f) for f in params_files(config_dir, robot, llm)]
    return [
        Node(
            package=spec.package,
            executable=spec.executable,
            name=spec.name,
            output="screen",
            parameters=files + [node_overrides(spec, config_dir)],
            arguments=["--ros-args", "--log-level", log_level],
        )
        for spec in graph_for(robot)
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="sim", choices=list(ROBOTS),
                              description="Which robot backend to drive"),
        DeclareLaunchArgument("llm", default_value="embedded", choices=list(LLMS),
                              description="LLM backend: embedded Gemma 3 270M or an OpenAI-compatible server"),
        DeclareLaunchArgument("log_level", default_value="info", description="ROS log level"),
        OpaqueFunction(function=_nodes),
    ])
