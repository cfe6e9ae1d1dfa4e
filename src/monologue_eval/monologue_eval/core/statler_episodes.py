"""The seeded generator of `--suite statler`'s episodes (config/benchmarks/statler.yaml), ROS-free.

S §IV ("20 evaluation episodes each of which consists of 5-16 consecutive steps of user queries. Every
episode contains at least one query that requires reasoning over the interaction history") with
episodes of our own: the authors' episodes (https://github.com/ripl/statler) have no licence, so none is
copied; the query templates follow the kinds S §IV-A and Prompts 7-9 describe.

How an episode is made (`generate_episode(domain, rng)`):
1. a scene of the domain (monologue_domain.statler_domains; blocks, bowls, cups / dirty blocks /
   weights drawn from `rng`);
2. queries one after another: at each step every template that applies to the current world offers
   candidates; one is drawn, its reference moves are played on the kinematic world with the domain's
   hidden truth (`TabletopWorld` + `DomainTruth`, the same code the simulator runs) and it is kept only
   if every move succeeds and the template's own conditions hold afterwards;
3. the expected outcome of every query is read from that world and truth at that moment - never
   typed: the moves (`gold`, as S's "[Gold Code]" would be), the words of an answer (`say`, computed
   from the truth: a colour, yes / no, a count), or nothing (a statement, which must move nothing).

Statements tell the robot what it cannot perceive (S §IV-A): which block is under which cup (`covers`),
which blocks are dirty or clean (`disinfection`), weight ratios (`weights`); they come before any query
that needs them. A query is **temporal** when its expected outcome depends on an earlier query of the
episode (a statement or a move), not only on the query and the objects in view at the start - e.g.
"Put the dirty blocks in the disinfector", "What is the color of the block under the orange cup?"
(after it was put there), "Put the block in the pink bowl on the green block".

Conventions the scoring shares with the planner (statler_loop): "table" as a target is the first of
TABLE_LOCATIONS not yet used in the episode (a move whose block would not land on the table is not
generated); the scene's layout is `TabletopWorld.from_spec(spec, LAYOUT_SEED)` (the bench passes
`sim.seed` = its --seed, 0 by default: geometry-dependent answers assume that seed). To avoid answers
that hinge on how blocks happen to touch inside a bowl, no move puts a clean block into a bowl holding
a dirty one or the other way round (stacking on a block is the contagion the episodes test).

`python -m monologue_eval.core.statler_episodes [--seed 0] [--per-domain 20] [--out FILE]` writes the
suite file; test_statler_bench.py checks that the committed file is exactly what seed 0 generates.
"""
from __future__ import annotations

import argparse
import copy
import itertools
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import make_spec
from monologue_domain.statler_domains import DomainTruth, domain_spec, read_domain
from monologue_domain.statler_truth import DisinfectionTruth, inside, touching
from monologue_domain.tabletop import BLOCK_SIZE, COLORS, DISINFECTOR

from .statler_bench import DOMAIN_SCENES, TABLE, Episode, Query

GENERATOR_SEED = 0  # the seed config/benchmarks/statler.yaml was generated with
LAYOUT_SEED = 0  # sim.seed of the scenes (monologue-bench --seed default)
PER_DOMAIN = 20  # episodes per domain (S §IV)
MIN_QUERIES, MAX_QUERIES = 5, 12  # per episode (S: 5-16)
# where "table" puts a block: planner statler.table_locations (config/monologue.yaml), first free one
TABLE_LOCATIONS: tuple[str, ...] = ("middle", "bottom side", "top side", "left side", "right side")
TEMPORAL_SHARE = 0.4  # chance that a query (after the statements) is drawn from the temporal templates
FAVOURED = ("same_total", "all_dirty", "uncover_move")  # S's signature queries: drawn first half the time
_LEVEL = 0.006  # m: two blocks whose heights differ less are "at the same height"
_NUMBERS = ("zero", "one", "two", "three", "four", "five")
_RATIO_TEXT = {1.0: "has the same weight as", 2.0: "is twice the weight of", 3.0: "is three times the weight of",
               4.0: "is four times the weight of", 0.5: "is half the weight of"}
WEIGHTS: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0)


class GenerationError(RuntimeError):
    """No valid episode could be drawn (should not happen; names the domain)."""


# ---- the world an episode plays in -------------------------------------------------------------------


