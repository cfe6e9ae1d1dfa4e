"""The Statler family's episode loop: world-state reader and writer, their variants and the CaP
baselines (../shared/papers/statler.txt §III-IV, Prompts 4-11; no rclpy, nothing is exec'd).

An episode is a list of queries: the instruction's non-empty lines, then whatever people say during
the episode (Human feedback on; stop phrases end it). Per query (S l.134-136):
1. the reader prompt: the variant's prompt file, then (statler*) the current state `# state = {...}`,
   (cap) `# objects = [...]` and the episode's earlier queries and code, (cap_cot) the initial state and
   that history; then `# query: <q>`;
2. the reader's code is parsed against the whitelist (code.py), never executed; code that is
   not accepted is an ERROR event and a re-prompt (at most `statler.max_reprompts`), then the episode
   ends with PLANNING_FAILED;
3. the calls run in order: put_first_on_second(a, b) -> skill `pick_place(a, b)` through the skills
   port (b = "table" -> the first free of `statler.table_locations`); a failed skill ends the episode
   (PLANNING_FAILED: the state no longer matches the world); say(text) -> a ROBOT_THOUGHT event
   (data `say`); update_wm(text) -> the writer (statler: demos, statler_auto: instruction only) writes
   the whole new state, which replaces the current one; noop() does nothing;
   statler_unified: the reader's output continues with the new state after the code.
Every state is a ROBOT_THOUGHT event whose text is the rendered state and whose data holds
`statler: "state"` and `world_state` (JSON): resume restores the last one, the node publishes it.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from monologue_domain.transcript import Event, EventKind
from monologue_llm.base import LLMBackend, generate_constrained

from ...episode import EpisodeError, EpisodeResult, PlanningFailed, ScoredCandidate, StepRecord, one_line
from ...feedback import report_skill, run_skill
from ...human import heard, is_stop_request
from ...ports import SceneItem, SkillOption
from ...role_llm import role_backend
from ...strategy import EpisodeContext
from .code import CAP_FUNCTIONS, NOOP, PUT, SAY, STATLER_FUNCTIONS, UPDATE_WM, CodeRejected, Program, parse_code
from .grammar import Vocabulary, reader_grammar, unified_grammar, vocabulary_of, writer_grammar
from .settings import InvalidStatlerEpisode, StatlerSettings
from .state import State, StateParseError, initial_state, parse_state, render_state, to_json

HEADER_PREFIX = "#%"  # prompt-file header lines (sources, gaps), not sent to the LLM
TABLE = "table"
_STATE_LINE = re.compile(r"^\s*#\s*(?:world_state|state)\s*=", re.MULTILINE)


@dataclass(frozen=True)
class Variant:
    """What distinguishes the five strategies (S Table I, III)."""

    name: str
    reader: str  # prompt role of the reader (StatlerSettings.prompts)
    writer: str = ""  # prompt role of the writer; "" = no writer
    keeps_state: bool = True  # a state is kept and shown to the reader
    unified: bool = False  # the reader writes the new state after its code
    history: bool = False  # earlier queries + code of the episode in the reader prompt
    objects_header: bool = False  # CaP: `# objects = [...]`
    initial_state_header: bool = False  # CaP+CoT: the initial state, never updated
    allowed: frozenset[str] = field(default=STATLER_FUNCTIONS)


VARIANTS = {
    "statler": Variant("statler", reader="reader", writer="writer"),
    "statler_auto": Variant("statler_auto", reader="reader", writer="auto_writer"),
    "statler_unified": Variant("statler_unified", reader="unified", unified=True, allowed=CAP_FUNCTIONS),
    "cap": Variant("cap", reader="cap", keeps_state=False, history=True, objects_header=True,
                   allowed=CAP_FUNCTIONS),
    "cap_cot": Variant("cap_cot", reader="cap_cot", keeps_state=False, history=True, initial_state_header=True,
                       allowed=CAP_FUNCTIONS),
}


def load_prompt(path: Path) -> str:
    """A prompt file without its `#%` header lines; InvalidStatlerEpisode if it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InvalidStatlerEpisode(f"cannot read prompt file {path}: {e.strerror or e}") from None
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith(HEADER_PREFIX))
    if not body.strip():
        raise InvalidStatlerEpisode(f"prompt file {path} has no prompt text")
    return body if body.endswith("\n") else body + "\n"


