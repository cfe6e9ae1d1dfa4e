"""The planner node's inbox accepts interjections only for the running episode."""
from __future__ import annotations

from planner_node.core.human import HumanInbox


def test_inbox_scopes_to_running_episode() -> None:
    box = HumanInbox()
    assert not box.offer("too early")
    box.open("ep1")
    assert box.offer("hello")
    assert box.offer("for ep1", "ep1")
    assert not box.offer("for another", "ep2")
    assert box.poll() == ["hello", "for ep1"]
    assert box.poll() == []
    box.close()
    assert not box.offer("too late")
