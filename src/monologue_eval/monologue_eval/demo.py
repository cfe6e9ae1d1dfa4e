"""`monologue-demo`: run one instruction, print the monologue live, and exit 0 if the world ends up as asked.

    monologue-demo [seed:=N] [blocks:=2|3|4] [llm:=embedded|openai] [instruction:="..."] [timeout:=600]
                   [record:=<bag dir>] [robot:=sim|sim_kinematic|sim_kitchen|sim_household]
                   [strategy:=inner_monologue|saycan|cape|...] [method:=Z_E|F_E|...]
                   [perception:=oracle|camera] [log_level:=warn] [scene:=covers|disinfection|weights]
                   [web:=true|false] [foxglove:=true|false] [secure:=true keystore:=<dir>]
                   [--param node:name=value ...]
    monologue-demo robot:=ur5e|spot|spot_realsense fake:=true [instruction:="..."] [preflight:=false] ...
    monologue-demo graph:=running [instruction:="..."] [timeout:=600] [strategy:=...] [secure:=true keystore:=<dir>]

graph:=launch (default) brings up its own simulated graph (embedded LLM) on a random scene and stops
it at the end. The scene (its seed, and 2 or 3 blocks unless `blocks` is given) is printed, so a run
can be repeated with `seed:=N blocks:=M`. record:=<dir> records the run into a rosbag2 MCAP directory
with the LLM cassette next to it; `monologue-replay <dir>` replays it, `monologue-bag-info <dir>`
shows it. It refuses to start when a planner already runs on this ROS_DOMAIN_ID (use graph:=running).

web:=true (default) also starts the live web monitor (docs/web.md) and prints its URL: the `web` port of
config/monologue.yaml, or a free port when that one is taken. foxglove:=true (default false) also starts the
Foxglove bridge and prints its ws:// URL the same way (docs/web.md, section Foxglove).

secure:=true keystore:=<dir> (docs/security.md) joins the graph in the keystore's operator enclave and,
with graph:=launch, runs every node in its own enclave; it refuses to start when the middleware has no
DDS Security or the keystore lacks an enclave.

fake:=true is the dry run of a real robot (robot:=ur5e, spot, spot_realsense; docs/ur5e.md, docs/spot.md): the
robot's fakes run as processes of the graph (the UR controller and a RealSense over a tabletop; the Spot gRPC
server hosting a kitchen) and everything else runs as on the robot: the real backend, the safety layer,
perception on the camera images (the oracle detector: no detector weights needed), the success rules, the
preflight (monologue-check; preflight:=false skips it). The instruction defaults to the world's
DRY_RUN_INSTRUCTIONS; the verdict is the planner's (each step judged from the camera).

graph:=running starts nothing: it sends the instruction to the planner of a graph already running on
this ROS_DOMAIN_ID (`monologue-up` or `ros2 launch monologue_bringup monologue.launch.py`) and judges
the world from its topics (`sim/ground_truth`, or perception's `scene/description` on a real robot).
The graph's own arguments (robot, llm, scene, recording, parameters) cannot be given then.

The default instruction is judged by its reward ("Put the blocks in their matching bowls."); any
other instruction by the planner's own verdict.

strategy:= picks the planner strategy (default: the configuration's); method:= CAPE's variant
(`planner.cape.method`, strategy cape only). Symbolic worlds (robot:=sim_kitchen, SayCan's kitchen;
robot:=sim_household, CAPE's household) start in a state where the natural first step violates a
precondition (KITCHEN_DEMOS): the kitchen robot already holds the coke when asked to bring it (SayCan's
"find a coke" fails: "I am already holding the coke"), Spot already stands in the lab when asked to put
the phone on the nightstand ("stand up" fails: "I am already standing"). With strategy:=cape the
monologue shows the error and CAPE's corrective prompt ("Error: ... A correct step would be to") and
the corrected step. With llm:=expert (the expert stand-in, docs/llm.md) the stand-in knows the world, so
a wrong step comes from its error rate instead: 0.5 with a fixed seed per world and one CAPE sample a step
(EXPERT_ERROR_RATE, WorldDemo.expert_seed); in the kitchen its first step "pick up the coke" is refused
("I am already holding the coke") and the correction "bring it to you" reaches the goal
(`monologue-demo robot:=sim_kitchen strategy:=cape llm:=expert`). The world's prompt profile and CAPE
demonstration file are set for the robot;
the default instruction of these worlds is judged by its goal on the final state.

scene:= (robot:=sim or sim_kinematic) sets up one of Statler's domains (`sim.scene`, monologue_eval.statler_demo):
a fixed scene, a multi-query instruction (one query per line) in which a stated fact the robot cannot
perceive decides a later action, strategy statler unless strategy:= says otherwise, and the verdict from
the domain's hidden ground truth (`sim/statler_truth`). The planner's last state (`planner/world_state`)
and that truth are printed at the end; record:=<dir> keeps both topics in the bag.
"""
from __future__ import annotations