@dataclass
class Played:
    """The world and hidden truth after some moves, and the table locations used so far."""

    world: TabletopWorld
    truth: DomainTruth
    used_locations: list[str]
    moved: set[str]

    def copy(self) -> Played:
        """An independent copy (objects and truth copied; cheaper than deepcopy: no RNG state)."""
        w = self.world
        world = TabletopWorld(objects=[copy.copy(o) for o in w.objects], place_noise=w.place_noise,
                              completed_affordance=w.completed_affordance, reach=w.reach, logger=w.logger)
        t = self.truth
        truth = DomainTruth(t.scene, DisinfectionTruth(set(t.disinfection.dirty), t.disinfection.disinfectors),
                            t.weights, t.revision)
        world.observer = truth
        return Played(world, truth, list(self.used_locations), set(self.moved))

    def place(self, obj: str, target: str) -> tuple[bool, str]:
        """One move, "table" resolved as the planner does; (ok, message)."""
        if target == TABLE:
            free = [loc for loc in TABLE_LOCATIONS if loc not in self.used_locations]
            if not free:
                return False, "no free table location"
            target = free[0]
            self.used_locations.append(target)
        covered_before = set(self.world.covered())
        try:
            ok, message = self.world.pick_place(obj, target)
        except Exception as e:  # noqa: BLE001 - SkillRejected and unknown names: the move is not playable
            return False, str(e)
        if ok and target in TABLE_LOCATIONS and self.world.get(obj).category == "block" \
                and abs(self.world.get(obj).z - BLOCK_SIZE / 2) > 1e-6:
            return False, f"the {obj} did not land on the table at {target}"
        if ok and target in TABLE_LOCATIONS and set(self.world.covered()) - covered_before:
            return False, f"the {obj} covered a block at {target}"
        self.moved.add(obj)
        return ok, message


def scene_world(domain: str, scene: Mapping[str, Any], layout_seed: int = LAYOUT_SEED) -> Played:
    """The episode's scene on the kinematic world with its hidden truth (what the simulator builds)."""
    params: dict[str, Any] = {f"sim.{k}": v for k, v in scene.items()}
    params["sim.scene"] = DOMAIN_SCENES[domain]
    settings = read_domain(params)
    spec = domain_spec(settings, make_spec(layout_seed, 0, 0, False, tuple(scene["block_colors"]),
                                           tuple(scene["bowl_colors"])))
    spec.validate()  # the physics simulator's strict check
    world = TabletopWorld.from_spec(spec, layout_seed)
    truth = DomainTruth.create(settings, spec, layout_seed)
    if truth is None:
        raise ValueError(f"domain {domain!r} has no truth")
    world.observer = truth
    world.settle()
    return Played(world, truth, [], set())


def replay(domain: str, scene: Mapping[str, Any], queries: Sequence[Query],
           layout_seed: int = LAYOUT_SEED) -> Played:
    """The scene after every query's gold moves; GenerationError if one is not playable."""
    p = scene_world(domain, scene, layout_seed)
    for q in queries:
        for obj, target in q.gold:
            ok, message = p.place(obj, target)
            if not ok:
                raise GenerationError(f"{q.text!r}: {obj} -> {target}: {message}")
    return p


# ---- what the world shows --------------------------------------------------------------------------


def visible_blocks(w: TabletopWorld) -> list[str]:
    hidden = w.covered()
    return [b.name for b in w.blocks if b.name not in hidden]


def clear(w: TabletopWorld, name: str) -> bool:
    return not w.objects_on_top_of(name)


def on_table(w: TabletopWorld, name: str) -> bool:
    """A block resting on the table itself (not on a block, in a bowl or on a cup)."""
    return abs(w.get(name).z - BLOCK_SIZE / 2) < 1e-6


def containers(w: TabletopWorld) -> list[str]:
    return [b.name for b in w.bowls]


def container_of(w: TabletopWorld, block: str) -> str | None:
    return next((c for c in containers(w) if block in inside(w, c)), None)


def directly_on(w: TabletopWorld, lower: str) -> list[str]:
    return [u for u, lo in touching(w) if lo == lower]


