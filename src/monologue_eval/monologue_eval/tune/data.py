"""The tuning data generator (issue 30): the expert stand-in plays sampled scenes of every world through
the REAL planner on the real graph, recording each query it answers (its `record_path`), and each recorded
query becomes an Example (tune/examples.py) tagged with the episode's world, strategy, family, instruction
and split.

    python -m monologue_eval.tune data --out DIR --episodes N --seed S [--worlds kinematic,kitchen,...]
        [--error-rate 0.15] [--error-share 0.4] [--timeout 120]

Worlds (each one graph that stays up; the scene's node restarts per episode, as the benchmark suites do,
whose graph runners this reuses with our own instructions and scenes):
- `kinematic`: the kinematic tabletop (robot sim_kinematic), IM Table 1's families on scenes drawn by
  monologue_domain.tasks (seeds far from the benchmark's), IM's scoring and generative planners in the
  variants LLM + Object (open loop, SayCan's setting), Object + Success and Object + Scene;
- `mujoco`: the same in MuJoCo (robot sim; slow, not in the default list);
- `kitchen`: SayCan's office kitchen (robot sim_kitchen) with our kitchen instructions (bring, pick, move,
  throw away, two objects = the Long-Horizon family) on random layouts: SayCan, SayCan without value
  functions, the generative planner, IM with Success / Object + Success feedback (with IM §4.3's
  disturbances for part of them: interjected failures);
- `household`: CAPE's household (robot sim_household): tasks drawn like CAPE's generated set (other seeds)
  in the `lab` and `home` scenes (the `kitchen` scene is held out), CAPE's Z_E and F_E+S_g and SayCan;
- `multitalk`: MultiTalk's full pipeline on tabletop scenes of the kinematic world (matching bowls, pick
  and place, stacking, all into one bowl).
Statler's domains are not generated: the Statler expert reads only the benchmark's query templates
(monologue_domain.expert.statler), so its instructions would share word 4-grams with Statler's queries.

Part of the episodes (`--error-share`) run with the expert's error rate (`--error-rate`): wrong lines, format
slips, failed steps and retries appear in the prompts, while every example's completion stays correct. CAPE
then draws one sample per step (`cape.samples: 1`, as the p = 0.2 ceiling runs do), so that a wrong step is
executed and its precondition error and correction appear, instead of being outvoted by the other samples.
Instructions come from tune/wording.py; one that shares a word 4-gram with a benchmark text
(tune/heldout.py) is redrawn. Output: DIR/examples.jsonl, DIR/summary.json (counts per world, strategy and
split; seconds and examples per minute per world), DIR/raw/ (the expert's records), DIR/graph/ (logs).
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from monologue_bringup.graph import default_config_dir

from .examples import EXAMPLES_FILE, Example, from_record, write_examples
from .heldout import NgramIndex, benchmark_texts, split_of
from .wording import Wording, Wordings

LOG = logging.getLogger("monologue_tune.data")
WORLDS = ("kinematic", "kitchen", "household", "multitalk", "mujoco")
DEFAULT_WORLDS = ("kinematic", "kitchen", "household", "multitalk")
# share of --episodes per world (normalised over the chosen worlds)
WORLD_SHARE = {"kinematic": 0.40, "kitchen": 0.30, "household": 0.15, "multitalk": 0.15, "mujoco": 0.10}
SEED_BASE = 1_000_003  # scene seeds start far from the benchmarks' (0, 1, ...)
REDRAWS = 20  # wordings drawn before an instruction that touches a benchmark text is given up
MAX_STEPS = 12  # planner steps per episode


@dataclass
class Item:
    """One episode to play."""

    world: str
    strategy: str  # the example's strategy label
    family: str
    wording: Wording
    split: str
    variant: str  # the runner's variant key
    payload: Any  # world-specific (TaskInstance, kitchen Instruction, CapeTask)
    condition: str = "none"


@dataclass
class WorldStats:
    episodes: int = 0
    failed: int = 0  # episodes the graph failed (no examples kept)
    examples: int = 0
    seconds: float = 0.0
    redrawn: int = 0  # wordings redrawn for touching a benchmark text
    by: Counter[str] = field(default_factory=Counter)


class RawTail:
    """The expert's record file: the lines appended since the last `take()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def take(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        end = chunk.rfind(b"\n") + 1  # whole lines only
        self.offset += end
        return [json.loads(line) for line in chunk[:end].decode("utf-8").splitlines() if line.strip()]