def split_queries(instruction: str) -> list[str]:
    """The queries of an instruction: its non-empty lines, whitespace collapsed."""
    return [" ".join(line.split()) for line in instruction.splitlines() if line.strip()]


@dataclass
class _Run:
    """The mutable state of one episode run."""

    ep: EpisodeContext
    variant: Variant
    settings: StatlerSettings
    reader_prompt: str
    writer_prompt: str
    objects: list[str]
    locations: list[str]
    initial: State
    state: State
    queries: list[str]
    writer_llm: LLMBackend | None = None  # the writer's backend (None: the reader's, ep.llm)
    history: list[tuple[str, str]] = field(default_factory=list)  # (query, accepted code)
    movable: list[str] = field(default_factory=list)  # objects the robot can pick (empty: every object)
    writer_vocab: Vocabulary | None = None  # what the writer's demonstrations say (constrained decoding)
    kinds: list[str] = field(default_factory=list)  # categories of the movable objects ("block", "cup")
    mentioned: list[str] = field(default_factory=list)  # objects the person named that perception does not see
    on_table: dict[str, str] = field(default_factory=dict)  # table location -> block placed there

    @property
    def steps(self) -> list[StepRecord]:
        return self.ep.state.steps

    # -- prompts ---------------------------------------------------------------------------------
    def reader_input(self, query: str, notes: list[str]) -> str:
        v, parts = self.variant, [self.reader_prompt]
        if v.objects_header:
            parts.append(f"# objects = {json.dumps(self.objects, ensure_ascii=False)}\n")
        if v.initial_state_header:
            parts.append(render_state(self.initial) + "\n")
        if v.history or (v.keeps_state and self.settings.reader_history):
            parts.extend(f"# query: {q}\n{code}\n" for q, code in self.history)
        if v.keeps_state:
            parts.append(render_state(self.state) + "\n")
        parts.append(f"# query: {query}\n")
        parts.extend(f"# NOTE: the previous answer was rejected: {n}\n" for n in notes)
        return "".join(parts)

    def writer_input(self, update: str, notes: list[str]) -> str:
        notes_text = "".join(f"# NOTE: the previous state was rejected: {n}\n" for n in notes)
        return f"{self.writer_prompt}{render_state(self.state)}\n# query: {update}\n{notes_text}# state = {{\n"

    # -- events ----------------------------------------------------------------------------------
    def record_state(self, index: int, cause: str) -> None:
        self.ep.transcript.append(EventKind.ROBOT_THOUGHT, render_state(self.state),
                                  {"statler": "state", "world_state": to_json(self.state),
                                   "query_index": index, "cause": cause})


def _reject(ep: EpisodeContext, role: str, output: str, reason: str, attempt: int, index: int) -> None:
    ep.transcript.append(EventKind.ERROR, f"Rejected {role} output: {reason}",
                         {"statler": "rejected", "role": role, "output": output[:2000], "reason": reason,
                          "attempt": attempt, "query_index": index})


def reader_grammar_of(run: _Run) -> str | None:
    """The reader's GBNF grammar when `statler.constrained` (not statler_unified, whose answer goes on with
    a state): the variant's functions, put_first_on_second's object among the scene's objects and its
    target among the objects, the scene's locations and "table"."""
    if not run.settings.constrained:
        return None
    objects = [*(run.movable or run.objects), *run.mentioned]
    targets = [*run.objects, *run.mentioned, *run.locations, TABLE]
    if run.variant.unified:  # the program, then the state after it (the writer's grammar)
        state_objects = [str(o) for o in run.state.get("objects", [])]
        if not state_objects:
            return None
        added = [m for m in run.mentioned if _key(m) not in {_key(o) for o in state_objects}]
        return unified_grammar(run.variant.allowed, objects, targets, state_objects,
                               demonstrated_vocabulary(run, run.reader_prompt), added)
    return reader_grammar(run.variant.allowed, objects, targets)


