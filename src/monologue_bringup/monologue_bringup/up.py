"""`monologue-up`: start the graph on machines without `ros2 launch` (pip-only ROS 2).

Starts the same processes as launch/monologue.launch.py with `--ros-args --params-file ...`,
prefixes their output, forwards SIGINT/SIGTERM and stops everything cleanly; when a node exits, the
whole graph stops (the launch file does the same).

    monologue-up [robot:=sim] [llm:=embedded] [log_level:=info] [record:=<bag dir>] [web:=true]
                 [foxglove:=true] [--param skills:sim.seed=3 ...] [--config-dir DIR]

The `key:=value` arguments are the launch file's (LAUNCH_ARGUMENTS, one table for both).
record:=<dir> also starts the recorder (rosbag2 MCAP into <dir>) and stores the planner's LLM
cassette and transcript files next to the bag, so `monologue-replay <dir>` can replay the run; a
directory that already holds a bag is refused.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from monologue_bag.core.layout import bag_files_in

from .graph import (
    LIVE,
    LLMS,
    RECORD,
    ROBOTS,
    NodeSpec,
    all_nodes,
    dds_env,
    default_config_dir,
    graph_for,
    params_custom_data,
    parse_launch_args,
    record_params,
    ros_args,
    scene_node,
)

Sink = Callable[[str], None]


@dataclass(frozen=True)
class LaunchArgument:
    """One `key:=value` argument of launch/monologue.launch.py and `monologue-up`."""

    name: str
    default: str
    description: str
    choices: tuple[str, ...] = ()  # empty: any value


# The launch arguments, one table for the launch files and monologue-up (same names, defaults, choices).
LAUNCH_ARGUMENTS: tuple[LaunchArgument, ...] = (
    LaunchArgument("robot", "sim", "Which robot backend to drive", ROBOTS),
    LaunchArgument("llm", "embedded", "LLM backend: embedded Gemma 3 270M or an OpenAI-compatible server", LLMS),
    LaunchArgument("log_level", "info", "ROS log level of every node (debug, info, warn, error, fatal)"),
    LaunchArgument("record", "", "Record the run into this rosbag2 MCAP directory (empty: no recording); "
                   "a directory that already holds a bag is refused"),
    LaunchArgument("scene", "", "Simulated tabletops: one of Statler's domains (the scene node's sim.scene; "
                   "empty: the robot file's)", ("", "tabletop", "covers", "disinfection", "weights")),
    LaunchArgument("web", "false", "Also start the live web monitor and console (config/monologue.yaml `web`; "
                   "docs/web.md)", ("true", "false")),
    LaunchArgument("foxglove", "false", "Also start the Foxglove bridge, a Foxglove WebSocket server on "
                   "ws://127.0.0.1:8765 (config/monologue.yaml `foxglove_bridge`; docs/web.md)", ("true", "false")),
)


def scene_params(robot: str, scene: str, config_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """The scene node's `sim.scene` for `scene:=` ({} when empty); ValueError for a robot without a scene."""
    return {scene_node(robot, config_dir): {"sim.scene": scene}} if scene else {}


