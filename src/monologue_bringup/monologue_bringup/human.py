"""`monologue-human`: a terminal human interface for a running graph.

    monologue-human [--answer-timeout S]

It prints the monologue live, answers the robot's questions (`ask_human` action, IM's active scene
description: type the answer), and sends what you type otherwise as an interjection on
`human/input` ("please stop", a new goal, a hint). A line starting with `?` is a question about the
scene (answered in text, nothing moves). UTF-8 in any language.
"""
from __future__ import annotations

import argparse
import queue
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rclpy.action.server import ServerGoalHandle


@dataclass(frozen=True)
class Routed:
    """Where one typed line goes: "answer", "interjection" or "question" (KIND_QUESTION)."""

    kind: str
    text: str


class Console:
    """Routes typed lines (ROS-free): to the pending question if there is one, else to human/input."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: queue.Queue[str] | None = None

    def open_question(self) -> queue.Queue[str]:
        with self._lock:
            self._pending = queue.Queue(maxsize=1)
            return self._pending

    def close_question(self) -> None:
        with self._lock:
            self._pending = None

    def route(self, line: str) -> Routed | None:
        text = " ".join(line.split())
        if not text:
            return None
        with self._lock:
            pending = self._pending
            self._pending = None
        if pending is not None:
            pending.put(text)
            return Routed("answer", text)
        if text.startswith("?"):
            return Routed("question", text[1:].strip())
        return Routed("interjection", text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="monologue-human", description=__doc__.split("\n\n")[0])
    ap.add_argument("--answer-timeout", type=float, default=0.0,
                    help="s to wait for your answer when the goal gives none (default: the goal's)")
    args = ap.parse_args(argv)

    import rclpy
    from rclpy.action.server import ActionServer, CancelResponse
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.utilities import try_shutdown

    from monologue_common.qos import TRANSCRIPT
    from monologue_interfaces.action import AskHuman
    from monologue_interfaces.msg import HumanInput, TranscriptEvent

    rclpy.init()
    node = rclpy.create_node("human_interface")
    console = Console()
    pub = node.create_publisher(HumanInput, "human/input", 10)

    def on_event(e: TranscriptEvent) -> None:
        if e.kind not in (TranscriptEvent.KIND_ERROR,):
            print(f"  {e.text}", flush=True)

    node.create_subscription(TranscriptEvent, "monologue/transcript", on_event, TRANSCRIPT)

    def serve(goal: ServerGoalHandle) -> AskHuman.Result:
        req: AskHuman.Goal = goal.request
        timeout = float(req.timeout) or args.answer_timeout or 60.0
        answers = console.open_question()
        print(f"\n>>> The robot asks: {req.question}\n>>> (answer within {timeout:.0f} s)", flush=True)
        try:
            text = answers.get(timeout=timeout)
        except queue.Empty:
            console.close_question()
            print(">>> no answer sent", flush=True)
            goal.succeed()
            return AskHuman.Result(answered=False, answer="")
        goal.succeed()
        return AskHuman.Result(answered=True, answer=text)

    ActionServer(node, AskHuman, "ask_human", execute_callback=serve,
                 cancel_callback=lambda _g: CancelResponse.ACCEPT)
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    print("monologue-human: type to interject, '?question' to ask about the scene, Ctrl-D to quit", flush=True)
    try:
        for line in sys.stdin:
            routed = console.route(line)
            if routed is None or routed.kind == "answer":
                continue
            kind = HumanInput.KIND_QUESTION if routed.kind == "question" else HumanInput.KIND_INTERJECTION
            msg = HumanInput(kind=kind, text=routed.text)
            msg.stamp = node.get_clock().now().to_msg()
            pub.publish(msg)
    except KeyboardInterrupt:
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
