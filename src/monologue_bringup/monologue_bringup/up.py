"""`monologue-up`: start the graph on machines without `ros2 launch` (pip-only ROS 2).

Starts the same processes as launch/monologue.launch.py with `--ros-args --params-file ...`,
prefixes their output, forwards SIGINT/SIGTERM and stops everything cleanly; when a node exits, the
whole graph stops (the launch file does the same).

    monologue-up [robot:=sim] [llm:=embedded] [log_level:=info] [record:=<bag dir>] [web:=true]
                 [foxglove:=true] [container:=true] [secure:=true keystore:=<dir>]
                 [--param skills:sim.seed=3 ...] [--config-dir DIR]

The `key:=value` arguments are the launch file's (LAUNCH_ARGUMENTS, one table for both), plus
container:=true, which runs every node in this one process (monologue_bringup.container) instead of
one process per node.
record:=<dir> also starts the recorder (rosbag2 MCAP into <dir>) and stores the planner's LLM
cassette and transcript files next to the bag, so `monologue-replay <dir>` can replay the run; a
directory that already holds a bag is refused.
secure:=true keystore:=<dir> runs every node with DDS Security (SROS2) in its enclave
(/monologue/<node>) of a keystore made by monologue-keystore; it refuses to start when the keystore or
the middleware's security plug-ins are missing (docs/security.md).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from monologue_bag.core.layout import bag_files_in

from .dryrun import fake_command
from .graph import (
    LLMS,
    RECORD,
    ROBOTS,
    NodeSpec,
    parse_launch_args,
    robot_entry,
    ros_args,
    scene_node,
)
from .graph_run import GraphRun
from .security import ENFORCE, OFF, SECURITY_CHOICES, enclave_args, fastdds_security


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
    LaunchArgument("llm", "embedded", "LLM backend: embedded Gemma 3 270M (frozen, or embedded_tuned: with the "
                   "planner's LoRA adapter), an OpenAI-compatible server, or the expert stand-in (simulated robots "
                   "only)", LLMS),
    LaunchArgument("log_level", "info", "ROS log level of every node (debug, info, warn, error, fatal)"),
    LaunchArgument("record", "", "Record the run into this rosbag2 MCAP directory (empty: no recording); "
                   "a directory that already holds a bag is refused"),
    LaunchArgument("scene", "", "Simulated tabletops: one of Statler's domains (the scene node's sim.scene; "
                   "empty: the robot file's)", ("", "tabletop", "covers", "disinfection", "weights")),
    LaunchArgument("web", "false", "Also start the live web monitor and console (config/monologue.yaml `web`; "
                   "docs/web.md)", ("true", "false")),
    LaunchArgument("foxglove", "false", "Also start the Foxglove bridge, a Foxglove WebSocket server on "
                   "ws://127.0.0.1:8765 (config/monologue.yaml `foxglove_bridge`; docs/web.md)", ("true", "false")),
    LaunchArgument("secure", OFF, "DDS Security (SROS2): true runs every node in its enclave of keystore:= "
                   "(authentication, encryption, access control; docs/security.md)", SECURITY_CHOICES),
    LaunchArgument("keystore", "", "The SROS2 keystore for secure:=true (made by monologue-keystore)"),
    LaunchArgument("fake", "false", "Dry run of a real robot (ur5e, spot, spot_realsense): its fakes run as "
                   "processes of the graph, everything else unchanged (monologue_bringup.dryrun; docs/ur5e.md)",
                   ("true", "false")),
    LaunchArgument("preflight", "true", "Run monologue-check's checks before the nodes start (real robots and "
                   "fake:=true; false skips them)", ("true", "false")),
)


# monologue-up's own arguments (the launch file always starts processes).
UP_ARGUMENTS: tuple[LaunchArgument, ...] = LAUNCH_ARGUMENTS + (
    LaunchArgument("container", "false", "Run every node in this one process on one rclpy context, as a ROS 2 "
                   "component container (fast start-up; monologue_bringup.container) instead of one process "
                   "per node", ("true", "false")),
)


def scene_params(robot: str, scene: str, config_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """The scene node's `sim.scene` for `scene:=` ({} when empty); ValueError for a robot without a scene."""
    return {scene_node(robot, config_dir): {"sim.scene": scene}} if scene else {}