def launch_values(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """LAUNCH_ARGUMENTS values from `key:=value` items of `argv` (defaults otherwise), and the other items.

    Raises ValueError for an unknown key or a value outside an argument's choices."""
    values, rest = parse_launch_args(argv, {a.name: a.default for a in LAUNCH_ARGUMENTS})
    for a in LAUNCH_ARGUMENTS:
        if a.choices and values[a.name] not in a.choices:
            raise ValueError(f"{a.name}:={values[a.name]} is not one of {list(a.choices)}")
    return values, rest


def record_dir_error(record: Path | str | None) -> str | None:
    """Why `record` cannot take a new recording (it already holds a bag), or None if it can (or is unset).

    monologue-up, the launch file, monologue-demo and monologue-replay all refuse such a directory."""
    if record is None or str(record) == "":
        return None
    path = Path(record).expanduser()
    if bag_files_in(path):
        return f"{path} already holds a bag; choose a new directory"
    return None


def executable_path(spec: NodeSpec) -> Path:
    """`<prefix>/lib/<package>/<executable>` as `ros2 run` would find it."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        prefix = Path(get_package_prefix(spec.package))
    except PackageNotFoundError as e:
        raise RuntimeError(
            f"package {spec.package!r} is not built or not sourced; run `make setup` and "
            f"`. scripts/env.sh`") from e
    exe = prefix / "lib" / spec.package / spec.executable
    if not exe.is_file():
        raise RuntimeError(f"executable {exe} not found; rebuild with `make build`")
    return exe


class Supervisor:
    """Runs every node of the robot's graph (graph_for) as a child process; usable as a context manager."""

    def __init__(
        self,
        robot: str = "sim",
        llm: str = "embedded",
        config_dir: Path | None = None,
        node_params: Mapping[str, Mapping[str, str]] | None = None,
        env: Mapping[str, str] | None = None,
        sink: Sink | None = None,
        log_level: str = "info",
        nodes: Sequence[str] | None = None,
        mode: str = LIVE,
        record: Path | None = None,
        web: bool = False,
        foxglove: bool = False,
    ) -> None:
        """`nodes` defaults to the nodes of `mode` (graph.select); `record` adds the recorder writing
        into that bag directory (its parameters are merged under `node_params`); `web` adds the web
        monitor (its history follows the planner's transcript_dir unless given); `foxglove` adds the Foxglove bridge."""
        self.robot, self.llm = robot, llm
        self.config_dir = config_dir or default_config_dir()
        self.record = record
        self.node_params: dict[str, dict[str, str]] = {}
        if record is not None:
            kept = ("transcript_dir",) + (("llm.cassette_path", "llm.cassette_mode") if mode == LIVE else ())
            moved = sorted(k for k in kept if k in (node_params or {}).get("planner", {}))
            if moved:
                raise ValueError(f"a recorded run keeps the planner's {moved} in the bag (a replay reads the "
                                 "transcript header and the LLM cassette from there); do not override them")
            custom = {"monologue.robot": robot, "monologue.llm": llm, "monologue.mode": mode,
                      **params_custom_data(node_params or {}, robot, self.config_dir)}
            self.node_params = record_params(record, mode, **custom)
        for k, v in (node_params or {}).items():
            self.node_params.setdefault(k, {}).update(v)
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.env.update({k: v for k, v in dds_env(self.config_dir).items() if k not in self.env})
        self.env.setdefault("RCUTILS_COLORIZED_OUTPUT", "0")
        self.sink = sink or (lambda line: print(line, flush=True))
        self.log_level = log_level
        every = all_nodes(robot, self.config_dir)
        chosen = (list(nodes) if nodes is not None
                  else [s.name for s in graph_for(robot, mode, record is not None, self.config_dir, web, foxglove)])
        planner_dir = self.node_params.get("planner", {}).get("transcript_dir")
        if "web" in chosen and planner_dir:
            self.node_params.setdefault("web", {}).setdefault("transcript_dir", planner_dir)
        if "web" in chosen and record is not None:  # the history lists this run's bag beside the others
            self.node_params.setdefault("web", {}).setdefault(
                "bag_dirs", json.dumps([str(Path(record).expanduser().absolute().parent)]))
        self.specs = [s for s in every if s.name in chosen]
        unknown = (set(self.node_params) | set(chosen)) - {s.name for s in every}
        if unknown:
            raise ValueError(f"parameters for unknown nodes: {sorted(unknown)}")
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._threads: list[threading.Thread] = []

    def commands(self) -> dict[str, list[str]]:
        return {
            s.name: [str(executable_path(s))] + ros_args(
                s, self.config_dir, self.robot, self.llm, self.node_params.get(s.name), self.log_level)
            for s in self.specs
        }

    def start(self) -> Supervisor:
        for name, cmd in self.commands().items():
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=self.env, start_new_session=True)
            self.procs[name] = proc
            t = threading.Thread(target=self._pump, args=(name, proc), daemon=True)
            t.start()
            self._threads.append(t)
            self.sink(f"[up] started {name} (pid {proc.pid})")
        return self

    def _pump(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            self.sink(f"[{name}] {raw.decode('utf-8', 'replace').rstrip()}")

    def dead(self) -> dict[str, int]:
        """Nodes that have exited, with their return codes."""
        return {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        """SIGINT, then SIGTERM, then SIGKILL, each after `timeout_s` (s). Returns exit codes.

        Recorders stop last, so they still record what the other nodes publish while stopping."""
        last = {s.name for s in self.specs if RECORD in s.runs_in}
        self._signal([p for n, p in self.procs.items() if n not in last], timeout_s)
        self._signal([p for n, p in self.procs.items() if n in last], timeout_s)
        for t in self._threads:
            t.join(timeout=2.0)
        codes = {n: p.wait() for n, p in self.procs.items()}
        self.sink(f"[up] stopped: {codes}")
        return codes

    def _signal(self, procs: list[subprocess.Popen[bytes]], timeout_s: float) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            alive = [p for p in procs if p.poll() is None]
            if not alive:
                break
            if sig == signal.SIGKILL:
                self._dump_stacks(alive)
            for p in alive:
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and any(p.poll() is None for p in alive):
                time.sleep(0.05)

    def _dump_stacks(self, procs: list[subprocess.Popen[bytes]]) -> None:
        """Ask nodes that ignored SIGINT and SIGTERM for their threads' stacks (run_node prints them on
        SIGUSR1), so the log says where they hung before they are killed."""
        names = {p.pid: n for n, p in self.procs.items()}
        for p in procs:
            self.sink(f"[up] {names.get(p.pid, p.pid)} did not stop after SIGINT and SIGTERM; its threads:")
            try:
                os.kill(p.pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass
        time.sleep(1.0)  # s: time to print

    def __enter__(self) -> Supervisor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def parse_node_params(items: Sequence[str]) -> dict[str, dict[str, str]]:
    """`node:param=value` strings -> {node: {param: value}}."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        if ":" not in item or "=" not in item:
            raise ValueError(f"--param takes node:name=value, got {item!r}")
        node, rest = item.split(":", 1)
        key, value = rest.split("=", 1)
        out.setdefault(node, {})[key] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="monologue-up", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="launch arguments:\n" + "\n".join(
                                     f"  {a.name}:= ({'|'.join(a.choices) or 'any'}, default {a.default!r}) "
                                     f"{a.description}" for a in LAUNCH_ARGUMENTS))
    ap.add_argument("--param", action="append", default=[], help="node:name=value parameter override")
    ap.add_argument("--config-dir", type=Path, default=None)
    try:
        values, rest = launch_values(argv)
        ns = ap.parse_args(rest)
        node_params = scene_params(values["robot"], values["scene"], ns.config_dir)
        for node, params in parse_node_params(ns.param).items():  # --param wins
            node_params.setdefault(node, {}).update(params)
    except ValueError as e:
        print(f"monologue-up: {e}", file=sys.stderr)
        return 2
    error = record_dir_error(values["record"])
    if error:
        print(f"monologue-up: {error}", file=sys.stderr)
        return 2
    record = Path(values["record"]) if values["record"] else None
    sup = Supervisor(values["robot"], values["llm"], ns.config_dir, node_params,
                     log_level=values["log_level"], record=record, web=values["web"] == "true",
                     foxglove=values["foxglove"] == "true")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    sup.start()
    rc = 0
    while not stop.wait(0.2):
        dead = sup.dead()
        if dead:
            sup.sink(f"[up] node(s) exited: {dead}; stopping the graph")
            rc = 1
            break
    sup.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