def _join(names: Sequence[str]) -> str:
    names = [f"the {n}" for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _color(block: str) -> str:
    return block.rsplit(" ", 1)[0]


# ---- candidates per domain ---------------------------------------------------------------------------
# A candidate: (template, text, temporal, gold moves, say words). `say` alternatives are "a|b".

Candidate = tuple[str, str, bool, tuple[tuple[str, str], ...], tuple[str, ...]]


def _put(obj: str, target: str) -> str:
    if target == TABLE:
        return f"Put the {obj} on the table"
    prep = "in" if target.endswith(" bowl") or target == DISINFECTOR else "on"
    return f"Put the {obj} {prep} the {target}"


def _literal_moves(p: Played, movable: Sequence[str], targets: Sequence[str]) -> Iterator[Candidate]:
    w = p.world
    for obj in movable:
        if obj not in visible_blocks(w) and w.get(obj).category == "block" or not clear(w, obj):
            continue
        for t in targets:
            if t == obj or (t != TABLE and w.get(t).category == "block" and not clear(w, t)):
                continue
            if t != TABLE and w.get(t).category == "block" and t not in visible_blocks(w):
                continue
            if t != TABLE and t in containers(w) and obj in inside(w, t):
                continue
            if t == TABLE and on_table(w, obj):
                continue
            yield ("move", _put(obj, t), False, ((obj, t),), ())


def _pp_candidates(p: Played, said: set[str], history: Sequence[Query]) -> Iterator[Candidate]:
    w = p.world
    blocks = [b.name for b in w.blocks]
    covered = w.covered()
    for b, cup in covered.items():  # statements of what the robot cannot see (not what it did itself)
        if b not in said and cup not in p.moved:
            yield ("state_covered", f"The {b} is under the {cup}", False, (), ())
    targets = [*blocks, *containers(w), TABLE]
    yield from _literal_moves(p, blocks, targets)
    for cup_obj in w.cups:  # a cup over a block on the table
        if not clear(w, cup_obj.name):
            continue
        for b in visible_blocks(w):
            if on_table(w, b) and clear(w, b):
                yield ("cover", f"Put the {cup_obj.name} on the {b}", False, ((cup_obj.name, b),), ())
    known = {b for b, c in covered.items() if b in said or c in p.moved}  # stated, or covered by a move
    for b in [x for x in covered if x in known]:  # dict order (a set's order changes between processes)
        cup = covered[b]
        for t in [*containers(w), *[x for x in visible_blocks(w) if clear(w, x)]]:
            yield ("uncover_move", _put(b, t), True, ((cup, TABLE), (b, t)), ())
    bowls = containers(w)
    if history:
        for bowl in bowls:
            held = [b for b in inside(w, bowl) if b in visible_blocks(w)]
            if len(held) == 1 and clear(w, held[0]):
                for t in visible_blocks(w):
                    if t != held[0] and clear(w, t) and t not in inside(w, bowl):
                        yield ("bowl_ref", f"Put the block in the {bowl} on the {t}", True, ((held[0], t),), ())
        empty = [b for b in bowls if not inside(w, b)]
        if len(bowls) >= 2 and len(empty) == 1:
            for b in visible_blocks(w):
                if clear(w, b) and container_of(w, b) is None:
                    yield ("empty_bowl", f"Put the {b} in the empty bowl", True, ((b, empty[0]),), ())
        for cup_obj in w.cups:
            under = [b for b, c in covered.items() if c == cup_obj.name]
            if len(under) == 1 and (under[0] in said or cup_obj.name in p.moved):
                yield ("ask_under", f"What is the color of the block under the {cup_obj.name}?", True, (),
                       (_color(under[0]),))
        for a, b in itertools.permutations(visible_blocks(w), 2):
            if not ({a, b} & p.moved):
                continue
            dz = w.get(a).z - w.get(b).z
            if dz > BLOCK_SIZE - _LEVEL or abs(dz) < _LEVEL or dz < -(BLOCK_SIZE - _LEVEL):
                yield ("ask_higher", f"Is the {a} in a higher position than the {b}?", True, (),
                       ("yes" if dz > 0.0 and abs(dz) >= _LEVEL else "no",))
        for bowl in bowls:
            n = len(inside(w, bowl))
            if n and any(x in p.moved for x in inside(w, bowl)):
                yield ("ask_count", f"How many blocks are in the {bowl}?", True, (), (f"{n}|{_NUMBERS[n]}",))
        for lower in visible_blocks(w):
            up = directly_on(w, lower)
            if len(up) == 1 and up[0] in visible_blocks(w):
                yield ("ask_above", f"What is the color of the block right above the {lower}?", True, (),
                       (_color(up[0]),))


def _mixes(p: Played, obj: str, target: str) -> bool:
    """Would `obj` join a bowl holding a block of the other cleanliness (not the disinfector)?"""
    w, d = p.world, p.truth.disinfection
    if target == TABLE or target == DISINFECTOR or w.get(target).category != "bowl":
        return False
    return any(d.is_dirty(b) != d.is_dirty(obj) for b in inside(w, target))


def _dis_candidates(p: Played, said: set[str], history: Sequence[Query]) -> Iterator[Candidate]:
    w, d = p.world, p.truth.disinfection
    blocks = [b.name for b in w.blocks]
    if "dirty" not in said:
        dirty = [b for b in blocks if d.is_dirty(b)]
        verb = "is" if len(dirty) == 1 else "are"
        yield ("state_dirty", f"{_join(dirty)[0].upper()}{_join(dirty)[1:]} {verb} dirty", False, (), ())
        return
    if "clean" not in said:
        clean = [b for b in blocks if not d.is_dirty(b)]
        verb = "is" if len(clean) == 1 else "are"
        yield ("state_clean", f"{_join(clean)[0].upper()}{_join(clean)[1:]} {verb} clean", False, (), ())
        return
    targets = [*blocks, *containers(w), TABLE]
    for c in _literal_moves(p, blocks, targets):
        if not _mixes(p, c[3][0][0], c[3][0][1]):
            yield c
    for word, want in (("dirty", True), ("clean", False)):
        group = [b for b in blocks if d.is_dirty(b) == want]
        for t in [*containers(w), TABLE]:
            if t == DISINFECTOR and not want:
                continue
            todo = [b for b in group if t == TABLE and not on_table(w, b)
                    or t != TABLE and b not in inside(w, t)]
            if not todo or (t not in (TABLE, DISINFECTOR) and any(d.is_dirty(b) != want for b in inside(w, t))):
                continue
            # top of a stack first: sort by height, highest first
            order = tuple(sorted(todo, key=lambda b: -w.get(b).z))
            where = "on the table" if t == TABLE else f"in the {t}"
            yield ("all_" + word, f"Put all the {word} blocks {where}", True, tuple((b, t) for b in order), ())
        for b in blocks:
            yield ("ask_" + word, f"Is the {b} {word}?", True, (), ("yes" if d.is_dirty(b) == want else "no",))


def _relations(weights: Mapping[str, float], rng: random.Random) -> list[tuple[str, str, float]] | None:
    """Statements (a, b, w_a / w_b) that fix every weight relative to the others, or None."""
    names = list(weights)
    rng.shuffle(names)
    out: list[tuple[str, str, float]] = []
    for i, a in enumerate(names[1:], 1):
        ratios = [(b, weights[a] / weights[b]) for b in names[:i] if weights[a] / weights[b] in _RATIO_TEXT]
        if not ratios:
            return None
        b, r = rng.choice(ratios)
        out.append((a, b, r))
    return out


def _w_candidates(p: Played, said: set[str], history: Sequence[Query],
                  relations: Sequence[tuple[str, str, float]]) -> Iterator[Candidate]:
    w = p.world
    assert p.truth.weights is not None
    wt = p.truth.weights.weights
    pending = [r for r in relations if f"{r[0]}|{r[1]}" not in said]
    if pending:  # the next statement, in order
        a, b, r = pending[0]
        yield ("state_weight", f"The {a} {_RATIO_TEXT[r]} the {b}", False, (), ())
    free = [b.name for b in w.blocks if container_of(w, b.name) is None and clear(w, b.name)]
    yield from _literal_moves(p, free, containers(w))
    if pending:
        return
    blocks = [b.name for b in w.blocks]
    for word, pick in (("heaviest", max), ("lightest", min)):
        best = pick(wt[b] for b in blocks)
        which = [b for b in blocks if wt[b] == best]
        if len(which) == 1:
            yield ("ask_" + word, f"Which block is the {word}?", True, (), (_color(which[0]),))
            if which[0] in free:
                for t in containers(w):
                    yield ("put_" + word, f"Put the {word} block in the {t}", True, ((which[0], t),), ())
    for full, empty in itertools.permutations(containers(w), 2):
        total = p.truth.weights.total_in(w, full)
        if not total or inside(w, empty):
            continue
        subsets = [s for n in range(1, len(free) + 1) for s in itertools.combinations(free, n)
                   if sum(wt[b] for b in s) == total]
        if len(subsets) == 1:
            yield ("same_total", f"Put blocks in the {empty} so that their total weight becomes identical to "
                   f"what is in the {full}", True, tuple((b, empty) for b in subsets[0]), ())
        for b in free:
            if wt[b] != total:
                yield ("ask_more", f"Is the total weight in the {full} more than the weight of the {b}?", True, (),
                       ("yes" if total > wt[b] else "no",))


# ---- episodes ----------------------------------------------------------------------------------------


def _scene(domain: str, rng: random.Random) -> tuple[dict[str, Any], list[tuple[str, str, float]]]:
    colors = list(COLORS)
    rng.shuffle(colors)
    n_blocks = rng.choice((3, 4))
    blocks, rest = colors[:n_blocks], colors[n_blocks:]
    if domain == "pick_and_place":
        n_bowls, n_cups = rng.choice((1, 2)), rng.choice((1, 2))
        bowls, cups = rest[:n_bowls], rest[n_bowls:n_bowls + n_cups]
        covered = rng.sample(blocks, n_cups)
        return {"block_colors": blocks, "bowl_colors": bowls, "cup_colors": cups, "covered_blocks": covered}, []
    if domain == "disinfection":
        n_dirty = rng.randint(1, n_blocks - 1)
        bowls = rest[: rng.choice((1, 2))]
        return {"block_colors": blocks, "bowl_colors": bowls,
                "dirty_blocks": sorted(rng.sample(blocks, n_dirty), key=blocks.index)}, []
    while True:
        weights = [rng.choice(WEIGHTS) for _ in blocks]
        relations = _relations({f"{c} block": wt for c, wt in zip(blocks, weights)}, rng)
        if relations is not None and len(set(weights)) > 1:
            return {"block_colors": blocks, "bowl_colors": rest[:2], "block_weights": weights}, relations


def generate_episode(domain: str, episode_id: str, rng: random.Random, attempts: int = 50) -> Episode:
    """One episode of `domain` (module docstring); GenerationError if `attempts` draws all fail."""
    for _ in range(attempts):
        scene, relations = _scene(domain, rng)
        n = rng.randint(MIN_QUERIES, MAX_QUERIES)
        if relations:  # weights: room for queries that use the ratios after they were stated
            n = min(MAX_QUERIES, max(n, len(relations) + 4))
        queries = _queries(domain, scene, relations, n, rng)
        if queries is not None:
            return Episode(episode_id, domain, scene, tuple(queries))
    raise GenerationError(f"no episode of {domain} after {attempts} draws")


def _queries(domain: str, scene: Mapping[str, Any], relations: Sequence[tuple[str, str, float]], n: int,
             rng: random.Random) -> list[Query] | None:
    queries: list[Query] = []
    said: set[str] = set()
    source: Callable[[Played, set[str], Sequence[Query]], Iterator[Candidate]]
    if domain == "pick_and_place":
        source = _pp_candidates
    elif domain == "disinfection":
        source = _dis_candidates
    else:
        def source(p: Played, s: set[str], h: Sequence[Query]) -> Iterator[Candidate]:
            return _w_candidates(p, s, h, relations)
    p = scene_world(domain, scene)
    while len(queries) < n:
        cands = list(source(p, said, queries))
        must_temporal = len(queries) == n - 1 and not any(q.temporal for q in queries)
        if must_temporal:
            cands = [c for c in cands if c[2]]
        statements = [c for c in cands if c[0].startswith("state_")]
        if statements and (domain == "disinfection" or rng.random() < 0.6 or not queries):
            cands = statements[:1]
        else:
            # about a third temporal queries (S Table II counts 20-58 temporal beside 62-168 others per domain),
            # and not the same template twice in a row
            last = queries[-1].template if queries else ""
            cands = [c for c in cands if c[0] != last or c[0] == "move"] or cands
            temporal = [c for c in cands if c[2]]
            if temporal and (rng.random() < TEMPORAL_SHARE or must_temporal):
                favoured = [c for c in temporal if c[0] in FAVOURED]
                cands = favoured if favoured and rng.random() < 0.5 else temporal
            else:
                cands = [c for c in cands if not c[2] and not c[0].startswith("state_")] or cands
        templates = sorted({c[0] for c in cands})  # a template first, then one of its candidates: variety
        rng.shuffle(templates)
        ordered = []
        for t in templates:
            group = [c for c in cands if c[0] == t]
            rng.shuffle(group)
            ordered += group
        for template, text, temporal_q, gold, say in ordered:
            if any(q.text == text for q in queries) and not gold:
                continue  # the same question twice in an episode says nothing new
            q = Query(text, temporal_q, gold, say, template)
            after = p.copy()
            if not all(after.place(obj, target)[0] for obj, target in gold):
                continue
            if template == "same_total" and after.truth.weights is not None:
                full = text.rsplit("the ", 1)[1]
                empty = text.split("in the ", 1)[1].split(" so that", 1)[0]
                if after.truth.weights.total_in(after.world, full) != after.truth.weights.total_in(after.world, empty):
                    continue
            queries.append(q)
            p = after
            if template == "state_covered":
                said.add(text.split("The ", 1)[1].split(" is under", 1)[0])
            elif template in ("state_dirty", "state_clean"):
                said.add(template[6:])
            elif template == "state_weight":
                a, b = next((a, b) for a, b, r in relations if text == f"The {a} {_RATIO_TEXT[r]} the {b}")
                said.add(f"{a}|{b}")
            break
        else:
            return None
    if not any(q.temporal for q in queries) or any(q.text.startswith("The ") for q in queries[-1:]):
        return None
    return queries


def generate_suite(seed: int = GENERATOR_SEED, per_domain: int = PER_DOMAIN) -> list[Episode]:
    """`per_domain` episodes of each of Statler's domains, reproducibly from `seed`."""
    short = {"pick_and_place": "pp", "disinfection": "dis", "weights": "w"}
    out = []
    for k, domain in enumerate(DOMAIN_SCENES):
        rng = random.Random(f"statler-{seed}-{domain}")
        out += [generate_episode(domain, f"{short[domain]}-{i + 1:02d}", rng) for i in range(per_domain)]
        del k
    return out


HEADER = """\
# monologue-bench --suite statler (S Tables I-II; monologue_eval/core/statler_bench.py). GENERATED - do not edit:
#   python -m monologue_eval.core.statler_episodes --seed {seed} --per-domain {per_domain} \\
#     --out config/benchmarks/statler.yaml
# (monologue_eval/core/statler_episodes.py documents how). {per_domain} episodes per domain of Statler's three domains
# (../shared/papers/statler.txt §IV-A), written by our generator, not the paper's (the authors' episodes have no
# licence). Each: a scene (the scene node's sim.* parameters; pick_and_place plays on the `covers` scene, laid out
# with sim.seed {layout}), {lo}-{hi} queries, at least one temporal. Expected outcomes are computed from the domain
# truth by playing the reference moves on the kinematic world: gold = the moves ([object, target]; "table" = the
# planner's first free table location), say = words an answer must contain ("a|b": either), neither = a statement,
# which must move nothing; template = the generator's query template.
"""


def dump_suite(episodes: Sequence[Episode], seed: int, per_domain: int) -> str:
    """The suite file's text (a header, then one flow-style line per scene and query)."""
    def flow(v: Any) -> str:
        return str(yaml.safe_dump(v, default_flow_style=True, width=100000, sort_keys=False)).strip()

    lines = [HEADER.format(seed=seed, per_domain=per_domain, layout=LAYOUT_SEED, lo=MIN_QUERIES, hi=MAX_QUERIES),
             "episodes:"]
    for e in episodes:
        lines += [f"  - id: {e.id}", f"    domain: {e.domain}", f"    scene: {flow(dict(e.scene))}", "    queries:"]
        for q in e.queries:
            d: dict[str, Any] = {"query": q.text}
            if q.temporal:
                d["temporal"] = True
            if q.gold:
                d["gold"] = [list(m) for m in q.gold]
            if q.say:
                d["say"] = list(q.say)
            d["template"] = q.template
            lines.append(f"      - {flow(d)}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else None)
    ap.add_argument("--seed", type=int, default=GENERATOR_SEED)
    ap.add_argument("--per-domain", type=int, default=PER_DOMAIN)
    ap.add_argument("--out", type=Path, default=None, help="the suite file (default: print)")
    ns = ap.parse_args(argv)
    text = dump_suite(generate_suite(ns.seed, ns.per_domain), ns.seed, ns.per_domain)
    if ns.out is None:
        print(text, end="")
    else:
        ns.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

__all__ = ["GENERATOR_SEED", "LAYOUT_SEED", "PER_DOMAIN", "TABLE_LOCATIONS", "GenerationError", "Played",
           "dump_suite", "generate_episode", "generate_suite", "replay", "scene_world"]
