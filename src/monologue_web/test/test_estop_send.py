"""The web page's E-STOP never claims a stop nobody received: a skills node that is still being discovered gets
the message once it matches; none at all is an error telling the operator to use the robot's own e-stop."""
from __future__ import annotations

import threading

import pytest
from std_msgs.msg import Bool

from monologue_web.core.app import ControlError
from monologue_web.node import send_estop


class Publisher:
    def __init__(self, subscribers: int = 0) -> None:
        self.sent: list[bool] = []
        self.subscribers = subscribers

    def publish(self, msg: Bool) -> None:
        self.sent.append(msg.data)

    def get_subscription_count(self) -> int:
        return self.subscribers


def test_a_matched_skills_node_gets_it_once() -> None:
    pub = Publisher(subscribers=1)
    assert send_estop(pub, 2.0) == "e-stop sent on estop" and pub.sent == [True]


def test_a_skills_node_that_matches_late_gets_it_again() -> None:
    pub = Publisher()
    threading.Timer(0.1, lambda: setattr(pub, "subscribers", 1)).start()
    assert send_estop(pub, 5.0) == "e-stop sent on estop"
    assert pub.sent == [True, True]  # the first went to nobody


def test_nobody_listening_is_an_error_not_a_stop() -> None:
    pub = Publisher()
    with pytest.raises(ControlError, match="NOT stopped"):
        send_estop(pub, 0.05)
    assert pub.sent == [True]
