"""`fake_ur_truth`: the dry run's tabletop truth for perception's oracle detector (robot:=ur5e fake:=true).

    fake_ur_truth --scene SCENE.json [--state-file STATE.json] [--topic sim/ground_truth] [--frame base]

Publishes the fake tabletop's objects (SceneDescription, frame `base`, the controller's) at 5 Hz: from the fake UR
controller's --state-file when it writes one (objects as the simulated arm moved them), else where --scene puts
them (fake_rtde's schema: objects [{name, x, y, size, liftable}], on the table at z = 0). The oracle detector
projects them into the (fake) camera's images and grounds them in its depth; nothing else reads them.
A test double: never run it beside a real robot.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from monologue_domain.scene import SceneObject

PERIOD_S = 0.2  # s between messages
COLOURS = ("red", "green", "blue", "yellow")


def truth_objects(scene: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> list[SceneObject]:
    """The objects of `scene` (fake_rtde's schema), at the positions of the controller's `state` when given
    (its "objects": name, x, y, z, size; m). A bowl's position is its base's centre, a block's its centre."""
    where = {str(o["name"]): o for o in (state or {}).get("objects", [])}
    out: list[SceneObject] = []
    for o in scene.get("objects", []):
        name = str(o["name"])
        category = name.split()[-1] if name.split()[-1] in ("block", "bowl") else "object"
        size = float(o.get("size", 0.04))
        height = size if category == "block" else size / 3.0  # m: a cube, a shallow bowl
        w = where.get(name, {})
        z = float(w["z"]) if "z" in w else (height / 2.0 if category == "block" else 0.0)
        colour = next((c for c in COLOURS if name.startswith(c)), "")
        out.append(SceneObject(name, category, (float(w.get("x", o["x"])), float(w.get("y", o["y"])), z),
                               (size, size, height), color=colour))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fake_ur_truth", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", type=Path, required=True)
    ap.add_argument("--state-file", type=Path, default=None)
    ap.add_argument("--topic", default="sim/ground_truth")
    ap.add_argument("--frame", default="base")
    ns = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    scene = json.loads(ns.scene.read_text())

    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    from monologue_common.qos import LATCHED
    from monologue_domain.msgs import scene_object_to_msg
    from monologue_interfaces.msg import SceneDescription

    context = Context()
    rclpy.init(context=context)
    node = Node("fake_ur_truth", context=context)
    pub = node.create_publisher(SceneDescription, ns.topic, LATCHED)

    def publish() -> None:
        state = None
        if ns.state_file is not None and ns.state_file.is_file():
            try:
                state = json.loads(ns.state_file.read_text())
            except (OSError, ValueError):
                state = None  # mid-rename: the next tick reads it
        msg = SceneDescription()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.header.frame_id, msg.source = ns.frame, "ground_truth"
        msg.objects = [scene_object_to_msg(o, msg.header) for o in truth_objects(scene, state)]
        pub.publish(msg)

    node.create_timer(PERIOD_S, publish)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.1)
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=context)
    return 0


if __name__ == "__main__":
    sys.exit(main())