def expert_params(record: Path, error_rate: float, seed: int) -> dict[str, str]:
    """The planner's parameters that make the expert record (and err)."""
    return {"llm.expert.record_path": str(record), "llm.expert.error_rate": repr(float(error_rate)),
            "llm.expert.seed": str(seed)}


def world_planner_params(world: str, record: Path, error_rate: float, seed: int) -> dict[str, str]:
    """The planner's parameters of a world's graph: the expert's recording and error rate; with errors, CAPE
    draws one sample per step (so a wrong step is executed and corrected, not outvoted)."""
    params = expert_params(record, error_rate, seed)
    if world == "household" and error_rate > 0:
        params["cape.samples"] = "1"
    return params


# ----- wording ---------------------------------------------------------------------------------------
class Sayer:
    """Wordings checked against the benchmark texts' 4-grams (redrawn when they touch one)."""

    def __init__(self, seed: int, index: NgramIndex | None) -> None:
        self.wordings = Wordings(seed)
        self.index = index
        self.redrawn = 0

    def say(self, intent: str, slots: dict[str, str], key: object) -> Wording:
        for attempt in range(REDRAWS):
            w = self.wordings.say(intent, slots, (key, attempt))
            if self.index is None or self.index.clean(w.text):
                return w
            self.redrawn += 1
        raise RuntimeError(f"no clean wording of {intent} {slots} in {REDRAWS} draws")


# ----- the tabletop (kinematic, MuJoCo) and MultiTalk ------------------------------------------------
TABLETOP_VARIANTS: tuple[tuple[str, str], ...] = (  # (IM Table 1 variant, goal strategy)
    ("im_object_success", "inner_monologue"), ("llm_object", "inner_monologue"),
    ("im_object_scene", "inner_monologue"), ("im_object_success", "inner_monologue_generative"),
    ("llm_object", "inner_monologue_generative"))
MULTITALK_FAMILIES = ("matching_bowls", "pick_place", "stack", "blocks_to_bowl")


def tabletop_items(world: str, n: int, seed: int, sayer: Sayer) -> list[Item]:
    from monologue_domain.tasks import FAMILIES, sample_task

    rng = random.Random(f"tabletop:{world}:{seed}")
    families = list(FAMILIES) if world != "multitalk" else list(MULTITALK_FAMILIES)
    items = []
    for i in range(n):
        family = families[i % len(families)]
        task = sample_task(family, SEED_BASE + seed * 100_003 + i)
        w = sayer.say(f"tabletop.{family}", dict(task.slots), (world, i))
        variant, strategy = (("multitalk", "multitalk") if world == "multitalk"
                             else TABLETOP_VARIANTS[rng.randrange(len(TABLETOP_VARIANTS))])
        items.append(Item(world, "multitalk" if world == "multitalk" else "inner_monologue", family, w,
                          split_of(world, family), f"{variant}|{strategy}", replace(task, instruction=w.text)))
    return items


def _tabletop_runner_class() -> Any:
    from monologue_domain.expert.tabletop import WORLD, goal_of_task

    from ..core.benchmark import VARIANTS, Settings
    from ..harness import BenchmarkAborted
    from ..suites.table1 import GraphRunner, goal_options

    class TabletopRunner(GraphRunner):
        """IM Table 1's graph runner playing our tasks."""

        def __init__(self, out: Path, robot: str, planner: dict[str, str], timeout_s: float) -> None:
            settings = Settings(llm="expert", seed=0, strategy="scoring", affordances=False, place_noise_m=0.0,
                                max_steps=MAX_STEPS)
            super().__init__(settings, out, timeout_s, robot)
            self.static.setdefault("planner", {}).update(planner)

        def play_item(self, item: Item) -> None:
            self.check_alive()
            task = item.payload
            for attempt in range(5):
                if attempt:
                    from monologue_domain.tasks import sample_task
                    task = replace(sample_task(task.family, task.scene.seed + 7_919 * attempt),
                                   instruction=task.instruction, slots=task.slots)
                initial = self._set_scene(task)
                try:
                    if not task.reward(initial):
                        break
                except ValueError:
                    break
            variant, strategy = item.variant.split("|")
            self.record_expert_task(task.instruction, WORLD, goal_of_task(task))
            if variant == "multitalk":
                from monologue_interfaces.action import ExecuteInstruction
                off = ExecuteInstruction.Goal.OPTION_OFF
                options: dict[str, str | int] = {"strategy": "multitalk", "human_feedback": off,
                                                 "max_steps": MAX_STEPS}
            else:
                options = goal_options(VARIANTS[variant], self.settings)
                options["strategy"] = strategy
            try:
                self.play(task.instruction, self.timeout_s, options, variant)
            except BenchmarkAborted as e:
                raise RuntimeError(str(e)) from e

    return TabletopRunner


