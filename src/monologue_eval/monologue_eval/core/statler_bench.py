"""`monologue-bench --suite statler` (S Tables I-II, ../shared/papers/statler.txt §IV-B), ROS-free part:
the episodes (config/benchmarks/statler.yaml), scoring an episode from its transcript, and the tables.

An episode is a scene of one of Statler's domains (monologue_domain.statler_domains: `pick_and_place` is
played on the `covers` scene, `disinfection`, `weights`) and 5-16 queries, each marked temporal or not
(S l.326: "queries that require temporal reasoning") with its gold answer (S Prompts 7-9 "[Gold Code]"):
- `gold`: the moves, [[object, target], ...]; order counts only
  where a block is moved twice; "table" as the reader wrote it;
- `say`: words the answer must contain (whole words, case-insensitive; "2|two": either), for questions;
- neither: an informational query, which must move nothing.
A query succeeds when the reader's moves (the `call` of each ROBOT_ACTION event, as it wrote them) equal
its gold moves and, for questions, a `say` holds every word; the episode ends at its first failed query
and, as S Table II ("we only consider the sequence of steps until the model fails"), only the queries
up to and including that one are counted. An episode succeeds when every query does (S l.169); a query
in which a failed episode ended (an unreadable state, a failed move) has failed.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from .benchmark import wilson

DOMAIN_SCENES: dict[str, str] = {"pick_and_place": "covers", "disinfection": "disinfection", "weights": "weights"}
METHODS: tuple[str, ...] = ("cap", "cap_cot", "statler", "statler_unified", "statler_auto")
METHOD_LABELS: dict[str, str] = {"cap": "CaP", "cap_cot": "CaP+CoT", "statler": "Statler",
                                 "statler_unified": "Statler-Unified", "statler_auto": "Statler-Auto"}
DOMAIN_LABELS: dict[str, str] = {"pick_and_place": "Pick & Place", "disinfection": "Disinfection",
                                 "weights": "Weight"}
TABLE = "table"
# S Table I and III: episode success (step success) per domain; S Table II: (non-temporal, temporal) successes.
PAPER_TABLE1: dict[str, dict[str, tuple[float, float]]] = {
    "cap": {"pick_and_place": (0.00, 0.54), "disinfection": (0.00, 0.68), "weights": (0.00, 0.84)},
    "cap_cot": {"pick_and_place": (0.25, 0.76), "disinfection": (0.00, 0.20), "weights": (0.30, 0.88)},
    "statler": {"pick_and_place": (0.50, 0.88), "disinfection": (0.40, 0.82), "weights": (0.55, 0.93)},
    "statler_unified": {"pick_and_place": (0.40, 0.85), "disinfection": (0.35, 0.79), "weights": (0.50, 0.92)},
    "statler_auto": {"pick_and_place": (0.75, 0.88), "disinfection": (0.45, 0.82), "weights": (0.40, 0.90)},
}
PAPER_TABLE2: dict[str, dict[str, tuple[tuple[int, int], tuple[int, int]]]] = {
    "cap": {"pick_and_place": ((62, 62), (9, 29)), "disinfection": ((148, 149), (1, 20)),
            "weights": ((107, 107), (0, 20))},
    "statler": {"pick_and_place": ((68, 68), (48, 58)), "disinfection": ((164, 168), (15, 23)),
                "weights": ((107, 107), (11, 20))},
}


class SuiteError(ValueError):
    """The episode file is malformed (what, and where)."""


@dataclass(frozen=True)
class Query:
    text: str
    temporal: bool = False
    gold: tuple[tuple[str, str], ...] = ()  # moves (object, target)
    say: tuple[str, ...] = ()  # words a question's answer must contain ("a|b": either)
    template: str = ""  # the generator's query template (statler_episodes), for reports

    @property
    def kind(self) -> str:
        return "question" if self.say else "action" if self.gold else "information"


@dataclass(frozen=True)
class Episode:
    id: str
    domain: str  # a key of DOMAIN_SCENES
    scene: Mapping[str, Any]  # sim.* parameters of the scene node (block_colors, dirty_blocks, ...)
    queries: tuple[Query, ...]

    @property
    def instruction(self) -> str:
        """The planner's instruction: one query per line (statler_loop.split_queries)."""
        return "\n".join(q.text for q in self.queries)

    def scene_parameters(self, seed: int) -> dict[str, str]:
        """The scene node's parameters as command-line strings (`-p sim.<key>:=<value>`)."""
        params = {"sim.seed": str(seed), "sim.scene": DOMAIN_SCENES[self.domain]}
        for key, value in self.scene.items():
            params[f"sim.{key}"] = yaml.safe_dump(value, default_flow_style=True).strip() \
                if isinstance(value, list) else str(value)
        return params