def writer_grammar_of(run: _Run) -> str | None:
    """The writer's GBNF grammar when `statler.constrained`: the current state's objects kept, the
    attributes, words and relation verbs of the writer prompt's demonstration states (none: any word)."""
    if not run.settings.constrained:
        return None
    objects = [str(o) for o in run.state.get("objects", [])]
    if not objects:
        return None
    added = [m for m in run.mentioned if _key(m) not in {_key(o) for o in objects}]
    return writer_grammar(objects, demonstrated_vocabulary(run, run.writer_prompt), added)


def demonstrated_vocabulary(run: _Run, prompt: str) -> Vocabulary:
    """The Vocabulary of the demonstration states in `prompt` (the writer's, or Statler-Unified's), once."""
    if run.writer_vocab is None:
        states = []
        for block in prompt.split("# state = {")[1:]:
            try:
                states.append(parse_state("# state = {" + block))
            except StateParseError:
                continue  # a demonstration state that does not parse teaches nothing
        run.writer_vocab = vocabulary_of(states)
    return run.writer_vocab


def mentioned_objects(queries: Sequence[str], kinds: Sequence[str], known: Sequence[str]) -> list[str]:
    """Objects the person named ("<word> <kind>", e.g. "the pink block is under the blue cup") that are not
    among the `known` names: perception cannot see them (hidden under a cup), but the person's word makes
    them objects the program may name. Only kinds of movable objects; in order of first mention."""
    if not kinds:
        return []
    pattern = re.compile(r"\b([a-z]+) (" + "|".join(re.escape(k) for k in kinds) + r")s?\b", re.IGNORECASE)
    seen = {_key(n) for n in known}
    out: list[str] = []
    for query in queries:
        for m in pattern.finditer(query):
            word = m[1].lower()
            if word in _NOT_NAMES:
                continue
            name = f"{word} {m[2].lower()}"
            if _key(name) not in seen:
                seen.add(_key(name))
                out.append(name)
    return out


_NOT_NAMES = frozenset({"the", "a", "an", "each", "every", "all", "any", "other", "one", "which", "that", "this",
                        "same", "empty", "lightest", "heaviest", "dirty", "clean", "first", "second", "last",
                        "next", "top", "bottom", "left", "right", "middle", "single", "no", "some", "both"})


def movable_objects(ep: EpisodeContext, items: Sequence[SceneItem], objects: Sequence[str]) -> list[str]:
    """The objects of a category the skills offer to pick (the categories of pick_place's first arguments
    now, so a block that is covered at the start stays movable); every object when the skills offer none."""
    category = {_key(i.name): i.category for i in items}
    kinds = {category.get(_key(o.args[0])) for o in ep.ports.skills.affordances() if o.skill == "pick_place" and o.args}
    return [o for o in objects if category.get(_key(o)) in kinds] or list(objects)


