"""What a run of the graph starts, whatever runs it: the nodes, their parameters and environment.

up.Supervisor starts them as processes, container.Container in this process (`container:=true`).
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Self

from .dryrun import DryRun
from .dryrun import plan as dryrun_plan
from .graph import (
    EXPERT,
    LIVE,
    all_nodes,
    dds_env,
    default_config_dir,
    expert_params,
    graph_for,
    params_custom_data,
    params_files,
    record_params,
)
from .security import CONTAINER, enclave_name, keystore_problems, security_env

Sink = Callable[[str], None]


class GraphRun:
    """The nodes of the robot's graph (graph_for, or `nodes`) and the parameters and environment each gets;
    Supervisor runs them as processes, Container (container.py) in this process. A context manager."""

    in_process = False  # True: every node in this one process (one DDS participant, one SROS2 enclave)

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
        keystore: Path | None = None,
        fake: bool = False,
    ) -> None:
        """`nodes` defaults to the nodes of `mode` (graph.select); `record` adds the recorder writing
        into that bag directory (its parameters are merged under `node_params`); `web` adds the web
        monitor (its history follows the planner's transcript_dir unless given); `foxglove` adds the Foxglove bridge;
        `keystore` runs every node with DDS Security (SROS2, Enforce) in its enclave of that keystore
        (monologue-keystore; the in-process graph in /monologue/container); ValueError if it lacks one.
        `fake` is the dry run (dryrun.plan): the robot's fakes run as processes started before the nodes, and
        the nodes get the parameters and environment that point them at the fakes (`node_params` still win)."""
        self.robot, self.llm = robot, llm
        self.config_dir = config_dir or default_config_dir()
        self.record = record
        self.node_params: dict[str, dict[str, str]] = {}
        self.dry_run: DryRun | None = None
        if fake:
            if self.in_process:
                raise ValueError("fake:=true runs the fakes as processes beside the nodes; use container:=false")
            base = dict(os.environ if env is None else env)
            self.dry_run = dryrun_plan(robot, Path(tempfile.mkdtemp(prefix="monologue-dryrun-")), self.config_dir,
                                       base)
            merged = {k: dict(v) for k, v in self.dry_run.node_params.items()}
            for k, v in (node_params or {}).items():
                merged.setdefault(k, {}).update(v)
            node_params = merged
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
        self.expert_truth_dir: Path | None = None  # llm:=expert: the stand-in's side channel (tasks go there)
        if llm == EXPERT:
            params_files(self.config_dir, robot, llm)  # refuses a robot that is not simulated
            given = self.node_params.get("planner", {}).get("llm.expert.truth_dir")
            self.expert_truth_dir = Path(given or tempfile.mkdtemp(prefix="monologue-expert-"))
            for k, v in expert_params(robot, self.expert_truth_dir, self.config_dir).items():
                self.node_params.setdefault(k, {}).update(v)
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.env.update({k: v for k, v in dds_env(self.config_dir).items() if k not in self.env})
        self.env.setdefault("RCUTILS_COLORIZED_OUTPUT", "0")
        self.sink = sink or (lambda line: print(line, flush=True))
        self.log_level = log_level
        every = all_nodes(robot, self.config_dir)
        chosen = (list(nodes) if nodes is not None
                  else [s.name for s in graph_for(robot, mode, record is not None, self.config_dir, web, foxglove,
                                                  self.node_params)])
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
        self.keystore = keystore
        if keystore is not None:
            problems = keystore_problems(keystore, [CONTAINER] if self.in_process else [s.name for s in self.specs])
            if problems:
                raise ValueError("; ".join(problems))
            self.env.update(security_env(keystore))
            if self.in_process:
                self.env["ROS_SECURITY_ENCLAVE_OVERRIDE"] = enclave_name(CONTAINER)
            else:  # an inherited override would put every node in one enclave, whatever its --enclave
                self.env.pop("ROS_SECURITY_ENCLAVE_OVERRIDE", None)
        self._init_state()

    def _init_state(self) -> None:
        """What the runner keeps about the running nodes (set before start)."""

    def start(self) -> Self:
        raise NotImplementedError

    def dead(self) -> dict[str, int]:
        """Nodes that have exited, with their return codes."""
        raise NotImplementedError

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