# ----- the kitchen -----------------------------------------------------------------------------------
KITCHEN_PLACES = ("close counter", "far counter", "table")
KITCHEN_ROBOT_STARTS = ("initial position", "table", "close counter", "far counter")
KITCHEN_INTENTS = ("bring", "bring", "pick", "move", "trash", "two_to_place", "two_bring")
KITCHEN_VARIANTS: tuple[tuple[str, str, str], ...] = (  # (suite, variant, condition)
    ("saycan", "saycan", "none"), ("saycan", "no_vf", "none"), ("saycan", "generative", "none"),
    ("im_kitchen", "im_success", "none"), ("im_kitchen", "im_object_success", "none"),
    ("im_kitchen", "im_object_success", "disturbances"))


def kitchen_items(n: int, seed: int, sayer: Sayer) -> list[Item]:
    from monologue_domain.kitchen.goals import make_state, parse
    from monologue_domain.kitchen.suites import Instruction
    from monologue_domain.kitchen.vocabulary import OBJECTS

    from ..core.kitchen_bench import SUITE_VARIANTS

    rng = random.Random(f"kitchen:{seed}")
    items = []
    for i in range(n):
        places = {o: rng.choice(KITCHEN_PLACES) for o in OBJECTS}
        start = make_state(rng.choice(KITCHEN_ROBOT_STARTS), places)
        intent = KITCHEN_INTENTS[i % len(KITCHEN_INTENTS)]
        x, y = rng.sample(OBJECTS, 2)
        place = rng.choice([p for p in KITCHEN_PLACES if p != places[x]])
        if intent == "two_to_place":
            place = rng.choice([p for p in KITCHEN_PLACES if p not in (places[x], places[y])] or ["trash"])
        pred = {"bring": f"delivered({x})", "pick": f"holding({x})", "move": f"at({x}, {place})",
                "trash": f"at({x}, trash)", "two_to_place": f"all(at({x}, {place}), at({y}, {place}))",
                "two_bring": f"all(delivered({x}), delivered({y}))"}[intent]
        family = "long_horizon" if intent.startswith("two_") else f"kitchen_{intent}"
        w = sayer.say(f"kitchen.{intent}", {"object": x, "other": y, "place": place}, ("kitchen", i))
        suite, variant, condition = KITCHEN_VARIANTS[rng.randrange(len(KITCHEN_VARIANTS))]
        kv = SUITE_VARIANTS[suite][variant]
        strategy = "saycan" if kv.strategy == "saycan" else "inner_monologue"
        instr = Instruction(f"tune_{i:05d}", family, w.text, start, parse(pred), ())
        items.append(Item("kitchen", strategy, family, w, split_of("kitchen", family), f"{suite}|{variant}", instr,
                          condition))
    return items


