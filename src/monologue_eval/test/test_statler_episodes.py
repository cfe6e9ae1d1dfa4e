"""The generator of `--suite statler`'s episodes: the committed suite file is exactly what seed 0 generates,
S §IV's shape (20 episodes per domain, 5-16 queries, a temporal one in each), and every episode is
solvable: its reference moves play on the kinematic world with the domain truth and, after each query,
a check written here from the query's words alone (not the generator's code) holds."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from monologue_domain.statler_truth import inside, touching
from monologue_domain.tabletop import BLOCK_SIZE
from monologue_eval.core.statler_bench import DOMAIN_SCENES, TABLE, Episode, Query, load_episodes
from monologue_eval.core.statler_episodes import (
    GENERATOR_SEED,
    PER_DOMAIN,
    Played,
    dump_suite,
    generate_episode,
    generate_suite,
    scene_world,
)

SUITE = Path(__file__).resolve().parents[3] / "config" / "benchmarks" / "statler.yaml"
RATIOS = {"has the same weight as": 1.0, "is twice the weight of": 2.0, "is three times the weight of": 3.0,
          "is four times the weight of": 4.0, "is half the weight of": 0.5}


def test_the_suite_file_is_what_the_generator_writes() -> None:
    """Its first episodes of each domain (each domain's episodes come from one seeded stream, so a changed
    generator changes these; the whole file: `python -m monologue_eval.core.statler_episodes`)."""
    first = 3
    episodes = generate_suite(GENERATOR_SEED, first)
    in_file = load_episodes(SUITE)
    assert [e for d in DOMAIN_SCENES for e in [x for x in in_file if x.domain == d][:first]] == episodes, \
        "regenerate: python -m monologue_eval.core.statler_episodes --out config/benchmarks/statler.yaml"
    header = dump_suite(episodes, GENERATOR_SEED, PER_DOMAIN).split("episodes:")[0]
    assert SUITE.read_text(encoding="utf-8").startswith(header)


def test_the_suite_has_the_papers_shape() -> None:
    episodes = load_episodes(SUITE)
    for domain in DOMAIN_SCENES:
        mine = [e for e in episodes if e.domain == domain]
        assert len(mine) == 20, domain
        temporal = sum(q.temporal for e in mine for q in e.queries)
        assert 0 < temporal < sum(len(e.queries) for e in mine) / 2, domain  # S Table II: a minority
    for e in episodes:
        assert 5 <= len(e.queries) <= 16 and any(q.temporal for q in e.queries), e.id
        assert not e.queries[-1].kind == "information", e.id
    assert len({e.id for e in episodes}) == len(episodes)


def test_generation_is_reproducible_and_seeded() -> None:
    a = generate_episode("disinfection", "x", random.Random(5))
    assert a == generate_episode("disinfection", "x", random.Random(5))
    assert a != generate_episode("disinfection", "x", random.Random(6))


def _names(text: str) -> list[str]:
    return re.findall(r"the (\w+ block)", text, flags=re.IGNORECASE)


def _where(p: Played, obj: str, target: str) -> bool:
    """Is `obj` at `target` ("table": resting on the table)?"""
    w = p.world
    if target == TABLE:
        return abs(w.get(obj).z - BLOCK_SIZE / 2) < 1e-6
    if w.get(target).category == "bowl":
        return obj in inside(w, target)
    if w.get(obj).category == "cup":
        return w.covered().get(target) == obj
    return (obj, target) in touching(w)


def check(q: Query, before: Played, after: Played) -> None:
    """The query's outcome, read from its words and the world before / after its gold moves."""
    w, t = before.world, before.truth
    text = q.text
    if q.kind == "information":
        assert not q.gold
        if m := re.fullmatch(r"The (\w+ block) is under the (\w+ cup)", text):
            assert w.covered()[m[1]] == m[2]
        elif m := re.fullmatch(r"(.*) (?:is|are) (dirty|clean)", text):
            named = set(_names(m[1]))
            assert named == {b.name for b in w.blocks if t.disinfection.is_dirty(b.name) == (m[2] == "dirty")}
        else:
            m = re.fullmatch(r"The (\w+ block) (.*) the (\w+ block)", text)
            assert m and t.weights is not None, text
            assert t.weights.weights[m[1]] == RATIOS[m[2]] * t.weights.weights[m[3]]
        return
    if q.kind == "question":
        (answer,) = q.say
        alternatives = answer.split("|")
        if m := re.fullmatch(r"What is the color of the block under the (\w+ cup)\?", text):
            assert [b for b, c in w.covered().items() if c == m[1]] == [f"{answer} block"]
        elif m := re.fullmatch(r"Is the (\w+ block) in a higher position than the (\w+ block)\?", text):
            assert (w.get(m[1]).z > w.get(m[2]).z + 0.01) == (answer == "yes")
        elif m := re.fullmatch(r"How many blocks are in the (\w+ bowl)\?", text):
            assert str(len(inside(w, m[1]))) in alternatives
        elif m := re.fullmatch(r"What is the color of the block right above the (\w+ block)\?", text):
            assert [u for u, lo in touching(w) if lo == m[1]] == [f"{answer} block"]
        elif m := re.fullmatch(r"Is the (\w+ block) (clean|dirty)\?", text):
            assert (t.disinfection.is_dirty(m[1]) == (m[2] == "dirty")) == (answer == "yes")
        elif m := re.fullmatch(r"Which block is the (heaviest|lightest)\?", text):
            assert t.weights is not None
            ws = t.weights.weights
            best = (max if m[1] == "heaviest" else min)(ws.values())
            assert [b for b, v in ws.items() if v == best] == [f"{answer} block"]
        elif m := re.fullmatch(r"Is the total weight in the (\w+ bowl) more than the weight of the (\w+ block)\?",
                               text):
            assert t.weights is not None
            assert (t.weights.total_in(w, m[1]) > t.weights.weights[m[2]]) == (answer == "yes")
        else:
            pytest.fail(f"unknown question {text!r}")
        return
    moved = {a for a, _ in q.gold}
    if m := re.fullmatch(r"Put all the (dirty|clean) blocks (?:in|on) the (.+)", text):
        group = {b.name for b in w.blocks if t.disinfection.is_dirty(b.name) == (m[1] == "dirty")}
        target = TABLE if m[2] == "table" else m[2]
        assert group and all(_where(after, b, target) for b in group), text
        assert moved <= group
    elif m := re.fullmatch(r"Put blocks in the (\w+ bowl) so that their total weight becomes identical to what is "
                           r"in the (\w+ bowl)", text):
        assert after.truth.weights is not None
        assert after.truth.weights.total_in(after.world, m[1]) == after.truth.weights.total_in(after.world, m[2]) > 0
    elif m := re.fullmatch(r"Put the (heaviest|lightest) block in the (\w+ bowl)", text):
        assert t.weights is not None
        ws = t.weights.weights
        (obj,) = moved
        assert ws[obj] == (max if m[1] == "heaviest" else min)(ws.values()) and _where(after, obj, m[2])
    elif m := re.fullmatch(r"Put the block in the (\w+ bowl) on the (\w+ block)", text):
        (obj,) = inside(w, m[1])
        assert _where(after, obj, m[2])
    elif m := re.fullmatch(r"Put the (\w+ block) in the empty bowl", text):
        empty = [b.name for b in w.bowls if not inside(w, b.name)]
        assert len(empty) == 1 and _where(after, m[1], empty[0])
    elif m := re.fullmatch(r"Put the (\w+ (?:block|cup)) (?:in|on) the (.+)", text):
        target = TABLE if m[2] == "table" else m[2]
        assert _where(after, m[1], target), text
        if m[1] in w.covered():  # it had to be uncovered first, and that was not in view
            assert q.temporal and q.gold[0] == (w.covered()[m[1]], TABLE)
    else:
        pytest.fail(f"unknown action {text!r}")


def replay_checked(ep: Episode) -> None:
    before = scene_world(ep.domain, ep.scene)
    for q in ep.queries:
        after = before.copy()
        for obj, target in q.gold:
            ok, message = after.place(obj, target)
            assert ok, (q.text, message)
        check(q, before, after)
        before = after


@pytest.mark.parametrize("domain", list(DOMAIN_SCENES))
def test_every_episode_is_solvable_by_its_reference_moves(domain: str) -> None:
    for ep in load_episodes(SUITE):
        if ep.domain == domain:
            try:
                replay_checked(ep)
            except AssertionError as e:
                raise AssertionError(f"{ep.id}: {e}") from e