import json
import os
import random
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from monologue_bringup.graph import parse_launch_args, robot_entry, scene_node
from monologue_bringup.up import Supervisor, parse_node_params, record_dir_error

from .client import planner_available, run_episode, world_states
from .statler_demo import DEMOS as STATLER_DEMOS
from .statler_demo import StatlerDemo, final_truth

if TYPE_CHECKING:  # generated messages (mypy sees them as Any: rosidl ships no type information)
    from monologue_domain.kitchen.state import KitchenState
    from monologue_interfaces.action import ExecuteInstruction
    from monologue_interfaces.msg import SceneObject, TranscriptEvent

__all__ = ["CAMERA_PERCEPTION", "DEFAULT_INSTRUCTION", "WorldDemo", "main", "run_episode", "world_demo",
           "world_states"]

DEFAULT_INSTRUCTION = "Put the blocks in their matching bowls."
# perception:=camera: objects located from the simulator's RGB-D images (boxes from the oracle detector,
# 3D from depth, TF and open3d); success judged from those positions with IM's real-tabletop x-y rule.
CAMERA_PERCEPTION: dict[str, dict[str, str]] = {
    "perception": {"source": "camera", "detector": "oracle", "refresh_timeout": "8.0"},
    # the success detector waits longer for a scene than perception may take to process a fresh frame
    "success_detector": {"judge": "tabletop", "scene_timeout": "10.0"},
    # rendering and processing 640x480 RGB-D on 2 busy cores delays goal answers past the default 10 s
    # (a fresh-clone CI run under load: execute_skill's goal answered after more than 10 s)
    "planner": {"timeouts.service": "30.0"},
}
GRAPH_MODES = ("launch", "running")
DEFAULTS = {
    "graph": "launch", "robot": "sim", "llm": "embedded", "seed": "-1", "instruction": DEFAULT_INSTRUCTION,
    "timeout": "600", "log_level": "warn", "blocks": "0", "record": "", "perception": "oracle",
    "strategy": "", "method": "", "scene": "", "web": "true",
    "foxglove": "false", "secure": "false", "keystore": "", "fake": "false", "preflight": "true",
}
# Arguments that describe the graph the demo starts: meaningless with graph:=running.
RECORDER_READY_S = 30.0  # s a recorded run waits for the recorder to record every topic of the graph
OWN_GRAPH_ONLY = ("robot", "llm", "seed", "blocks", "record", "perception", "log_level", "method", "scene", "web",
                  "foxglove", "fake", "preflight")
# fake:=true (the dry run of a real robot, monologue_bringup.dryrun): the instruction of each world.
DRY_RUN_INSTRUCTIONS = {"tabletop": "Put the red block in the blue bowl.", "kitchen": "Pick up the coke."}