def _kitchen_runner_class() -> Any:
    from monologue_domain.expert.kitchen import WORLD as KITCHEN_WORLD
    from monologue_domain.expert.kitchen import goal_dict
    from monologue_domain.kitchen.suites import load_suite, suite_path

    from ..core.kitchen_bench import SUITE_VARIANTS, KitchenKey, KitchenSettings, goal_options
    from ..harness import on_off
    from ..suites._kitchen import KitchenGraphRunner

    class KitchenRunner(KitchenGraphRunner):
        """The kitchen suites' graph runner playing our instructions."""

        def __init__(self, out: Path, planner: dict[str, str], timeout_s: float) -> None:
            settings = KitchenSettings(suite="saycan", llm="expert", seed=0, max_steps=MAX_STEPS)
            super().__init__(settings, load_suite(suite_path(default_config_dir(), "saycan")), out, timeout_s)
            self.planner_params.update(planner)

        def play_item(self, item: Item) -> None:
            self.check_alive()
            instr = item.payload
            self.instructions = {instr.key: instr}
            suite, variant = item.variant.split("|")
            self._set_scene(KitchenKey(instr.key, variant, item.condition, 0), instr)
            self.record_expert_task(instr.text, KITCHEN_WORLD, goal_dict(str(instr.goal)))
            kv = SUITE_VARIANTS[suite][variant]
            self.play(instr.text, self.timeout_s, goal_options(kv, MAX_STEPS, *on_off()), variant)

    return KitchenRunner


# ----- CAPE's household ------------------------------------------------------------------------------
HOUSEHOLD_SCENES = ("lab", "home", "kitchen")  # kitchen: held out
HOUSEHOLD_VARIANTS = ("Z_E", "F_E+S_g", "saycan_perfect")


def _household_intent(goal: Sequence[tuple[str, ...]], openable: set[str]) -> tuple[str, dict[str, str]]:
    if len(goal) == 2:
        (_a, x, y), (_o, z) = goal[0], goal[1]
        return "put_turn_on", {"thing": x, "receptacle": y, "switch": z}
    atom = goal[0]
    if atom[0] == "held":
        return "fetch", {"thing": atom[1]}
    if atom[0] == "on":
        return "turn_on", {"switch": atom[1]}
    return ("put_in" if atom[2] in openable else "put_on"), {"thing": atom[1], "receptacle": atom[2]}