def ask_reader(run: _Run, query: str, index: int) -> tuple[Program, State | None, int]:
    """The reader's accepted code (and, unified, the state after it) and the prompt's token count.
    Raises PlanningFailed after `max_reprompts` re-prompts."""
    ep, s = run.ep, run.settings
    stop = ("# query:", "===") if run.variant.unified else ("# query:", "===", "# state =", "# world_state =")
    max_tokens = s.max_tokens_code + (s.max_tokens_state if run.variant.unified else 0)
    notes: list[str] = []
    grammar = reader_grammar_of(run)
    for attempt in range(s.max_reprompts + 1):
        gen = generate_constrained(ep.llm, run.reader_input(query, notes), stop=stop, max_tokens=max_tokens,
                                   grammar=grammar, log=ep.log)
        text = gen.text
        if grammar and gen.finish_reason == "length" and "\n" in text.strip():
            text = text.rstrip().rsplit("\n", 1)[0]  # constrained: drop the line the token limit cut
        code_text, state_text = text, ""
        if run.variant.unified:
            m = _STATE_LINE.search(text)
            if m is not None:
                code_text, state_text = text[: m.start()], text[m.start():]
        try:
            program = parse_code(code_text, run.variant.allowed)
            check_names(run, program)
            new_state = parse_state(state_text, s.max_state_chars) if state_text else None
            return program, new_state, gen.prompt_tokens
        except (CodeRejected, StateParseError) as e:
            reason = str(e)
        _reject(ep, "reader", text, reason, attempt, index)
        notes.append(one_line(reason, 200))
    raise PlanningFailed(f"query {index + 1}: no acceptable code after {s.max_reprompts + 1} answers of the reader")


def ask_writer(run: _Run, update: str, index: int) -> State:
    """The writer's new state for `update`; PlanningFailed after `max_reprompts` re-prompts."""
    ep, s = run.ep, run.settings
    notes: list[str] = []
    for attempt in range(s.max_reprompts + 1):
        llm = run.writer_llm if run.writer_llm is not None else ep.llm
        gen = generate_constrained(llm, run.writer_input(update, notes), stop=("# query:", "==="),
                                   max_tokens=s.max_tokens_state, grammar=writer_grammar_of(run), log=ep.log)
        text = "# state = {\n" + gen.text
        try:
            state = parse_state(text, s.max_state_chars)
            if isinstance(state.get("objects"), list):  # a name written twice is one object
                state["objects"] = list(dict.fromkeys(state["objects"]))
            return state
        except StateParseError as e:
            reason = str(e)
        _reject(ep, "writer", gen.text, reason, attempt, index)
        notes.append(one_line(reason, 200))
    raise PlanningFailed(f"query {index + 1}: no readable state after {s.max_reprompts + 1} answers of the writer")


def _key(n: str) -> str:
    n = " ".join(n.lower().split())
    return n[4:] if n.startswith("the ") else n


def resolve(run: _Run, name: str) -> str:
    """`name` as the scene spells it: case and a leading "the " are forgiven ("The Cyan block" ->
    "cyan block"); an unknown name is passed on as written (check_names refuses it first)."""
    known = {_key(n): n for n in [*run.objects, *run.locations]}
    k = _key(name)
    if k == TABLE:
        return TABLE
    return known.get(k, name)


def check_names(run: _Run, program: Program) -> None:
    """Raise CodeRejected if a put_first_on_second names an object the scene does not have (its first
    argument among the objects, its second among the objects, locations and "table"), so the call is an
    ERROR event and a re-prompt, never a skill request. Without a known scene nothing is checked."""
    if not run.objects:
        return
    objects = {_key(n) for n in [*run.objects, *run.mentioned]}
    movable = ({_key(n) for n in run.movable} or objects) | {_key(n) for n in run.mentioned}
    targets = objects | {_key(n) for n in run.locations} | {TABLE}
    for call in program.calls:
        if call.function != PUT or len(call.args) != 2:
            continue
        obj, target = (_key(a) for a in call.args)
        if obj not in objects:
            raise CodeRejected(f"{call.source}: the scene has no object {call.args[0]!r} "
                               f"(objects: {', '.join(sorted([*run.objects, *run.mentioned]))})")
        if obj not in movable:
            raise CodeRejected(f"{call.source}: the {call.args[0]} cannot be moved "
                               f"(movable: {', '.join(sorted(run.movable))})")
        if target not in targets:
            raise CodeRejected(f"{call.source}: the scene has no {call.args[1]!r} to put it on")