@dataclass(frozen=True)
class WorldDemo:
    """The demo of a symbolic (non-tabletop) world: its instruction, start state (the scene node's
    parameters), prompt profile, CAPE demonstration file, and the goal that judges the default instruction."""

    instruction: str
    scene_params: dict[str, str]
    prompt_profile: str
    cape_demonstrations: str
    goal: Callable[[KitchenState], bool]
    # llm:=expert: the world and goal the stand-in plans for (monologue_domain.expert.<world>), and the seed
    # of its error rate (EXPERT_ERROR_RATE, one CAPE sample a step) whose wrong first step the world refuses
    expert_goal: tuple[str, dict[str, object]] = ("", {})
    expert_seed: int = 0


# llm:=expert with strategy:=cape on a symbolic world: a wrong step with this probability (the stand-in's
# error rate, one sample per step, seeded by the world's `expert_seed`), so the demo shows a real
# precondition error and CAPE's correction of it (checked by test/test_demo_cape_system.py)
EXPERT_ERROR_RATE = 0.5


def _kitchen_start_holding(obj: str) -> str:
    from monologue_domain.kitchen.state import HELD
    from monologue_domain.kitchen.world import DEFAULT_PLACEMENTS

    return "[" + ", ".join(f"'{o}@{HELD if o == obj else w}'" for o, w in DEFAULT_PLACEMENTS.items()) + "]"


def world_demo(world: str) -> WorldDemo:
    """The demo of a symbolic world ("kitchen", "household"); ValueError for another world."""
    from monologue_domain.kitchen.state import HELD

    if world == "kitchen":  # the coke is already in hand: "find a coke" violates already_holding (CAPE D1)
        return WorldDemo("Bring me the coke", {"kitchen.objects": _kitchen_start_holding("coke"),
                                               "kitchen.robot_location": "far counter"}, "saycan", "cape_kitchen",
                         lambda s: s.location_of("coke") == "user" or (
                             s.location_of("coke") == HELD and s.robot_location == "user"),
                         ("kitchen", {"predicate": "delivered(coke)"}), 7)
    if world == "household":  # Spot already stands: "stand up" violates already_standing (CAPE D1)
        return WorldDemo("Put the phone on the nightstand", {"household.scene": "lab", "household.sitting": "false"},
                         "household", "cape_household", lambda s: s.location_of("phone") == "nightstand",
                         ("household", {"atoms": ["at(phone, nightstand)"]}), 0)
    raise ValueError(f"no demo for the {world!r} world")
RUNNING_READY_S = 15.0  # s to find the running graph's planner
OWN_GRAPH_PROBE_S = 2.0  # s to look for a planner already running before starting our own graph


@dataclass(frozen=True)
class DemoArgs:
    """The parsed command line."""

    values: dict[str, str]
    params: dict[str, dict[str, str]] = field(default_factory=dict)  # --param node:name=value
    given: frozenset[str] = frozenset()  # key:=value names on the command line


class HelpRequested(Exception):
    """-h / --help."""