def launch_values(argv: Sequence[str], arguments: Sequence[LaunchArgument] = LAUNCH_ARGUMENTS
                  ) -> tuple[dict[str, str], list[str]]:
    """`arguments`' values from `key:=value` items of `argv` (defaults otherwise), and the other items.

    Raises ValueError for an unknown key or a value outside an argument's choices."""
    values, rest = parse_launch_args(argv, {a.name: a.default for a in arguments})
    for a in arguments:
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


def security_keystore(values: dict[str, str]) -> Path | None:
    """The keystore of secure:=true (None when false); ValueError when true has no keystore:=."""
    if values["secure"] != ENFORCE:
        if values["keystore"]:
            raise ValueError("keystore:= needs secure:=true")
        return None
    if not values["keystore"]:
        raise ValueError("secure:=true needs keystore:=<dir> (create one with monologue-keystore <dir>)")
    return Path(values["keystore"]).expanduser()


def middleware_security_error(env: dict[str, str] | None = None) -> str | None:
    """Why the installed middleware cannot run a secured graph (Fast DDS without its security plug-ins),
    or None (it can, or the RMW is not Fast DDS and decides for itself)."""
    env = dict(os.environ if env is None else env)
    if not env.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp").startswith("rmw_fastrtps"):
        return None
    probe = fastdds_security(env)
    return None if probe.available else probe.explain()


def package_prefix(package: str) -> Path:
    """The install prefix of `package`; RuntimeError if it is not built or sourced."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        return Path(get_package_prefix(package))
    except PackageNotFoundError as e:
        raise RuntimeError(
            f"package {package!r} is not built or not sourced; run `make setup` and "
            f"`. scripts/env.sh`") from e


def executable_path(spec: NodeSpec) -> Path:
    """`<prefix>/lib/<package>/<executable>` as `ros2 run` would find it."""
    exe = package_prefix(spec.package) / "lib" / spec.package / spec.executable
    if not exe.is_file():
        raise RuntimeError(f"executable {exe} not found; rebuild with `make build`")
    return exe


class Supervisor(GraphRun):
    """Runs every node of the robot's graph (graph_for) as a child process; usable as a context manager."""

    ready_timeout_s = 60.0  # s a fake process may take to serve (a loaded machine)

    def _init_state(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._threads: list[threading.Thread] = []
        self.preflight: Callable[[], list[str]] | None = None  # problems (one line each) that refuse the start

    def commands(self) -> dict[str, list[str]]:
        return {
            s.name: [str(executable_path(s))] + ros_args(
                s, self.config_dir, self.robot, self.llm, self.node_params.get(s.name), self.log_level)
            + (enclave_args(s.name) if self.keystore is not None else [])
            for s in self.specs
        }

    def fake_commands(self) -> dict[str, list[str]]:
        """The dry run's fake processes (fake:=true), in start order."""
        if self.dry_run is None:
            return {}
        return {p.name: fake_command(p, package_prefix(p.package)) for p in self.dry_run.processes}

    def start(self) -> Self:
        """The fakes (fake:=true) first, until each serves; then the preflight, if set (RuntimeError naming its
        problems: no node starts); then the nodes."""
        commands = self.commands()  # fails before anything starts (a package not built)
        try:
            if self.dry_run is not None:
                self.dry_run.write_files()
                for name, cmd in self.fake_commands().items():
                    self._spawn(name, cmd)
                for p in self.dry_run.processes:
                    self._wait_ready(p.name, Path(p.ready_file) if p.ready_file else None)
                    if p.port_param is not None:  # the port the fake bound, for the node that connects to it
                        node, param = p.port_param
                        self.node_params.setdefault(node, {})[param] = Path(p.ready_file).read_text().split()[0]
                commands = self.commands()
            if self.preflight is not None:
                problems = self.preflight()
                if problems:
                    raise RuntimeError("preflight failed (preflight:=false skips it):\n  " + "\n  ".join(problems))
        except BaseException:
            self.stop()  # the fakes already started
            raise
        for name, cmd in commands.items():
            self._spawn(name, cmd)
        return self

    def _spawn(self, name: str, cmd: list[str]) -> None:
        extra = self.dry_run.node_env.get(name, {}) if self.dry_run is not None else {}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**self.env, **extra}, start_new_session=True)
        self.procs[name] = proc
        t = threading.Thread(target=self._pump, args=(name, proc), daemon=True)
        t.start()
        self._threads.append(t)
        self.sink(f"[up] started {name} (pid {proc.pid})")

    def _wait_ready(self, name: str, ready: Path | None) -> None:
        """Until the fake `name` has created `ready` (bounded); RuntimeError if it exits or takes too long."""
        deadline = time.monotonic() + self.ready_timeout_s
        while ready is not None and not ready.exists():
            code = self.procs[name].poll()
            if code is not None:
                raise RuntimeError(f"fake {name} exited with code {code} before serving; see its output above")
            if time.monotonic() > deadline:
                raise RuntimeError(f"fake {name} did not serve within {self.ready_timeout_s:.0f} s")
            time.sleep(0.05)

    def _pump(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            self.sink(f"[{name}] {raw.decode('utf-8', 'replace').rstrip()}")

    def dead(self) -> dict[str, int]:
        """Nodes that have exited, with their return codes."""
        return {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        """SIGINT, then SIGTERM, then SIGKILL, each after `timeout_s` (s). Returns exit codes.

        Recorders stop after the other nodes, so they still record what those publish while stopping; the
        dry run's fakes stop last (the nodes still talk to them while stopping: the lease, the arm)."""
        last = {s.name for s in self.specs if RECORD in s.runs_in}
        fakes = {p.name for p in self.dry_run.processes} if self.dry_run is not None else set()
        self._signal([p for n, p in self.procs.items() if n not in last | fakes], timeout_s)
        self._signal([p for n, p in self.procs.items() if n in last], timeout_s)
        self._signal([p for n, p in self.procs.items() if n in fakes], timeout_s)
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


def graph_runner(container: bool) -> type[GraphRun]:
    """Supervisor (a process per node), or with `container` the in-process Container (same arguments)."""
    if not container:
        return Supervisor
    from .container import Container  # rclpy: only when asked for

    return Container


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
                                     f"{a.description}" for a in UP_ARGUMENTS))
    ap.add_argument("--param", action="append", default=[], help="node:name=value parameter override")
    ap.add_argument("--config-dir", type=Path, default=None)
    try:
        values, rest = launch_values(argv, UP_ARGUMENTS)
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
    runner = graph_runner(values["container"] == "true")
    try:
        keystore = security_keystore(values)
        error = middleware_security_error() if keystore is not None else None
        if error:  # fail closed: never start an open graph when a secured one was asked for
            raise ValueError(f"secure:=true: {error}")
        sup = runner(values["robot"], values["llm"], ns.config_dir, node_params,
                     log_level=values["log_level"], record=record, web=values["web"] == "true",
                     foxglove=values["foxglove"] == "true", keystore=keystore, fake=values["fake"] == "true")
    except ValueError as e:
        print(f"monologue-up: {e}", file=sys.stderr)
        return 2
    set_preflight(sup, values)

    def node_exited(dead: dict[str, int]) -> int:
        sup.sink(f"[up] node(s) exited: {dead}; stopping the graph")
        return 1

    return run_until_signal(sup, "monologue-up", node_exited)


