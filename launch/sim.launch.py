"""Simulated tabletop with the embedded LLM: `ros2 launch monologue_bringup sim.launch.py`."""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

from launch import LaunchDescription


def generate_launch_description():
    share = get_package_share_directory("monologue_bringup")
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, "launch", "monologue.launch.py")),
            launch_arguments={"robot": "sim"}.items(),
        ),
    ])
