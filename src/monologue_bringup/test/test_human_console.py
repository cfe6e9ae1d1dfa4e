"""Line routing of monologue-human (no ROS)."""
from __future__ import annotations

import threading

from monologue_bringup.human import Console, Routed


def test_lines_go_to_the_pending_question_first() -> None:
    c = Console()
    assert c.route("  please   stop ") == Routed("interjection", "please stop")
    assert c.route("?what is in the red bowl") == Routed("question", "what is in the red bowl")
    assert c.route("   ") is None
    answers = c.open_question()
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(answers.get(timeout=2.0)))
    t.start()
    assert c.route("是的，在碗里") == Routed("answer", "是的，在碗里")
    t.join()
    assert got == ["是的，在碗里"]
    assert c.route("next") == Routed("interjection", "next")  # the question is closed after one answer
