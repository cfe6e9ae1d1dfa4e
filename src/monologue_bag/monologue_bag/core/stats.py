"""A run's transcript and statistics from its bag directory (no rclpy): `monologue-bag-info`."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monologue_domain.transcript import EventKind

from .bagio import TopicInfo
from .episode import RecordedEpisode, Recording

NS = 1_000_000_000


@dataclass(frozen=True)
class LlmStats:
    """Totals over an LLM cassette (one JSON object per call)."""

    calls: int = 0
    generate_calls: int = 0
    score_calls: int = 0
    wall_time_s: float = 0.0  # s spent in the LLM while recording
    prompt_tokens: int = 0
    new_tokens_processed: int = 0  # prompt tokens not served from the KV cache
    completion_tokens: int = 0
    candidates_scored: int = 0
    backends: tuple[str, ...] = ()
    malformed_lines: int = 0


def llm_stats(path: Path) -> LlmStats | None:
    """Statistics of a cassette file, or None if there is none."""
    if not path.is_file():
        return None
    calls = gen = score = prompt = new = completion = cands = bad = 0
    wall = 0.0
    backends: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                resp = entry["response"]
                kind = entry["kind"]
            except (json.JSONDecodeError, KeyError, TypeError):
                bad += 1
                continue
            calls += 1
            gen += kind == "generate"
            score += kind == "score"
            wall += float(resp.get("wall_time_s", 0.0))
            prompt += int(resp.get("prompt_tokens", 0))
            new += int(resp.get("new_tokens_processed", 0))
            completion += int(resp.get("completion_tokens", 0))
            cands += len(resp.get("scores", []))
            if entry.get("backend") and entry["backend"] not in backends:
                backends.append(str(entry["backend"]))
    return LlmStats(calls, gen, score, wall, prompt, new, completion, cands, tuple(backends), bad)


@dataclass(frozen=True)
class EpisodeStats:
    episode_id: str
    instruction: str
    events: int
    steps: int  # skills executed
    successes: int  # Success: True lines
    success_checks: int  # Success lines
    skill_errors: int
    outcome: str  # "succeeded" / "failed: <error>" / "unfinished"
    duration_s: float  # s from the first to the last event


def episode_stats(ep: RecordedEpisode) -> EpisodeStats:
    kinds = [e.kind for e in ep.events]
    checks = [e for e in ep.events if e.kind == EventKind.SUCCESS.name]
    end = next((e for e in reversed(ep.events) if e.kind == EventKind.EPISODE_END.name), None)
    if end is None:
        outcome = "unfinished"
    elif end.data.get("success"):
        outcome = "succeeded"
    else:
        outcome = f"failed: {end.data.get('error', '?')}"
    span = (ep.events[-1].stamp_ns - ep.events[0].stamp_ns) / NS if ep.events else 0.0
    return EpisodeStats(ep.episode_id, ep.instruction, len(ep.events), kinds.count(EventKind.ROBOT_ACTION.name),
                        sum(1 for e in checks if e.data.get("success") is True), len(checks),
                        sum(1 for c in ep.skill_calls if c.error_code != 0), outcome, span)


def format_info(
    path: Path,
    topics: Mapping[str, TopicInfo],
    start_ns: int,
    end_ns: int,
    custom: Mapping[str, str],
    recording: Recording | None,
    llm: LlmStats | None,
    show_data: bool = False,
) -> str:
    """The text `monologue-bag-info` prints."""
    dur = max(0, end_ns - start_ns) / NS
    size = sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    lines = [f"bag:       {path}", f"duration:  {dur:.2f} s", f"size:      {size / 1e6:.2f} MB (bag directory files)",
             f"messages:  {sum(t.count for t in topics.values())}"]
    for k, v in sorted(custom.items()):
        lines.append(f"  {k}: {v}")
    lines.append("topics:")
    width = max((len(t) for t in topics), default=0)
    for name, t in sorted(topics.items()):
        rate = f"{t.count / dur:7.2f} Hz" if dur > 0 else "      - Hz"
        latched = " latched" if t.qos.transient_local else ""
        lines.append(f"  {name:<{width}}  {t.count:6d} msgs {rate}  {t.type_name}{latched}")
    if recording is None:
        lines.append("transcript: none recorded")
    else:
        for ep in recording.episodes:
            st = episode_stats(ep)
            lines += ["", f"episode {st.episode_id}: {st.instruction!r}", "transcript:"]
            lines += [_event_line(e.index, e.kind, e.text, e.data if show_data else None) for e in ep.events]
            lines.append(
                f"steps: {st.steps}; successes: {st.successes}/{st.success_checks}; skill errors: {st.skill_errors}; "
                f"outcome: {st.outcome}; {st.duration_s:.1f} s")
        post = [e for e in recording.all_events if e.post_task]
        if post:
            lines.append("post-task questions and answers:")
            lines += [_event_line(e.index, e.kind, e.text, None) for e in post]
    lines.append("")
    if llm is None:
        lines.append("LLM: no cassette in the bag directory")
    else:
        lines.append(
            f"LLM: {llm.calls} calls ({llm.score_calls} score, {llm.generate_calls} generate) by "
            f"{', '.join(llm.backends) or '?'}; {llm.wall_time_s:.2f} s; tokens: {llm.prompt_tokens} prompt "
            f"({llm.new_tokens_processed} newly processed), {llm.completion_tokens} completion; "
            f"{llm.candidates_scored} candidates scored"
            + (f"; {llm.malformed_lines} malformed lines" if llm.malformed_lines else ""))
    return "\n".join(lines)


def _event_line(index: int, kind: str, text: str, data: Mapping[str, Any] | None) -> str:
    out = f"  {index:3d} {kind:<18} {text}"
    if data:
        out += f"  {json.dumps(dict(data), ensure_ascii=False, sort_keys=True)}"
    return out

