"""An rclpy ActionClient whose requests are registered before their responses can be handled."""
from __future__ import annotations

import threading
import weakref
from typing import Any

from rclpy.action.client import ActionClient as _RclpyActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.task import Future


class ActionClient(_RclpyActionClient):
    """`rclpy.action.ActionClient`, safe to call from a thread other than the executor's.

    rclpy 7.1 sends a goal, cancel or result request and only afterwards records its sequence number
    (and the goal's feedback callback). A response handled by the executor in between is dropped
    ("Ignoring unexpected goal response. There may be more than one action server") and its future
    never completes. Here sending holds a lock that the response handler waits on, so a response is
    handled only once its request is recorded. The lock is held for the send call only (microseconds).

    It also remembers the goal IDs the server's status topic lists, so that a goal whose response never
    arrived (a DDS service response is dropped when the server has not yet discovered the client's reader)
    but which the server accepted can still be followed: `goal_handle_from_status`."""

    # rclpy's methods are unannotated; mypy's untyped_calls_exclude does not cover calls through super()
    # or on a subclass, hence the typed overrides and the ignores below.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._send_lock = threading.Lock()  # before the node can hand the client any data
        self._status_seen: dict[bytes, int] = {}  # goal UUID -> the last status the server published
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]

    def wait_for_server(self, timeout_sec: float | None = None) -> bool:
        return bool(super().wait_for_server(timeout_sec=timeout_sec))  # type: ignore[no-untyped-call]

    def server_is_ready(self) -> bool:
        return bool(super().server_is_ready())  # type: ignore[no-untyped-call]

    def send_goal_async(self, goal: Any, feedback_callback: Any = None, goal_uuid: Any = None) -> Future:
        with self._send_lock:
            future: Future = super().send_goal_async(  # type: ignore[no-untyped-call]
                goal, feedback_callback=feedback_callback, goal_uuid=goal_uuid)
            return future

    def _cancel_goal_async(self, goal_handle: Any) -> Future:
        with self._send_lock:
            future: Future = super()._cancel_goal_async(goal_handle)  # type: ignore[no-untyped-call]
            return future

    def _get_result_async(self, goal_handle: Any) -> Future:
        with self._send_lock:
            future: Future = super()._get_result_async(goal_handle)  # type: ignore[no-untyped-call]
            return future

    async def execute(self, taken_data: Any) -> None:
        with self._send_lock:  # a request being sent now is recorded before its response is looked up
            pass
        if "status" in taken_data:
            for status in taken_data["status"].status_list:
                self._status_seen[bytes(status.goal_info.goal_id.uuid)] = int(status.status)
        await super().execute(taken_data)  # type: ignore[no-untyped-call]

    def last_status(self, goal_id: Any) -> int | None:
        """The last status (action_msgs/GoalStatus) the server published for `goal_id`, or None."""
        return self._status_seen.get(bytes(goal_id.uuid))

    def goal_handle_from_status(self, goal_id: Any) -> ClientGoalHandle | None:
        """An accepted handle for the goal `goal_id` (unique_identifier_msgs/UUID, as given to
        send_goal_async) if the server's status lists it although its goal response never came; None
        otherwise. Result and cancel requests and status updates then work as for any handle."""
        key = bytes(goal_id.uuid)
        status = self._status_seen.get(key)
        if status is None:
            return None
        response = self._action_type.Impl.SendGoalService.Response(accepted=True)
        handle = ClientGoalHandle(self, goal_id, response)
        handle._status = status
        self._goal_handles[key] = weakref.ref(handle)  # later statuses update it
        return handle