def load_episodes(path: Path) -> list[Episode]:
    """The episodes of a suite file; SuiteError naming the first problem."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(data, dict) or not isinstance(data.get("episodes"), list):
        raise SuiteError(f"{path}: expected a mapping with a list 'episodes'")
    out, seen = [], set()
    for i, e in enumerate(data["episodes"]):
        where = f"{path}: episode {i + 1}"
        try:
            eid, domain = str(e["id"]), str(e["domain"])
            queries = tuple(_query(q) for q in e["queries"])
        except (KeyError, TypeError, ValueError) as err:
            raise SuiteError(f"{where}: {err!r}") from None
        if domain not in DOMAIN_SCENES:
            raise SuiteError(f"{where}: domain {domain!r} is not one of {sorted(DOMAIN_SCENES)}")
        if eid in seen:
            raise SuiteError(f"{where}: duplicate id {eid!r}")
        if not queries or not any(q.temporal for q in queries):
            raise SuiteError(f"{where} ({eid}): needs queries, at least one temporal (S §IV-A)")
        seen.add(eid)
        out.append(Episode(eid, domain, dict(e.get("scene") or {}), queries))
    return out


def _query(q: Mapping[str, Any]) -> Query:
    gold = tuple((str(a), str(b)) for a, b in (q.get("gold") or []))
    say = q.get("say") or ()
    return Query(str(q["query"]), bool(q.get("temporal", False)), gold,
                 tuple(str(w) for w in ([say] if isinstance(say, str) else say)), str(q.get("template", "")))


# ---- scoring ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryScore:
    index: int
    temporal: bool
    success: bool
    moves: tuple[tuple[str, str], ...]
    said: tuple[str, ...]
    why: str = ""


@dataclass(frozen=True)
class EpisodeScore:
    episode: str
    domain: str
    method: str
    queries: tuple[QueryScore, ...]  # up to and including the first failure
    total_queries: int
    planner_error: str = ""

    @property
    def success(self) -> bool:
        return len(self.queries) == self.total_queries and all(q.success for q in self.queries)

    def counts(self, temporal: bool | None = None) -> tuple[int, int]:
        """(successes, counted queries) of the counted queries, optionally only (non-)temporal ones."""
        qs = [q for q in self.queries if temporal is None or q.temporal == temporal]
        return sum(q.success for q in qs), len(qs)

    def to_json(self) -> dict[str, Any]:
        return {"episode": self.episode, "domain": self.domain, "method": self.method, "success": self.success,
                "total_queries": self.total_queries, "planner_error": self.planner_error,
                "queries": [{"index": q.index, "temporal": q.temporal, "success": q.success,
                             "moves": [list(m) for m in q.moves], "said": list(q.said), "why": q.why}
                            for q in self.queries]}


def _norm(name: str) -> str:
    n = " ".join(name.lower().split())
    return n[4:] if n.startswith("the ") else n


def _same_moves(got: Sequence[tuple[str, str]], gold: Sequence[tuple[str, str]]) -> bool:
    if len(got) != len(gold):
        return False
    g = [(_norm(a), _norm(b)) for a, b in got]
    w = [(_norm(a), _norm(b)) for a, b in gold]
    if sorted(g) != sorted(w):
        return False
    moved_twice = {a for a, _ in w if [x for x, _ in w].count(a) > 1}
    return [m for m in g if m[0] in moved_twice] == [m for m in w if m[0] in moved_twice]


def _says(text: str, word: str) -> bool:
    """`word` (or one of its "a|b" alternatives) occurs in `text` as a whole word, ignoring case."""
    return any(re.search(rf"(?<![a-z0-9]){re.escape(w.strip().lower())}(?![a-z0-9])", text.lower())
               for w in word.split("|") if w.strip())


def score_query(q: Query, index: int, moves: Sequence[tuple[str, str]], said: Sequence[str],
                answered: bool) -> QueryScore:
    """One query against its gold answer (module docstring)."""
    if not answered:
        return QueryScore(index, q.temporal, False, tuple(moves), tuple(said), "no accepted answer")
    if not _same_moves(moves, q.gold):
        return QueryScore(index, q.temporal, False, tuple(moves), tuple(said),
                          f"moves {list(moves)} instead of {list(q.gold)}")
    if q.say and not any(all(_says(s, w) for w in q.say) for s in said):
        return QueryScore(index, q.temporal, False, tuple(moves), tuple(said), f"no answer containing {list(q.say)}")
    return QueryScore(index, q.temporal, True, tuple(moves), tuple(said))


def score_episode(episode: Episode, method: str, events: Iterable[tuple[str, Mapping[str, Any]]],
                  planner_error: str = "") -> EpisodeScore:
    """Score from the transcript's (kind name, data) pairs: ROBOT_ACTION `call` and `query_index`, the
    `say` and `code` thoughts (statler_loop's event data)."""
    moves: dict[int, list[tuple[str, str]]] = {}
    said: dict[int, list[str]] = {}
    answered: set[int] = set()
    for kind, data in events:
        i = data.get("query_index")
        if not isinstance(i, int):
            continue
        if data.get("statler") == "code":
            answered.add(i)
        elif data.get("statler") == "say":
            said.setdefault(i, []).append(str(data.get("say", "")))
        elif kind == "ROBOT_ACTION" and isinstance(data.get("call"), list) and len(data["call"]) == 2:
            moves.setdefault(i, []).append((str(data["call"][0]), str(data["call"][1])))
    scored = []
    ended_in = max(answered, default=-1) if planner_error else None  # the query the failed episode ended in
    for i, q in enumerate(episode.queries):
        s = score_query(q, i, moves.get(i, []), said.get(i, []), i in answered)
        if s.success and i == ended_in:  # e.g. the writer never wrote a readable state for its update_wm
            s = replace(s, success=False, why=f"the episode ended here: {planner_error}")
        scored.append(s)
        if not s.success:
            break
    return EpisodeScore(episode.id, episode.domain, method, tuple(scored), len(episode.queries), planner_error)


def failed_before(episode: Episode, method: str, events: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
    """Has a query failed before the one the last event started (a `statler: query` event)? Then the
    episode's score is known: S Table II counts only up to the first failure (the bench stops there)."""
    if not events:
        return False
    started = events[-1][1].get("query_index")
    if events[-1][1].get("statler") != "query" or not isinstance(started, int) or started == 0:
        return False
    so_far = score_episode(episode, method, [e for e in events if e[1].get("query_index") != started])
    return any(not q.success and q.index < started for q in so_far.queries)


def decided_early(episode: Episode, method: str, events: Sequence[tuple[str, Mapping[str, Any]]],
                  indices: Sequence[int]) -> bool:
    """`failed_before`, but only on a stream without gaps: the bench sees the planner's events live as
    action feedback, which can drop events under load (keep-last history); a dropped `code` event would look
    like a query without an answer. `indices`: the transcript indices of `events` as received (0, 1, 2, ...);
    with one missing the episode runs to its end and is scored from its complete transcript."""
    if sorted(indices) != list(range(len(indices))):
        return False
    return failed_before(episode, method, events)


# ---- tables -----------------------------------------------------------------------------------------


@dataclass
class Cell:
    episodes: int = 0
    succeeded: int = 0
    steps: int = 0
    steps_ok: int = 0
    temporal: list[int] = field(default_factory=lambda: [0, 0])  # successes, counted
    non_temporal: list[int] = field(default_factory=lambda: [0, 0])


def cells(scores: Iterable[EpisodeScore]) -> dict[tuple[str, str], Cell]:
    out: dict[tuple[str, str], Cell] = {}
    for s in scores:
        c = out.setdefault((s.method, s.domain), Cell())
        c.episodes += 1
        c.succeeded += s.success
        ok, n = s.counts()
        c.steps_ok, c.steps = c.steps_ok + ok, c.steps + n
        for temporal, slot in ((True, c.temporal), (False, c.non_temporal)):
            ok, n = s.counts(temporal)
            slot[0] += ok
            slot[1] += n
    return out


def _rate(ok: int, n: int) -> str:
    """"rate (ok/n, CI lo-hi)" with the Wilson 95% interval, "-" for no trials."""
    if not n:
        return "-"
    lo, hi = wilson(ok, n)
    return f"{ok / n:.2f} ({ok}/{n}, CI {lo:.2f}-{hi:.2f})"


def report_markdown(scores: Sequence[EpisodeScore], llm: str) -> str:
    """S Table I (episode and step success per method and domain) and S Table II (non-temporal and temporal
    queries, counted to the first failure), ours beside the paper's (GPT-3.5, 20 episodes per domain), with
    counts and Wilson 95% intervals."""
    table = cells(scores)
    domains = [d for d in DOMAIN_SCENES if any(k[1] == d for k in table)] or list(DOMAIN_SCENES)
    methods = [m for m in METHODS if any(k[0] == m for k in table)]
    lines = [f"### Statler S Table I: episode success / step success, LLM {llm}; paper's in brackets", "",
             "| method | " + " | ".join(DOMAIN_LABELS[d] for d in domains) + " |",
             "|---|" + "---|" * len(domains)]
    for m in methods:
        row = []
        for d in domains:
            c = table.get((m, d))
            paper = PAPER_TABLE1.get(m, {}).get(d)
            ours = f"{_rate(c.succeeded, c.episodes)} / steps {_rate(c.steps_ok, c.steps)}" if c else "-"
            row.append(ours + (f" [{paper[0]:.2f} ({paper[1]:.2f})]" if paper else ""))
        lines.append(f"| {METHOD_LABELS[m]} | " + " | ".join(row) + " |")
    lines += ["", "### Statler S Table II: non-temporal / temporal query success, counted to the first failure; "
              "paper's in brackets", "",
              "| domain | method | non-temporal | temporal |", "|---|---|---|---|"]
    for d in domains:
        for m in methods:
            c = table.get((m, d))
            if c is None:
                continue
            paper2 = PAPER_TABLE2.get(m, {}).get(d)
            nt_p = f" [{paper2[0][0]}/{paper2[0][1]}]" if paper2 else ""
            t_p = f" [{paper2[1][0]}/{paper2[1][1]}]" if paper2 else ""
            lines.append(f"| {DOMAIN_LABELS[d]} | {METHOD_LABELS[m]} | {_rate(*c.non_temporal)}{nt_p} | "
                         f"{_rate(*c.temporal)}{t_p} |")
    return "\n".join(lines) + "\n"


__all__ = ["DOMAIN_SCENES", "METHODS", "PAPER_TABLE1", "PAPER_TABLE2", "Episode", "EpisodeScore", "Query",
           "QueryScore", "SuiteError", "cells", "decided_early", "failed_before", "load_episodes", "report_markdown",
           "score_episode", "score_query"]