def parse_args(argv: Sequence[str]) -> DemoArgs:
    """Parse `key:=value` arguments and `--param node:name=value`; raise ValueError for bad ones."""
    if any(a in ("-h", "--help") for a in argv):
        raise HelpRequested
    values, rest = parse_launch_args(argv, DEFAULTS)
    extra = [rest[i + 1] for i, a in enumerate(rest[:-1]) if a == "--param"]
    unexpected = [a for i, a in enumerate(rest) if a != "--param" and (i == 0 or rest[i - 1] != "--param")]
    if unexpected or len(extra) * 2 != len(rest):
        raise ValueError(f"unexpected arguments: {unexpected or rest}")
    given = frozenset(a.split(":=", 1)[0] for a in argv if ":=" in a and not a.startswith("-"))
    if values["graph"] not in GRAPH_MODES:
        raise ValueError(f"graph must be one of {list(GRAPH_MODES)}, got {values['graph']!r}")
    if values["perception"] not in ("oracle", "camera"):
        raise ValueError("perception must be oracle or camera")
    for flag in ("fake", "preflight"):
        if values[flag] not in ("true", "false"):
            raise ValueError(f"{flag} must be true or false, got {values[flag]!r}")
    if float(values["timeout"]) <= 0:
        raise ValueError("timeout must be > 0 s")
    int(values["seed"]), int(values["blocks"])  # ValueError if they are not integers
    if values["method"] and values["strategy"] != "cape":
        raise ValueError("method:= is CAPE's variant: give it with strategy:=cape")
    if values["scene"] and values["scene"] not in STATLER_DEMOS:
        raise ValueError(f"scene must be one of {sorted(STATLER_DEMOS)}, got {values['scene']!r}")
    if values["graph"] == "running":
        clash = sorted(given & set(OWN_GRAPH_ONLY)) + (["--param"] if extra else [])
        if clash:
            raise ValueError(f"graph:=running uses the running graph as it is; {clash} cannot be given "
                             "(pass them to monologue-up or the launch file)")
    return DemoArgs(values, parse_node_params(extra), given)


def judge(instruction: str, result: ExecuteInstruction.Result, objects: Sequence[SceneObject],
          world: WorldDemo | None = None) -> bool:
    """Whether the world satisfies the instruction: the matching-bowls reward on the final objects for
    the default instruction (a symbolic world's: its goal on the final state); the planner's own
    verdict for any other (no reward function for it)."""
    from monologue_domain.tasks import matching_bowls_done

    if world is not None and instruction == world.instruction:
        from monologue_domain.kitchen.scene import state_from_scene

        try:
            return bool(objects) and world.goal(state_from_scene(world_states(objects)))
        except (ValueError, KeyError):
            return False
    if instruction == DEFAULT_INSTRUCTION:
        return matching_bowls_done(world_states(objects)) if objects else False
    return bool(result.success)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
    except HelpRequested:
        print(__doc__)
        return 0
    except ValueError as e:
        print(f"monologue-demo: {e}\n(monologue-demo --help for the arguments)", file=sys.stderr)
        return 2
    try:
        keystore = _secure(args.values)
    except ValueError as e:
        print(f"monologue-demo: {e}", file=sys.stderr)
        return 2
    if args.values["graph"] == "running":
        return run_on_running_graph(args.values)
    return run_own_graph(args, keystore)


def _secure(values: dict[str, str]) -> Path | None:
    """secure:=true keystore:=DIR (docs/security.md): this process joins the graph in the keystore's
    operator enclave, and a graph it starts runs each node in its own enclave. Refused (fail closed) when
    the middleware has no DDS Security or the keystore lacks the enclaves."""
    from monologue_bringup.security import OPERATOR, enclave_name, keystore_problems, security_env
    from monologue_bringup.up import middleware_security_error, security_keystore

    keystore = security_keystore(values)
    if keystore is None:
        return None
    error = middleware_security_error()
    if error:
        raise ValueError(f"secure:=true: {error}")
    problems = keystore_problems(keystore, [OPERATOR])
    if problems:
        raise ValueError(f"secure:=true keystore:={keystore}: {'; '.join(problems)}")
    os.environ.update(security_env(keystore))
    os.environ["ROS_SECURITY_ENCLAVE_OVERRIDE"] = enclave_name(OPERATOR)
    return keystore


def _report(result: ExecuteInstruction.Result, done: bool, t0: float) -> None:
    print(f"== planner: {'success' if result.success else 'failure'} ({result.reason}); "
          f"{result.steps_taken} skills in {time.monotonic() - t0:.1f} s")
    print(f"== world state satisfies the instruction: {done}")
    print(f"== transcript: {result.transcript_path}")


def _show(lock: threading.Lock) -> Callable[[TranscriptEvent], None]:
    def show(event: TranscriptEvent) -> None:
        with lock:
            print(f"  {event.text}", flush=True)

    return show