def household_items(n: int, seed: int, sayer: Sayer) -> list[Item]:
    from monologue_domain.kitchen.household import SCENES, generate_tasks

    from ..core.cape_bench import CapeTask, _task

    per_scene = -(-n // len(HOUSEHOLD_SCENES))
    tasks = generate_tasks(HOUSEHOLD_SCENES, per_scene, seed=SEED_BASE + seed)
    rng = random.Random(f"household:{seed}")
    items = []
    for i, g in enumerate(tasks[:n] if len(tasks) <= n else rng.sample(tasks, n)):
        scene = SCENES[g.scene]()[0]
        openable = {t.name for t in scene.things if "openable" in t.properties}
        intent, slots = _household_intent(g.goal, openable)
        w = sayer.say(f"household.{intent}", slots, ("household", g.scene, i))
        task: CapeTask = _task(f"tune_{g.scene}_{i:04d}", w.text, g.scene, "generated", g.goal, g.held, g.standing)
        variant = HOUSEHOLD_VARIANTS[i % len(HOUSEHOLD_VARIANTS)]
        strategy = "saycan" if variant.startswith("saycan") else "cape"
        items.append(Item("household", strategy, f"household_{intent}", w, split_of("household", intent, g.scene),
                          variant, task))
    items.sort(key=lambda it: it.variant)  # the planner restarts per variant
    return items


def _household_runner_class() -> Any:
    from ..core.cape_bench import CapeKey, CapeSettings, load_cape_suite
    from ..suites.cape import CapeGraphRunner

    class HouseholdRunner(CapeGraphRunner):
        """The CAPE suite's graph runner playing our tasks."""

        def __init__(self, out: Path, planner: dict[str, str], timeout_s: float) -> None:
            settings = CapeSettings(suite="cape", llm="expert", seed=0, max_steps=MAX_STEPS)
            super().__init__(settings, load_cape_suite(default_config_dir()), out, timeout_s)
            self.overrides.update(planner)

        def play_item(self, item: Item) -> None:
            self.tasks = {item.payload.key: item.payload}
            self.run(CapeKey(item.variant, item.payload.key, 0))

    return HouseholdRunner


# ----- the run ---------------------------------------------------------------------------------------
def plan_items(worlds: Sequence[str], episodes: int, seed: int, sayer: Sayer) -> dict[str, list[Item]]:
    total = sum(WORLD_SHARE[w] for w in worlds)
    out: dict[str, list[Item]] = {}
    for w in worlds:
        n = max(1, round(episodes * WORLD_SHARE[w] / total))
        if w in ("kinematic", "mujoco", "multitalk"):
            out[w] = tabletop_items(w, n, seed, sayer)
        elif w == "kitchen":
            out[w] = kitchen_items(n, seed, sayer)
        elif w == "household":
            out[w] = household_items(n, seed, sayer)
    return out


def make_runner(world: str, out: Path, planner: dict[str, str], timeout_s: float) -> Any:
    if world in ("kinematic", "multitalk"):
        from ..core.multitalk_bench import planner_params as mt_params
        extra = {**mt_params("full"), **planner} if world == "multitalk" else planner
        return _tabletop_runner_class()(out, "sim_kinematic", extra, timeout_s)
    if world == "mujoco":
        return _tabletop_runner_class()(out, "sim", planner, timeout_s)
    if world == "kitchen":
        return _kitchen_runner_class()(out, planner, timeout_s)
    if world == "household":
        return _household_runner_class()(out, planner, timeout_s)
    raise ValueError(f"unknown world {world!r}; choose from {list(WORLDS)}")


def phases(items: Sequence[Item], error_rate: float, share: float) -> Iterator[tuple[float, list[Item]]]:
    """The items without and with the error rate (every 1/share-th item errs)."""
    if error_rate <= 0 or share <= 0:
        yield 0.0, list(items)
        return
    erring = {i for i in range(len(items)) if int((i + 1) * share) > int(i * share)}
    yield 0.0, [it for i, it in enumerate(items) if i not in erring]
    yield error_rate, [it for i, it in enumerate(items) if i in erring]


def run_world(world: str, items: Sequence[Item], out: Path, error_rate: float, error_share: float, seed: int,
              timeout_s: float, stats: WorldStats, emit: Callable[[list[Example]], None]) -> None:
    """Play `items` on the world's graph (one graph per error rate)."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    from rclpy.utilities import ok

    for rate, chunk in phases(items, error_rate, error_share):
        if not chunk:
            continue
        graph_out = out / "graph" / f"{world}-p{rate:g}"
        graph_out.mkdir(parents=True, exist_ok=True)
        raw = out / "raw" / f"{world}-p{rate:g}.jsonl"
        tail = RawTail(raw)
        started = not ok()
        if started:
            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        runner = make_runner(world, graph_out, world_planner_params(world, raw, rate, seed), timeout_s)
        t0 = time.monotonic()
        try:
            print(f"== {world} p={rate:g}: starting the graph ...", flush=True)
            runner.start()
            for n, item in enumerate(chunk, 1):
                t_ep = time.monotonic()
                tail.take()  # drop anything left over (e.g. a failed episode's calls)
                try:
                    item_run(runner, item)
                except Exception as e:  # noqa: BLE001 - one bad episode must not end a long data run
                    stats.failed += 1
                    print(f"== {world} [{n}/{len(chunk)}] failed: {e}", flush=True)
                    tail.take()
                    try:
                        runner.recover()
                    except Exception as e2:  # noqa: BLE001 - a graph that cannot come back ends this world
                        print(f"== {world}: the graph did not recover ({e2}); stopping this world", flush=True)
                        break
                    continue
                records = tail.take()
                examples = [from_record(r, id=example_id(item, seed, rate, stats.episodes, k), world=item.world,
                                        strategy=item.strategy, family=item.family, instruction=item.wording.text,
                                        split=item.split)
                            for k, r in enumerate(records)]
                emit(examples)
                stats.episodes += 1
                stats.examples += len(examples)
                for ex in examples:
                    stats.by[f"{ex.strategy}/{ex.kind}/{ex.split}"] += 1
                print(f"== {world} p={rate:g} [{n}/{len(chunk)}] {len(examples)} examples in "
                      f"{time.monotonic() - t_ep:.1f} s | {item.family} | {item.wording.text}", flush=True)
        finally:
            stats.seconds += time.monotonic() - t0
            runner.close()
            if started and ok():
                rclpy.shutdown()


def example_id(item: Item, seed: int, rate: float, episode: int, k: int) -> str:
    """A unique id across data sets of other seeds too (merged parts): world/strategy/s<seed>-p<rate>-<episode>/<k>."""
    return f"{item.world}/{item.strategy}/s{seed}-p{rate:g}-{episode:05d}/{k}"


def item_run(runner: Any, item: Item) -> None:
    runner.play_item(item)


def generate(out: Path, episodes: int, seed: int, worlds: Sequence[str], error_rate: float, error_share: float,
             timeout_s: float) -> dict[str, Any]:
    """Generate a data set into `out` (which must hold no examples yet); the summary (also written, when
    interrupted too, to out/summary.json)."""
    out.mkdir(parents=True, exist_ok=True)
    examples_path = out / EXAMPLES_FILE
    if examples_path.exists() and examples_path.stat().st_size:
        raise ValueError(f"{examples_path} already holds examples; choose a new --out")
    t_plan = time.monotonic()
    sayer = Sayer(seed, NgramIndex(benchmark_texts(default_config_dir())))
    plan = plan_items(worlds, episodes, seed, sayer)
    print(f"== plan: {', '.join(f'{w}: {len(v)}' for w, v in plan.items())} episodes "
          f"({sayer.redrawn} wordings redrawn) in {time.monotonic() - t_plan:.1f} s", flush=True)
    stats = {w: WorldStats() for w in plan}
    t0 = time.monotonic()

    def emit(examples: list[Example]) -> None:
        write_examples(examples_path, examples)

    def summary(interrupted: bool) -> dict[str, Any]:
        return {
            "episodes_planned": episodes, "seed": seed, "worlds": list(worlds), "error_rate": error_rate,
            "error_share": error_share, "seconds": round(time.monotonic() - t0, 1),
            "wordings_redrawn": sayer.redrawn, "interrupted": interrupted,
            "per_world": {w: {"episodes": s.episodes, "failed": s.failed, "examples": s.examples,
                              "seconds": round(s.seconds, 1),
                              "examples_per_min": round(60.0 * s.examples / s.seconds, 1) if s.seconds else 0.0,
                              "by_strategy_kind_split": dict(sorted(s.by.items()))} for w, s in stats.items()},
        }

    done = False
    try:
        for w, items in plan.items():
            run_world(w, items, out, error_rate, error_share, seed, timeout_s, stats[w], emit)
        done = True
    finally:  # also when interrupted: what was generated is kept and counted
        result = summary(not done)
        (out / "summary.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", type=Path, required=True, help="output directory (new)")
    ap.add_argument("--episodes", type=int, default=400, help="episodes over all worlds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worlds", default=",".join(DEFAULT_WORLDS),
                    help=f"comma list of {', '.join(WORLDS)} (default: all but mujoco)")
    ap.add_argument("--error-rate", type=float, default=0.15, help="the expert's error rate in erring episodes")
    ap.add_argument("--error-share", type=float, default=0.4, help="share of episodes with the error rate")
    ap.add_argument("--timeout", type=float, default=120.0, help="s per episode")


def main(ns: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    worlds = [w.strip() for w in ns.worlds.split(",") if w.strip()]
    unknown = [w for w in worlds if w not in WORLDS]
    if unknown or not worlds:
        print(f"tune data: unknown world(s) {unknown}; choose from {list(WORLDS)}", file=sys.stderr)
        return 2
    if ns.episodes < 1 or not 0 <= ns.error_rate <= 1 or not 0 <= ns.error_share <= 1:
        print("tune data: --episodes >= 1, --error-rate and --error-share in [0, 1]", file=sys.stderr)
        return 2
    from ..client import stop_on_signals

    stop_on_signals()  # `kill` stops the graph cleanly, as Ctrl-C does
    try:
        summary = generate(ns.out.resolve(), ns.episodes, ns.seed, worlds, ns.error_rate, ns.error_share, ns.timeout)
    except ValueError as e:
        print(f"tune data: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tune data: interrupted", file=sys.stderr)
        return 130
    print(json.dumps(summary, indent=1))
    return 0