def table_target(run: _Run, block: str) -> str:
    """Where `put_first_on_second(block, "table")` puts the block: the first table location (of
    `statler.table_locations` that the scene has) that no block was put on in this episode."""
    known = [loc for loc in run.settings.table_locations if loc in run.locations] or list(run.settings.table_locations)
    free = next((loc for loc in known if loc not in run.on_table), known[0])
    run.on_table[free] = block
    return free


def _put(run: _Run, index: int, args: tuple[str, ...], source: str, prompt_tokens: int, llm_s: float,
         query_steps: int) -> EpisodeResult | None:
    """One pick-and-place; an EpisodeResult if the episode ends here."""
    ep = run.ep
    obj, target = args
    if query_steps >= ep.options.max_steps:
        return ep.finish(EpisodeError.MAX_STEPS_REACHED,
                         f"query {index + 1} reached the step cap of {ep.options.max_steps}")
    for loc, b in list(run.on_table.items()):  # the block leaves wherever "table" had put it
        if b == obj:
            del run.on_table[loc]
    obj, target = resolve(run, obj), resolve(run, target)
    place = table_target(run, obj) if target.lower() == TABLE else target
    option = SkillOption("pick_place", (obj, place), 1.0)
    chosen = ScoredCandidate(source, option, 0.0, 0.0, 1.0, 0.0)
    record = StepRecord(len(run.steps) + 1, (chosen,), chosen, ep.options.normalization, prompt_tokens, 0, llm_s, 0.0)
    ep.record_step(record)
    ep.transcript.append(EventKind.ROBOT_ACTION, source,
                         {"skill": option.skill, "args": list(option.args), "step": len(run.steps),
                          "query_index": index, "call": list(args)})
    result = run_skill(ep, option)
    if isinstance(result, EpisodeResult):
        return result
    report_skill(replace(ep, options=replace(ep.options, success_feedback=False)), option, result)
    if not result.ok:
        return ep.finish(EpisodeError.PLANNING_FAILED,
                         f"query {index + 1}: {source} failed ({result.error_name}); the state no longer matches "
                         "the world")
    return None


def run_query(run: _Run, index: int, query: str) -> EpisodeResult | None:
    """Answer one query; an EpisodeResult if the episode ends here."""
    ep = run.ep
    t0 = time.monotonic()
    program, unified_state, prompt_tokens = ask_reader(run, query, index)
    llm_s = time.monotonic() - t0
    ep.transcript.append(EventKind.ROBOT_THOUGHT, program.code,
                         {"statler": "code", "code": program.code, "query": query, "query_index": index,
                          "thoughts": list(program.thoughts)})
    run.history.append((query, program.code))
    moves = 0
    for call in program.calls:
        if ep.cancel.is_set():
            return ep.finish(EpisodeError.CANCELED, "cancelled")
        if call.function == PUT:
            ended = _put(run, index, call.args, call.source, prompt_tokens, llm_s, moves)
            if ended is not None:
                return ended
            moves += 1
        elif call.function == SAY:
            ep.transcript.append(EventKind.ROBOT_THOUGHT, call.args[0],
                                 {"statler": "say", "say": call.args[0], "query_index": index})
        elif call.function == UPDATE_WM and run.variant.writer:
            run.state = ask_writer(run, call.args[0], index)
            run.record_state(index, call.args[0])
        elif call.function == NOOP:
            continue
    if unified_state is not None:
        run.state = unified_state
        run.record_state(index, query)
    return None


