"""The installed ROS interface packages' message definitions (ament index; no rclpy)."""
from __future__ import annotations

from pathlib import Path

from monologue_common.core.msgdefs import MessageDefinitions


def share_dir(package: str) -> Path:
    """Installed share directory of `package`; KeyError if it is not installed."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        return Path(get_package_share_directory(package))
    except PackageNotFoundError as e:
        raise KeyError(package) from e


def installed_definitions() -> MessageDefinitions:
    """Definitions (`.msg` texts, ros2msg schemas) read from the installed interface packages (needs the
    ROS environment: `. scripts/env.sh`)."""
    return MessageDefinitions(share_dir)
