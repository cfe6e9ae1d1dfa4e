"""Simulated tabletop with the embedded LLM: `ros2 launch monologue_bringup sim.launch.py [robot:=...] [...]`.

monologue.launch.py with its defaults (robot:=sim, llm:=embedded): every argument given here
(robot, llm, log_level, record) is passed through unchanged.
"""
import os

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration

from launch import LaunchDescription
from monologue_bringup.up import LAUNCH_ARGUMENTS


def generate_launch_description():
    here = os.path.dirname(os.path.abspath(__file__))  # installed next to monologue.launch.py
    declared = [
        DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                              **({"choices": list(a.choices)} if a.choices else {}))
        for a in LAUNCH_ARGUMENTS
    ]
    return LaunchDescription(declared + [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(here, "monologue.launch.py")),
            launch_arguments={a.name: LaunchConfiguration(a.name) for a in LAUNCH_ARGUMENTS}.items(),
        ),
    ])