def set_preflight(sup: GraphRun, values: dict[str, str]) -> None:
    """monologue-check's checks before the nodes start, for a real robot or a dry run (preflight:=true)."""
    if values.get("preflight", "true") != "true" or robot_entry(sup.robot, sup.config_dir).simulated:
        return
    if not isinstance(sup, Supervisor):
        sup.sink("[up] container:=true: no preflight; run monologue-check first")
        return

    def preflight() -> list[str]:
        from .check import fake_checks, run_checks

        findings = (fake_checks(sup, ()) if sup.dry_run is not None
                    else run_checks(sup.robot, sup.llm, sup.config_dir, sup.node_params, env=sup.env))
        for f in findings:
            sup.sink(f"[preflight] {f.line()}")
        return [f.line() for f in findings if f.fails]

    sup.preflight = preflight


def run_until_signal(sup: GraphRun, prog: str, node_exited: Callable[[dict[str, int]], int]) -> int:
    """Start the graph and run it until SIGINT / SIGTERM (exit code 0) or until a node exits (the code
    `node_exited` gives for {node: exit code}); then stop it. 1 if the graph does not start."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        sup.start()
    except RuntimeError as e:  # a node of an in-process graph failed to load or start (ContainerError)
        print(f"{prog}: {e}", file=sys.stderr)
        sup.stop()
        return 1
    rc = 0
    while not stop.wait(0.2):
        dead = sup.dead()
        if dead:
            rc = node_exited(dead)
            break
    sup.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
