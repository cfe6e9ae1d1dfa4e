"""monologue_common.actions.ActionClient against a real action server: a response that arrives while its
request is still being sent is not dropped."""
from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

H = TypeVar("H")
SEND_DELAY_S = 0.3  # s: how long the send call takes after the request has gone out


class _SlowSendHandle:
    """The client's rcl handle, whose send_* calls return SEND_DELAY_S s after the request went out: the
    server's in-process answer is handled by the executor before the call returns."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.sent: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._handle, name)
        if not name.startswith("send_"):
            return attr

        def slow(*args: Any) -> Any:
            seq = attr(*args)
            self.sent.append(name)
            time.sleep(SEND_DELAY_S)
            return seq
        return slow

    def __enter__(self) -> Any:
        return self._handle.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._handle.__exit__(*exc)


@pytest.fixture()
def graph() -> Iterator[tuple[Any, Any, Any]]:
    import rclpy
    from rclpy.action import ActionServer, CancelResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    from monologue_interfaces.action import ExecuteSkill

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=random.Random(os.getpid() + 2).randrange(200, 230))
    node = rclpy.create_node("action_client_test", context=ctx)
    release = threading.Event()

    def execute(handle: Any) -> Any:
        handle.publish_feedback(ExecuteSkill.Feedback(state=1, state_text="started"))
        deadline = time.monotonic() + 5.0
        while not release.is_set() and not handle.is_cancel_requested and time.monotonic() < deadline:
            time.sleep(0.01)
        if handle.is_cancel_requested:
            handle.canceled()
            return ExecuteSkill.Result(error_code=ExecuteSkill.Result.CANCELED, error_msg="canceled")
        handle.succeed()
        return ExecuteSkill.Result(error_msg="done")

    server = ActionServer(node, ExecuteSkill, "execute_skill", execute_callback=execute,
                          cancel_callback=lambda _r: CancelResponse.ACCEPT, callback_group=ReentrantCallbackGroup())
    executor = MultiThreadedExecutor(num_threads=3, context=ctx)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        yield node, executor, release
    finally:
        release.set()
        executor.shutdown(timeout_sec=2.0)
        server.destroy()
        node.destroy_node()
        ctx.try_shutdown()


def _wait(future: Any, timeout_s: float, what: str) -> Any:
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    assert done.wait(timeout_s), f"{what}: no answer within {timeout_s} s (the response was dropped)"
    return future.result()


def _client_through(node: Any, wrapper: Callable[[Any], H]) -> tuple[Any, H]:
    """An execute_skill client (its server up) whose rcl handle is wrapped by `wrapper`."""
    from monologue_common.actions import ActionClient
    from monologue_interfaces.action import ExecuteSkill

    client = ActionClient(node, ExecuteSkill, "execute_skill")
    assert client.wait_for_server(timeout_sec=5.0)
    wrapped = wrapper(client._client_handle)
    client._client_handle = wrapped
    return client, wrapped


def test_goal_result_and_cancel_answered_while_their_requests_are_still_being_sent(graph: Any) -> None:
    from monologue_interfaces.action import ExecuteSkill

    node, _executor, release = graph
    client, slow = _client_through(node, _SlowSendHandle)
    feedback: list[str] = []

    handle = _wait(client.send_goal_async(ExecuteSkill.Goal(skill="pick", args=["a"]),
                                          feedback_callback=lambda m: feedback.append(m.feedback.state_text)),
                   5.0, "goal")
    assert handle.accepted
    result_future = handle.get_result_async()
    release.set()
    result = _wait(result_future, 5.0, "result")
    assert result.result.error_code == ExecuteSkill.Result.NONE and result.result.error_msg == "done"
    assert feedback == ["started"]

    release.clear()
    handle2 = _wait(client.send_goal_async(ExecuteSkill.Goal(skill="place", args=["b"])), 5.0, "second goal")
    cancel = _wait(handle2.cancel_goal_async(), 5.0, "cancel")
    assert len(cancel.goals_canceling) == 1
    assert _wait(handle2.get_result_async(), 5.0, "canceled result").result.error_msg == "canceled"
    assert slow.sent == ["send_goal_request", "send_result_request", "send_goal_request",
                         "send_cancel_request", "send_result_request"]


class _LosesGoalResponses(_SlowSendHandle):
    """The client's rcl handle, whose goal responses are taken and dropped (as DDS drops a response to a
    client the server has not discovered yet)."""

    def __getattr__(self, name: str) -> Any:
        if name == "take_goal_response":
            real = getattr(self._handle, name)

            def drop(*args: Any) -> Any:
                real(*args)
                self.sent.append("dropped goal response")
                return (None, None)
            return drop
        return super().__getattr__(name)


def test_a_goal_whose_response_was_lost_is_followed_from_the_server_status(graph: Any) -> None:
    import uuid

    from unique_identifier_msgs.msg import UUID

    from monologue_interfaces.action import ExecuteSkill

    node, _executor, release = graph
    client, lossy = _client_through(node, _LosesGoalResponses)
    goal_id = UUID(uuid=list(uuid.uuid4().bytes))
    send = client.send_goal_async(ExecuteSkill.Goal(skill="pick", args=["a"]), goal_uuid=goal_id)
    other = UUID(uuid=list(uuid.uuid4().bytes))
    handle = None
    deadline = time.monotonic() + 5.0
    while handle is None and time.monotonic() < deadline:
        time.sleep(0.05)
        handle = client.goal_handle_from_status(goal_id)
    assert handle is not None and handle.accepted and not send.done()  # the response never came
    assert "dropped goal response" in lossy.sent
    assert client.goal_handle_from_status(other) is None  # a goal the server never had
    result_future = handle.get_result_async()
    release.set()
    result = _wait(result_future, 5.0, "result of the recovered goal")
    assert result.result.error_msg == "done"


class _LosesFirstResultResponse(_SlowSendHandle):
    """The client's rcl handle, whose first result response is taken and dropped (Fast DDS: "failed to send
    response (timeout)" on a loaded machine)."""

    def __getattr__(self, name: str) -> Any:
        if name == "take_result_response" and "dropped result response" not in self.sent:
            real = getattr(self._handle, name)

            def drop(*args: Any) -> Any:
                taken = real(*args)
                if taken != (None, None) and taken is not None:
                    self.sent.append("dropped result response")
                    return (None, None)
                return taken
            return drop
        return super().__getattr__(name)


def test_a_lost_result_is_asked_for_again_once_the_status_shows_the_goal_finished(graph: Any) -> None:
    import uuid

    from unique_identifier_msgs.msg import UUID

    from monologue_interfaces.action import ExecuteSkill

    node, _executor, release = graph
    client, lossy = _client_through(node, _LosesFirstResultResponse)
    goal_id = UUID(uuid=list(uuid.uuid4().bytes))
    handle = _wait(client.send_goal_async(ExecuteSkill.Goal(skill="pick", args=["a"]), goal_uuid=goal_id), 5.0,
                   "goal response")
    first = handle.get_result_async()
    release.set()
    deadline = time.monotonic() + 5.0
    while client.last_status(goal_id) != 4 and time.monotonic() < deadline:  # GoalStatus.STATUS_SUCCEEDED
        time.sleep(0.05)
    assert client.last_status(goal_id) == 4
    time.sleep(0.5)
    assert not first.done() and "dropped result response" in lossy.sent  # the server answered; it was lost
    result = _wait(handle.get_result_async(), 5.0, "result asked again")  # what run_episode does after 5 s
    assert result.result.error_msg == "done"