def run_on_running_graph(values: dict[str, str]) -> int:
    """graph:=running: one goal to the planner already up on this domain; nothing is started or stopped."""
    domain = os.environ.get("ROS_DOMAIN_ID", "0")
    print(f"== Inner Monologue demo on the running graph (ROS_DOMAIN_ID={domain})")
    print(f"== instruction: {values['instruction']}")
    t0 = time.monotonic()
    try:
        print("== monologue:")
        options = {"strategy": values["strategy"]} if values["strategy"] else None
        result, objects = run_episode(values["instruction"], float(values["timeout"]), _show(threading.Lock()),
                                      ready_timeout_s=RUNNING_READY_S, fallback_scene=True, goal_options=options)
    except TimeoutError as e:
        print(f"== demo failed: {e}; is a graph running on ROS_DOMAIN_ID={domain} "
              "(monologue-up, or ros2 launch monologue_bringup monologue.launch.py)?", file=sys.stderr)
        return 1
    except RuntimeError as e:
        print(f"== demo failed: {e}", file=sys.stderr)
        return 1
    done = judge(values["instruction"], result, objects)
    _report(result, done, t0)
    return 0 if (result.success and done) else 1


def _web_address(robot: str, llm: str, overrides: dict[str, str], node: str = "web",
                 default_port: int = 8080) -> tuple[str, int]:
    """The host and port of the web monitor (or of `node`, e.g. foxglove_bridge): the configured ones
    (overrides first), or a free port when the configured port is taken (so a demo still starts next
    to another one)."""
    from monologue_bringup.graph import default_config_dir, params_files
    from monologue_common.core.settings import parameters_from_files

    params = parameters_from_files(params_files(default_config_dir(), robot, llm), node)
    host = str(overrides.get("host", params.get("host", "127.0.0.1")))
    port = int(str(overrides.get("port", params.get("port", default_port))))
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            sock.bind((host, 0))
        return host, int(sock.getsockname()[1])


def run_dry_run(args: DemoArgs, keystore: Path | None = None) -> int:
    """fake:=true: bring up a real robot's graph on its fakes, run the instruction, stop the graph."""
    from monologue_bringup.up import set_preflight

    values = args.values
    try:
        kind = robot_entry(values["robot"]).world
    except ValueError as e:
        print(f"monologue-demo: {e}", file=sys.stderr)
        return 2
    instruction = values["instruction"] if "instruction" in args.given else DRY_RUN_INSTRUCTIONS.get(kind, "")
    lock = threading.Lock()

    def node_log(line: str) -> None:
        with lock:
            print(line, flush=True)

    transcripts = Path(os.environ.get("MONOLOGUE_RUNS_DIR", tempfile.gettempdir())) / "monologue_demo"
    node_params: dict[str, dict[str, str]] = {"planner": {"transcript_dir": str(transcripts)}}
    if values["strategy"]:
        node_params["planner"]["strategy"] = values["strategy"]
    for node, params in args.params.items():  # --param node:name=value wins
        node_params.setdefault(node, {}).update(params)
    try:
        sup = Supervisor(values["robot"], values["llm"], node_params=node_params, sink=node_log,
                         log_level=values["log_level"], web=values["web"] == "true", keystore=keystore, fake=True)
    except ValueError as e:
        print(f"monologue-demo: {e}", file=sys.stderr)
        return 2
    set_preflight(sup, values)
    print(f"== dry run: robot={values['robot']} on its fakes, llm={values['llm']}")
    print(f"== instruction: {instruction}")
    t0 = time.monotonic()
    try:
        sup.start()
        print("== monologue:")
        result, objects = run_episode(instruction, float(values["timeout"]), _show(lock), fallback_scene=True)
    except (TimeoutError, RuntimeError) as e:
        print(f"== demo failed: {e}", file=sys.stderr)
        sup.stop()
        return 1
    codes = sup.stop()
    done = judge(instruction, result, objects)
    _report(result, done, t0)
    crashed = {n: c for n, c in codes.items() if c not in (0, -2, 130)}
    if crashed:
        print(f"== nodes exited with errors: {crashed}", file=sys.stderr)
    return 0 if (result.success and done) else 1


