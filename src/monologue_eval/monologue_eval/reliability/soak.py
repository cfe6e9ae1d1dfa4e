"""R5 (issue 20): soak. N consecutive episodes (default 200) through ONE running graph (robot:=sim_kinematic,
the embedded LLM), then: no leaked processes or file descriptors in any node, the resident memory of every
node grown by at most 10% after the warm-up, every transcript complete (an EPISODE_END event and an end
record, indices 0..n-1 without a gap, the file equal to the action result).

Measured from /proc: per node, the processes in its process group (the supervisor starts each node in a
session of its own), /proc/<pid>/fd of each and VmRSS, at the start, after the warm-up and at the end.
The kinematic world is not reset between episodes; the instructions alternate so that blocks keep moving.

    python -m monologue_eval.reliability.soak [--episodes 200] [--warmup 10] [--max-steps 4]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monologue_eval.reliability.common import CONFIG, Row

RSS_GROWTH_MAX = 0.10  # fraction of the post-warm-up resident memory
INSTRUCTIONS = ("Put the blocks in their matching bowls.", "Put all the blocks in the {bowl}.")


@dataclass(frozen=True)
class NodeSample:
    """One node at one moment: processes in its process group, their open fds, their resident memory (kB)."""

    processes: int
    fds: int
    rss_kb: int


def _group_pids(pgid: int) -> list[int]:
    """Processes whose process group is `pgid` (/proc/<pid>/stat field 5)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def sample(pid: int) -> NodeSample:
    """The node started as process `pid` (the leader of its process group)."""
    fds = rss = 0
    pids = _group_pids(pid)
    for p in pids:
        try:
            fds += len(os.listdir(f"/proc/{p}/fd"))
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1])
        except OSError:
            continue
    return NodeSample(len(pids), fds, rss)


def check_transcript(path: Path, result_texts: list[str]) -> str:
    """'' if the transcript file is complete; otherwise what is wrong."""
    try:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        return f"{path.name}: unreadable: {e}"
    events = [r for r in records if r.get("record") == "event"]
    if not records or records[0].get("record") != "header":
        return f"{path.name}: no header"
    if records[-1].get("record") != "end":
        return f"{path.name}: no end record"
    if not events or events[-1].get("kind") != "EPISODE_END":
        return f"{path.name}: no EPISODE_END event"
    if [e.get("index") for e in events] != list(range(len(events))):
        return f"{path.name}: indices are not 0..{len(events) - 1}"
    if [e.get("text") for e in events] != result_texts:
        return f"{path.name}: the file differs from the action result"
    return ""


@dataclass
class Soak:
    episodes: int = 0
    warmup: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)  # error name -> episodes
    incomplete: list[str] = field(default_factory=list)  # transcript problems
    failures: list[str] = field(default_factory=list)  # episodes that raised (timeouts, ...)
    start: dict[str, NodeSample] = field(default_factory=dict)
    warm: dict[str, NodeSample] = field(default_factory=dict)
    end: dict[str, NodeSample] = field(default_factory=dict)
    dead: dict[str, int] = field(default_factory=dict)
    episode_s: list[float] = field(default_factory=list)
    skills: list[int] = field(default_factory=list)  # ROBOT_ACTION events (skills chosen) per episode
    wall_s: float = 0.0

    def rss_growth(self) -> dict[str, float]:
        """Resident memory growth from the warm-up to the end, per node (fraction)."""
        return {n: (self.end[n].rss_kb - w.rss_kb) / w.rss_kb
                for n, w in self.warm.items() if w.rss_kb and n in self.end}

    def leaks(self) -> dict[str, str]:
        """Nodes with more processes or fds at the end than after the warm-up."""
        out = {}
        for n, w in self.warm.items():
            e = self.end.get(n)
            if e is None:
                continue
            if e.processes > w.processes:
                out[n] = f"processes {w.processes} -> {e.processes}"
            elif e.fds > w.fds:
                out[n] = f"fds {w.fds} -> {e.fds}"
        return out

    def rows(self) -> list[Row]:
        growth = self.rss_growth()
        worst = max(growth.items(), key=lambda kv: kv[1]) if growth else ("-", 0.0)
        complete = self.episodes - len(self.incomplete) - len(self.failures)
        n = self.episodes
        table = "; ".join(f"{k}: {self.warm[k].processes} proc, fds {self.warm[k].fds}->{self.end[k].fds}, "
                          f"RSS {self.warm[k].rss_kb / 1024:.0f}->{self.end[k].rss_kb / 1024:.0f} MB"
                          for k in sorted(self.warm) if k in self.end)
        mean = sum(self.episode_s) / len(self.episode_s) if self.episode_s else 0.0
        actions = (f"; {sum(self.skills)} skills chosen (per episode {min(self.skills)}-{max(self.skills)})"
                   if self.skills else "")
        return [
            Row("R5", f"soak: transcripts complete ({n} episodes, one graph)", "all",
                f"{complete}/{n}; outcomes {dict(sorted(self.outcomes.items()))}; mean episode {mean:.1f} s{actions}",
                complete == n and n > 0 and not self.dead, self.wall_s,
                "; ".join((self.incomplete + self.failures)[:5]) + (f" dead nodes {self.dead}" if self.dead else "")),
            Row("R5", "soak: leaked processes / fds (after warm-up -> end)", "0",
                "none" if not self.leaks() else "; ".join(f"{k}: {v}" for k, v in self.leaks().items()),
                not self.leaks() and bool(self.end), 0.0, table),
            Row("R5", f"soak: RSS growth per node after {self.warmup} warm-up episodes",
                f"<= {RSS_GROWTH_MAX:.0%}", f"max {worst[1]:+.1%} ({worst[0]})",
                bool(growth) and all(g <= RSS_GROWTH_MAX for g in growth.values()), 0.0,
                ", ".join(f"{k} {v:+.1%}" for k, v in sorted(growth.items()))),
        ]


