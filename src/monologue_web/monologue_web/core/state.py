"""The monitor's state model: what the page shows, fed by the ROS adapter (no rclpy).

Every update bumps `version`; web clients wait for a newer version (`wait_change`) and are sent the
whole `snapshot()` (a JSON-ready dict: a transcript is at most `max_events` short lines).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Kinds that end the skill shown as current.
_SKILL_ENDS = frozenset({"SUCCESS", "EPISODE_END", "ERROR"})


@dataclass(frozen=True)
class EventView:
    """One transcript event as the page renders it (`kind` is the EventKind name, e.g. ROBOT_ACTION)."""

    episode_id: str
    index: int
    kind: str
    text: str
    data: Mapping[str, Any] = field(default_factory=dict)
    stamp: float = 0.0  # s since the epoch


@dataclass(frozen=True)
class ScoreRow:
    """One candidate of a step's score table; probabilities and affordances in [0, 1]."""

    candidate: str
    llm: float
    affordance: float
    combined: float
    chosen: bool = False


@dataclass(frozen=True)
class StepStats:
    """Cost of one planning step: LLM tokens and wall time."""

    prompt_tokens: int
    new_tokens: int
    llm_s: float                       # s in the LLM
    step_s: float                      # s to choose the step


class MonitorState:
    """Thread-safe state of the live monitor: transcript, step scores, robot status, current skill,
    the robot's open question and the last goal sent from the page."""

    def __init__(self, max_events: int = 500, clock: Callable[[], float] = time.time) -> None:
        self._max_events = max(1, max_events)
        self._clock = clock
        self._cond = threading.Condition()
        self.version = 0
        self._episode = ""
        self._events: list[EventView] = []
        self._scores: dict[str, Any] = {}
        self._status: dict[str, Any] = {}
        self._skill: dict[str, Any] = {}
        # the open question (AskHuman) and approval request: {"id", the request's fields, "asked"} or {}
        self._pending: dict[str, dict[str, Any]] = {"question": {}, "approval": {}}
        self._goal: dict[str, Any] = {"state": "idle", "message": ""}
        self._steps: list[dict[str, Any]] = []      # per planning step: tokens and latency
        self._scene: dict[str, Any] = {}
        self._camera: dict[str, Any] = {}
        self.viewers = 0  # pages connected now (the robot's questions are only taken while one is open)

    # ---- updates ---------------------------------------------------------------------------------
    def _bump(self) -> None:
        self.version += 1
        self._cond.notify_all()

    def on_event(self, event: EventView) -> None:
        """A transcript event; a new episode id starts a new transcript (events already seen are ignored)."""
        with self._cond:
            if event.episode_id != self._episode:
                self._episode = event.episode_id
                self._events = []
                self._scores = {}
                self._skill = {}
                self._steps = []
            if any(e.index == event.index for e in self._events):
                return
            self._events.append(event)
            self._events.sort(key=lambda e: e.index)
            del self._events[:-self._max_events]
            if event.kind == "ROBOT_ACTION":
                skill = str(event.data.get("skill", "")) or event.text
                args = [str(a) for a in event.data.get("args", []) or []]
                self._skill = {"skill": skill, "args": args, "text": event.text, "state": "started"}
            elif event.kind in _SKILL_ENDS:
                self._skill = {}
            self._bump()

    def on_scores(self, episode_id: str, step: int, rows: Sequence[ScoreRow], chosen: str,
                  stats: StepStats | None = None) -> None:
        """The score table of one planning step (rows in scoring order, `chosen` marked) and its
        token and latency figures."""
        with self._cond:
            marked = [ScoreRow(r.candidate, r.llm, r.affordance, r.combined, r.candidate == chosen) for r in rows]
            self._scores = {"episode_id": episode_id, "step": step, "chosen": chosen,
                            "rows": [asdict(r) for r in marked]}
            if stats is not None and episode_id in (self._episode, ""):
                self._steps = [x for x in self._steps if x["step"] != step]
                self._steps.append({"step": step, "chosen": chosen, "candidates": len(rows), **asdict(stats)})
                self._steps.sort(key=lambda x: int(x["step"]))
            self._bump()

    def on_scene(self, scene: Mapping[str, Any]) -> None:
        """The scene description for the top view: {frame, source, held, objects: [{name, category,
        x, y, z, sx, sy, sz (m), visible}]}."""
        with self._cond:
            if dict(scene) == self._scene:
                return
            self._scene = dict(scene)
            self._bump()

    def on_camera(self, frame: Mapping[str, Any]) -> None:
        """A new camera frame is available at /api/camera.jpg: {topic, seq, width, height (px), stamp (s)}."""
        with self._cond:
            self._camera = dict(frame)
            self._bump()

    def on_approval(self, approval_id: str, request: str, timeout_s: float) -> None:
        """The skills node asks a person to approve a skill or motion (its approval gate); `timeout_s` s."""
        self._open("approval", approval_id, {"request": request, "timeout_s": timeout_s})

    def clear_approval(self, approval_id: str) -> None:
        self._close("approval", approval_id)

    def on_status(self, status: Mapping[str, Any]) -> None:
        """The robot's status (RobotStatus fields: ok, estop_latched, estop_reason, fault, ...)."""
        with self._cond:
            new = dict(status)
            new["received"] = self._clock()
            if {k: v for k, v in new.items() if k != "received"} == \
                    {k: v for k, v in self._status.items() if k != "received"}:
                return
            self._status = new
            self._bump()

    def on_skill_state(self, state: str) -> None:
        """Progress text of the running skill (ExecuteSkill feedback)."""
        with self._cond:
            if self._skill:
                self._skill = {**self._skill, "state": state}
                self._bump()

    def on_question(self, question_id: str, question: str, timeout_s: float) -> None:
        """The robot asks a person (AskHuman); `timeout_s` s to answer."""
        self._open("question", question_id, {"question": question, "timeout_s": timeout_s})

    def clear_question(self, question_id: str) -> None:
        self._close("question", question_id)

    def _open(self, kind: str, request_id: str, fields: Mapping[str, Any]) -> None:
        """A person is asked something (`kind` "question" or "approval"); it replaces the open one."""
        with self._cond:
            self._pending[kind] = {"id": request_id, **fields, "asked": self._clock()}
            self._bump()

    def _close(self, kind: str, request_id: str) -> None:
        """The request `request_id` is answered or gone (a newer one stays open)."""
        with self._cond:
            if self._pending[kind].get("id") == request_id:
                self._pending[kind] = {}
                self._bump()

    def on_goal(self, state: str, message: str = "") -> None:
        """The goal sent from the page: state is idle | sending | running | succeeded | failed | canceled."""
        with self._cond:
            self._goal = {"state": state, "message": message}
            self._bump()

    def viewer_joined(self) -> None:
        with self._cond:
            self.viewers += 1

    def viewer_left(self) -> None:
        with self._cond:
            self.viewers = max(0, self.viewers - 1)

    # ---- reading ---------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        with self._cond:
            return {
                "version": self.version,
                "episode_id": self._episode,
                "events": [asdict(e) | {"data": dict(e.data)} for e in self._events],
                "scores": dict(self._scores),
                "status": dict(self._status),
                "skill": dict(self._skill),
                "question": dict(self._pending["question"]),
                "goal": dict(self._goal),
                "steps": [dict(x) for x in self._steps],
                "scene": dict(self._scene),
                "camera": dict(self._camera),
                "approval": dict(self._pending["approval"]),
            }

    def wait_change(self, version: int, timeout_s: float) -> int:
        """Block until `version` is outdated or `timeout_s` s pass; the current version."""
        with self._cond:
            self._cond.wait_for(lambda: self.version != version, timeout=timeout_s)
            return self.version