def run_own_graph(args: DemoArgs, keystore: Path | None = None) -> int:
    """graph:=launch: bring up a simulated graph on a random scene, run the instruction, stop the graph."""
    values = args.values
    if values["fake"] == "true":
        return run_dry_run(args, keystore)
    seed = int(values["seed"])
    if seed < 0:
        seed = random.SystemRandom().randrange(100_000)
    blocks = int(values["blocks"]) or random.Random(seed).choice((2, 3))
    if not 1 <= blocks <= 4:
        print("blocks must be 1-4 (IM §4.1 scenes hold at most 4 blocks)", file=sys.stderr)
        return 2
    world: WorldDemo | None = None
    statler: StatlerDemo | None = STATLER_DEMOS.get(values["scene"])
    try:
        scene = scene_node(values["robot"])
        kind = robot_entry(values["robot"]).world
        if kind != "tabletop":
            if statler is not None:
                raise ValueError(f"scene:={values['scene']} needs a tabletop robot (sim, sim_kinematic), not "
                                 f"{values['robot']}")
            world = world_demo(kind)
    except ValueError as e:
        print(f"monologue-demo: {e}", file=sys.stderr)
        return 2
    instruction = values["instruction"]
    if world is not None and "instruction" not in args.given:
        instruction = world.instruction
    if statler is not None and "instruction" not in args.given:
        instruction = statler.instruction
    if statler is not None and not values["strategy"]:
        values = {**values, "strategy": "statler"}
    error = record_dir_error(values["record"])
    if error:
        print(f"== {error}", file=sys.stderr)
        return 2
    record = Path(values["record"]).expanduser() if values["record"] else None
    if planner_available(OWN_GRAPH_PROBE_S):
        print(f"== a planner is already running on ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}: "
              "use `monologue-demo graph:=running` to run the instruction on it, or stop it first",
              file=sys.stderr)
        return 2
    transcripts = Path(os.environ.get("MONOLOGUE_RUNS_DIR", tempfile.gettempdir())) / "monologue_demo"
    strategy = values["strategy"] or "the configured strategy"
    if statler is not None:
        print(f"== Statler demo: robot={values['robot']} llm={values['llm']} strategy={strategy} "
              f"scene={statler.scene} seed={seed}: " + ", ".join(f"{k}={v}" for k, v in statler.params.items()))
    elif world is None:
        print(f"== Inner Monologue demo: robot={values['robot']} llm={values['llm']} strategy={strategy} "
              f"scene seed={seed} blocks={blocks}")
    else:
        print(f"== Inner Monologue demo: robot={values['robot']} llm={values['llm']} strategy={strategy}"
              f"{' method=' + values['method'] if values['method'] else ''}; start: "
              + ", ".join(f"{k}={v}" for k, v in world.scene_params.items()))
    print(f"== instruction: {instruction}")
    lock = threading.Lock()

    def node_log(line: str) -> None:
        with lock:
            print(line, flush=True)

    node_params: dict[str, dict[str, str]] = {
        scene: {"sim.seed": str(seed), "sim.num_blocks": str(blocks),
                "sim.num_bowls": str(max(blocks, 3) if blocks <= 3 else 3),
                "sim.matching_bowls": "true" if blocks <= 3 else "false"},
    } if world is None else {scene: dict(world.scene_params), "planner": {
        "prompt_profile": world.prompt_profile, "cape.demonstrations": world.cape_demonstrations}}
    if statler is not None:  # the scene's own prompt files (planner statler.domains.<scene>)
        node_params[scene] = {"sim.seed": str(seed), "sim.scene": statler.scene, **statler.params}
        node_params.setdefault("planner", {})["statler.domain"] = statler.scene
    if values["strategy"]:
        node_params.setdefault("planner", {})["strategy"] = values["strategy"]
    if values["method"]:
        node_params.setdefault("planner", {})["cape.method"] = values["method"]
    if world is not None and values["llm"] == "expert" and values["strategy"] == "cape":
        node_params.setdefault("planner", {}).update({  # a seeded wrong first step, grounded exactly
            "llm.expert.error_rate": str(EXPERT_ERROR_RATE), "llm.expert.seed": str(world.expert_seed),
            "cape.samples": "1", "cape.embedder": "llm"})
        print(f"== expert stand-in: error rate {EXPERT_ERROR_RATE} (seed {world.expert_seed}), one CAPE sample a "
              "step: a wrong step is refused for a precondition and CAPE corrects it")
    if record is None:  # a recorded run keeps its transcript files next to the bag
        node_params.setdefault("planner", {})["transcript_dir"] = str(transcripts)
    if values["perception"] == "camera":  # scene and success from the camera images (oracle boxes, depth, open3d)
        for node, params in CAMERA_PERCEPTION.items():
            node_params.setdefault(node, {}).update(params)
    for node, params in args.params.items():  # --param node:name=value wins
        node_params.setdefault(node, {}).update(params)
    web = values["web"] == "true"
    if web:
        host, port = _web_address(values["robot"], values["llm"], node_params.get("web", {}))
        node_params.setdefault("web", {})["port"] = str(port)
        print(f"== live monitor: http://{host}:{port}/")
    foxglove = values["foxglove"] == "true"
    if foxglove:
        host, port = _web_address(values["robot"], values["llm"], node_params.get("foxglove_bridge", {}),
                                  "foxglove_bridge", 8765)
        node_params.setdefault("foxglove_bridge", {})["port"] = str(port)
        print(f"== Foxglove: open ws://{host}:{port} in Foxglove (layout: config/foxglove_layout.json)")
    sup = Supervisor(values["robot"], values["llm"], node_params=node_params, sink=node_log,
                     log_level=values["log_level"], record=record, web=web, foxglove=foxglove, keystore=keystore)
    t0 = time.monotonic()
    truth: dict[str, object] = {}
    if world is not None and sup.expert_truth_dir is not None and world.expert_goal[0]:
        from monologue_domain.expert.channel import write_task

        write_task(sup.expert_truth_dir, instruction, world.expert_goal[0], world.expert_goal[1])
    try:
        sup.start()
        print("== monologue:")
        result, objects = run_episode(instruction, float(values["timeout"]), _show(lock),
                                      recorder_ready_s=RECORDER_READY_S if record is not None else 0.0,
                                      recorded_topics=statler.topics if statler is not None else ())
        if statler is not None:
            truth, state = final_truth()
            print(f"== planner/world_state (the robot's belief): {json.dumps(state.get('state', {}))}")
            print(f"== sim/statler_truth (hidden ground truth): {json.dumps(truth)}")
    except (TimeoutError, RuntimeError) as e:
        print(f"== demo failed: {e}", file=sys.stderr)
        return 1
    finally:
        codes = sup.stop()
    if statler is not None:
        print(f"== goal: {statler.expect}")
        done = bool(truth) and statler.goal(truth)
    else:
        done = judge(instruction, result, objects, world)
    _report(result, done, t0)
    if record is not None:
        print(f"== bag: {record} (monologue-bag-info {record}; monologue-replay {record})")
    crashed = {n: c for n, c in codes.items() if c not in (0, -2, 130)}
    if crashed:
        print(f"== nodes exited with errors: {crashed}", file=sys.stderr)
    return 0 if (result.success and done) else 1


if __name__ == "__main__":
    sys.exit(main())