def _snapshot(procs: Mapping[str, Any]) -> dict[str, NodeSample]:
    return {name: sample(p.pid) for name, p in procs.items() if p.poll() is None}


def run(episodes: int = 200, warmup: int = 10, max_steps: int = 4, episode_timeout_s: float = 600.0,
        progress: Callable[[str], None] = print, log: Callable[[str], None] | None = None) -> Soak:
    """Run the soak on a graph of its own (needs the built workspace and a ROS_DOMAIN_ID of its own)."""
    import rclpy

    from monologue_bringup.up import Supervisor
    from monologue_eval.client import planner_available, run_episode
    from planner_node.core.episode import EpisodeError

    out = Soak(warmup=min(warmup, max(0, episodes - 1)))
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="soak_") as tmp:
        transcripts = Path(tmp) / "transcripts"
        sup = Supervisor("sim_kinematic", "embedded", config_dir=CONFIG, sink=log or lines.append, node_params={
            "skills": {"sim.seed": "11", "sim.num_blocks": "2", "sim.num_bowls": "3", "sim.matching_bowls": "true",
                       "sim.phase_duration": "0.05"},
            "planner": {"transcript_dir": str(transcripts), "max_steps": str(max_steps)},
        })
        t_start = time.monotonic()
        sup.start()
        rclpy.init(args=[])
        try:
            if not planner_available(300.0):
                raise RuntimeError("the planner did not come up:\n" + "\n".join(lines[-30:]))
            out.start = _snapshot(sup.procs)
            bowls: list[str] = []
            for i in range(episodes):
                if i == out.warmup:
                    out.warm = _snapshot(sup.procs)
                text = INSTRUCTIONS[i % 2].format(bowl=bowls[i % len(bowls)] if bowls else "blue bowl")
                t0 = time.monotonic()
                try:
                    result, objects = run_episode(text, episode_timeout_s, print_event=lambda _e: None)
                except Exception as e:  # a hung or failed episode is a finding, not the end of the soak
                    out.failures.append(f"episode {i}: {e!r}"[:300])
                    continue
                finally:
                    out.episode_s.append(time.monotonic() - t0)
                bowls = sorted(o.name for o in objects if o.category == "bowl")
                out.skills.append(sum(1 for e in result.transcript if e.kind == e.KIND_ROBOT_ACTION))
                name = EpisodeError(int(result.error_code)).name
                out.outcomes[name] = out.outcomes.get(name, 0) + 1
                why = check_transcript(Path(result.transcript_path), [e.text for e in result.transcript])
                if why:
                    out.incomplete.append(f"episode {i}: {why}")
                if (i + 1) % 10 == 0 or i + 1 == episodes:
                    progress(f"  soak: {i + 1}/{episodes} episodes, {out.outcomes}, "
                             f"{len(out.incomplete)} incomplete, {len(out.failures)} failed")
            out.episodes = episodes
            if not out.warm:
                out.warm = out.start
            out.end = _snapshot(sup.procs)
            out.dead = sup.dead()
        finally:
            rclpy.shutdown()
            sup.stop()
            out.wall_s = time.monotonic() - t_start
    return out


def own_ros_domain() -> None:
    """A ROS_DOMAIN_ID of this process's own (not env.sh's shared 42), localhost discovery."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if os.environ.get("ROS_DOMAIN_ID", "42") == "42":
        os.environ["ROS_DOMAIN_ID"] = str(random.Random(os.getpid()).randrange(100, 200))


def rows(episodes: int = 200, warmup: int = 10, progress: Callable[[str], None] = print) -> list[Row]:
    """R5's table rows."""
    own_ros_domain()
    return run(episodes, warmup, progress=progress).rows()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10, help="episodes before the baseline for RSS, fds, processes")
    ap.add_argument("--max-steps", type=int, default=4, help="planner max_steps per episode")
    ap.add_argument("--json", type=Path, default=None, help="also write the samples and outcomes here")
    ns = ap.parse_args(argv)
    own_ros_domain()
    soak = run(ns.episodes, ns.warmup, ns.max_steps)
    for r in soak.rows():
        print(f"{r.figure} {r.what}: {r.measured} [{r.verdict}]" + (f"\n    {r.details}" if r.details else ""))
    if ns.json is not None:
        from dataclasses import asdict

        ns.json.write_text(json.dumps(asdict(soak), indent=1), encoding="utf-8")
    return 0 if all(r.ok for r in soak.rows()) else 1


if __name__ == "__main__":
    sys.exit(main())