def _restore(ep: EpisodeContext, run: _Run) -> int:
    """Resume: the last recorded state and the code history; the index of the next query."""
    events: tuple[Event, ...] = ep.transcript.events
    started = [e for e in events if e.data.get("statler") == "query"]
    for e in started:
        i = int(e.data.get("query_index", 0))
        if i >= len(run.queries):
            run.queries.append(str(e.data.get("query", e.text)))
    for e in events:
        if e.data.get("statler") == "code":
            run.history.append((str(e.data.get("query", "")), str(e.data.get("code", e.text))))
        elif e.data.get("statler") == "state":
            try:
                run.state = parse_state(e.text, run.settings.max_state_chars)
            except StateParseError:
                ep.log.warning("recorded state %d does not parse; using its JSON", e.index)
                run.state = dict(e.data.get("world_state", {}))
    nxt = max((int(e.data.get("query_index", 0)) for e in started), default=-1) + 1
    ep.transcript.append(EventKind.ERROR,
                         f"Resumed after an interruption: {nxt} of {len(run.queries)} queries had started "
                         "(an interrupted query is not repeated)", {"resumed": True, "next_query": nxt})
    if run.variant.keeps_state:  # published again (latched topic) for whoever watches the new run
        run.record_state(nxt - 1, "restored after an interruption")
    return nxt


def _take_queries(ep: EpisodeContext, run: _Run) -> str | None:
    """People's interjections become queries (Human feedback on); a stop phrase is returned."""
    for text in heard(ep):
        if not ep.options.human_feedback:
            ep.log.warning("Human feedback is off; ignoring %r", text)
            continue
        if is_stop_request(text, ep.options.stop_phrases):
            ep.transcript.append(EventKind.HUMAN_INTERJECTION, text, {"text": text, "stop_request": True})
            return text
        run.queries.append(text)
    return None


def run_statler(ep: EpisodeContext, variant: Variant) -> EpisodeResult:
    """Run one Statler-family episode (see the module docstring); every outcome it decides ends the
    transcript (what escapes is mapped by core.runner.run_episode)."""
    transcript = ep.transcript
    s = ep.settings.get(StatlerSettings)
    queries = split_queries(ep.instruction)
    if not queries:
        raise InvalidStatlerEpisode("the instruction has no query")
    reader = load_prompt(s.prompt_path(variant.reader))
    writer = load_prompt(s.prompt_path(variant.writer)) if variant.writer else ""
    items: list[SceneItem] = ep.ports.scene.describe()
    init = initial_state(items)
    run = _Run(ep, variant, s, reader, writer, list(init["objects"]),
               [i.name for i in items if i.category == "location"], init, dict(init), list(queries))
    run.movable = movable_objects(ep, items, run.objects)
    run.kinds = sorted({i.category for i in items if _key(i.name) in {_key(m) for m in run.movable}})
    if variant.writer:
        run.writer_llm = role_backend(ep.llm, s.writer_llm, "Statler writer", ep.log)
    first = 0
    if ep.resume:
        first = _restore(ep, run)
    else:
        transcript.append(EventKind.SCENE_OBJECTS, f"# objects = {json.dumps(run.objects, ensure_ascii=False)}",
                          {"objects": run.objects, "statler_variant": variant.name,
                           "prompts": {r: s.prompts[r] for r in (variant.reader, variant.writer) if r},
                           "reader_llm": ep.llm.name,
                           "writer_llm": (run.writer_llm or ep.llm).name if variant.writer else ""})
        if variant.keeps_state:
            run.record_state(-1, "initial state from the scene")
    index = first
    while True:
        if ep.cancel.is_set():
            return ep.finish(EpisodeError.CANCELED, "cancelled")
        stop = _take_queries(ep, run)
        if stop is not None:
            return ep.finish(EpisodeError.STOPPED_BY_HUMAN, f"a person asked to stop: {stop!r}")
        if index >= len(run.queries):
            break
        query = run.queries[index]
        run.mentioned = mentioned_objects(run.queries[: index + 1], run.kinds, [*run.objects, *run.locations])
        kind = EventKind.HUMAN_INSTRUCTION if index < len(queries) else EventKind.HUMAN_INTERJECTION
        transcript.append(kind, query, {"statler": "query", "query": query, "query_index": index,
                                        "instruction": query})
        ended = run_query(run, index, query)
        if ended is not None:
            return ended
        index += 1
    return ep.finish(EpisodeError.NONE, f"answered {len(run.queries)} queries")
