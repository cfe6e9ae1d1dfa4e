"""`fake_spot`: the fake Spot (FakeSpot hosting a FakeKitchen) as a process, for the dry run (`fake:=true`).

    fake_spot [--port 44300] [--ca-cert PATH] [--ready-file PATH] [--start '{"coke": "far counter"}']
              [--location "far counter"] [--ground-truth-topic sim/ground_truth] [--time-scale 1.0]

Serves Spot's gRPC API over TLS on 127.0.0.1:<port> for the real bosdyn-client; the account is
$BOSDYN_CLIENT_USERNAME / $BOSDYN_CLIENT_PASSWORD (the same the skills node reads). Copies the fake's CA certificate
to --ca-cert, then creates --ready-file. With --ground-truth-topic (default) it also publishes the kitchen's truth
(frame odom) for perception's oracle detector, which projects it into the hand camera's images. Runs until SIGINT or
SIGTERM. Never point a real robot's configuration at it; it is a test double.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

GT_PERIOD_S = 0.2  # s between ground-truth messages


def _ground_truth_publisher(fake: Any, topic: str) -> Callable[[], None]:
    """Publish the fake world's truth on `topic` from a thread; returns the function that stops it."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    from monologue_common.qos import LATCHED
    from monologue_domain.msgs import scene_object_to_msg
    from monologue_interfaces.msg import SceneDescription

    context = Context()
    rclpy.init(context=context)
    node = Node("fake_spot", context=context)
    pub = node.create_publisher(SceneDescription, topic, LATCHED)

    def publish() -> None:
        msg = SceneDescription()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.header.frame_id, msg.source = "odom", "ground_truth"
        msg.objects = [scene_object_to_msg(o, msg.header) for o in fake.world.ground_truth()]
        pub.publish(msg)

    node.create_timer(GT_PERIOD_S, publish)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()

    def stop() -> None:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.shutdown(context=context)
        thread.join(timeout=2.0)

    return stop


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fake_spot", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=44300, help="TLS port on 127.0.0.1 (0: any free port)")
    ap.add_argument("--ca-cert", type=Path, default=None, help="copy the fake's CA certificate here")
    ap.add_argument("--ready-file", type=Path, default=None, help="created once the fake serves")
    ap.add_argument("--start", default="", help='JSON {object: location} of the kitchen (default: its own)')
    ap.add_argument("--location", default="initial position", help="where Spot stands at start")
    ap.add_argument("--ground-truth-topic", default="sim/ground_truth", help="'' = do not publish the truth")
    ap.add_argument("--time-scale", type=float, default=1.0, help="simulated motion time factor (< 1: faster)")
    ns = ap.parse_args(list(sys.argv[1:] if argv is None else argv))

    from monologue_domain.kitchen.world import make_state

    from .fake_spot import FakeSpot
    from .fake_spot_world import FakeKitchen

    try:
        placements = json.loads(ns.start) if ns.start else None
        world = FakeKitchen(make_state(placements, ns.location) if placements is not None else None)
    except ValueError as e:
        print(f"fake_spot: {e}", file=sys.stderr)
        return 2
    user = os.environ.get("BOSDYN_CLIENT_USERNAME", "user")
    password = os.environ.get("BOSDYN_CLIENT_PASSWORD", "fake-spot-password")
    fake = FakeSpot(username=user, password=password, world=world, time_scale=ns.time_scale,
                    image_size=(320, 240), focal_length_px=276.0)  # 640x480's field of view, a quarter of the CPU
    fake.port = ns.port
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        fake.start()
    except Exception as e:  # noqa: BLE001 - a port in use, no openssl: one line, not a trace
        print(f"fake_spot: cannot serve on 127.0.0.1:{ns.port}: {e}", file=sys.stderr)
        return 1
    stop_truth: Callable[[], None] = lambda: None  # noqa: E731
    try:
        if ns.ca_cert:
            ns.ca_cert.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fake.ca_cert_path, ns.ca_cert)
        if ns.ground_truth_topic:
            stop_truth = _ground_truth_publisher(fake, ns.ground_truth_topic)
        if ns.ready_file:
            ns.ready_file.parent.mkdir(parents=True, exist_ok=True)
            ns.ready_file.write_text(f"{fake.port}\n")
        print(f"fake_spot serving on 127.0.0.1:{fake.port} (Spot at {ns.location!r})", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        stop_truth()
        fake.stop()
        if ns.ready_file:
            ns.ready_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
