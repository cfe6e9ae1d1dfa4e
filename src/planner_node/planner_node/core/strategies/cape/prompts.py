"""CAPE's prompts: the demonstration set, admissible-action texts, planning and corrective prompts,
error messages at each specificity (no rclpy).

Layout (CAPE §III, Tables VIII-X; the paper shows the plans with their line breaks flattened):

    Task: <demonstration task>            <- the demonstration most similar to the query
    Step 1: <action>
    ...
                                          <- few-shot only, corrective prompts only:
    Task: <example task>                     3 (error, correction) examples
    Step 1: ...
    Step k: <failed action>
    Error: <message>. A correct step would be to
    Step k: <corrective action>

    Task: <query>
    Step 1: <grounded action>
    Step k: <failed action>               <- a corrective prompt carries the failed step(s)
    Error: <message>. A correct step would be to
    Step k:                               <- the LLM writes the (corrected) step

Messages: S "Task Failed"; I "I cannot <action> <object>"; E "I cannot <action> <object> because
<precondition violation>" (CAPE §III-A).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SPECIFICITIES = ("S", "I", "E")
TASK_FAILED = "Task Failed"  # CAPE's success-only message (Z_S)
_PRECONDITION_LINE = re.compile(r"^(?P<prop>[a-z_]+): (?P<msg>I cannot .+)$", re.DOTALL)


@dataclass(frozen=True)
class Demonstration:
    task: str
    steps: tuple[str, ...]  # admissible action texts, the last one the done text


@dataclass(frozen=True)
class CorrectionExample:
    """One few-shot (error, correction) example: the steps that ran, the failed step, why it
    failed (first person) and the corrective step; `cannot` is the part of the failed step the
    error names ("pick up the red block" of "pick up the red block and place it on the middle",
    as the tabletop's preconditions say it), "" = the whole failed step."""

    task: str
    steps: tuple[str, ...]
    failed: str
    reason: str
    correction: str
    cannot: str = ""


@dataclass(frozen=True)
class ErrorInfo:
    """A failed step in CAPE's terms: what could not run and why."""

    action: str  # the admissible action text that failed, e.g. "pick up the apple"
    implicit: str  # "I cannot pick up the apple"
    explicit: str  # "I cannot pick up the apple because I am already holding the coke"
    proposition: str  # the violated proposition ("hand_full"), "" if unknown

    def message(self, specificity: str) -> str:
        """The error message at specificity S, I or E."""
        if specificity == "S":
            return TASK_FAILED
        if specificity == "I":
            return self.implicit
        if specificity == "E":
            return self.explicit
        raise ValueError(f"specificity must be one of {SPECIFICITIES}, got {specificity!r}")


@dataclass(frozen=True)
class Attempt:
    """A failed step and the message the corrective prompt showed for it."""

    action: str
    message: str


@dataclass(frozen=True)
class PlanEntry:
    """One step of the plan so far: failed attempts (shown in CAPE's re-prompting mode) and the
    action that was finally taken (None while the step is being corrected)."""

    attempts: tuple[Attempt, ...]
    action: str | None


@dataclass(frozen=True)
class CapeDomain:
    """A demonstration file (config/prompts/cape*.yaml)."""

    name: str
    formats: Mapping[str, str]  # task, step, error, separator
    skills: Mapping[str, str]  # skill name -> template ({0}, {1} arguments, {a0} article of {0})
    done: str  # the termination action text
    demonstrations: tuple[Demonstration, ...]
    corrections: tuple[CorrectionExample, ...]

    # ---- actions -------------------------------------------------------------------------------
    def action_text(self, skill: str, args: Sequence[str]) -> str:
        """The admissible action text of a skill instance, e.g. "pick up the apple"; KeyError for
        a skill the file has no template for."""
        template = self.skills[skill]
        extra = {f"a{i}": article(a) for i, a in enumerate(args)}
        return " ".join(template.format(*args, **extra).split())

    # ---- lines ---------------------------------------------------------------------------------
    def step_line(self, n: int, action: str) -> str:
        return self.formats["step"].format(n=n, action=capitalize(action))

    def open_step(self, n: int) -> str:
        """"Step n:" (what the LLM continues)."""
        return self.formats["step"].format(n=n, action="").rstrip()

    def error_line(self, message: str) -> str:
        """"Error: <message>. A correct step would be to"."""
        return self.formats["error"].format(message=message.rstrip(". "))

    def task_line(self, task: str) -> str:
        return self.formats["task"].format(task=task.strip())

    def demonstration_block(self, demo: Demonstration) -> str:
        lines = [self.task_line(demo.task)]
        lines += [self.step_line(i, s) for i, s in enumerate(demo.steps, start=1)]
        return "\n".join(lines)

    def example_block(self, ex: CorrectionExample, specificity: str) -> str:
        """A few-shot (error, correction) example at `specificity`."""
        k = len(ex.steps) + 1
        lines = [self.task_line(ex.task)]
        lines += [self.step_line(i, s) for i, s in enumerate(ex.steps, start=1)]
        part = ex.cannot or ex.failed
        info = ErrorInfo(ex.failed, f"I cannot {part}", f"I cannot {part} because {ex.reason}", "")
        lines += [self.step_line(k, ex.failed), self.error_line(info.message(specificity)),
                  self.step_line(k, ex.correction)]
        return "\n".join(lines)

    def query_lines(self, task: str, plan: Sequence[PlanEntry]) -> list[str]:
        """The query task and its plan so far; an entry without an action ends with its failed
        attempts (a corrective prompt's tail) and the open "Step k:" follows."""
        lines = [self.task_line(task)]
        for n, entry in enumerate(plan, start=1):
            for a in entry.attempts:
                lines += [self.step_line(n, a.action), self.error_line(a.message)]
            if entry.action is not None:
                lines.append(self.step_line(n, entry.action))
        return lines

    def prompt(self, demo: Demonstration | None, task: str, plan: Sequence[PlanEntry],
               examples: Sequence[CorrectionExample] = (), specificity: str = "E") -> str:
        """The prompt for the next step (or the correction of the last, unfinished entry):
        demonstration, few-shot examples (corrective prompts only), the query; ends with "Step k:"."""
        blocks = [self.demonstration_block(demo)] if demo is not None else []
        blocks += [self.example_block(ex, specificity) for ex in examples]
        query = self.query_lines(task, plan)
        open_n = len(plan) if plan and plan[-1].action is None else len(plan) + 1
        blocks.append("\n".join([*query, self.open_step(open_n)]))
        return self.formats["separator"].join(blocks)


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def clean_step(text: str) -> str:
    """A sampled step as a comparable action text: first line, no "Step k:" prefix, no final
    full stop, lower case first letter, whitespace collapsed."""
    line = text.strip().split("\n", 1)[0]
    line = re.sub(r"^(step\s*\d+\s*:\s*)", "", line, flags=re.IGNORECASE)
    line = " ".join(line.split()).rstrip(" .")
    return line[:1].lower() + line[1:]


def error_info(action: str, error_name: str, message: str, failed_precondition: str) -> ErrorInfo:
    """CAPE's error of a failed skill. A precondition line "<proposition>: I cannot ... because
    ..." (skills backends, monologue_domain.kitchen.skills) gives I and E directly; any other
    failure gets "I cannot <action>" and, as its cause, the skill's own message."""
    m = _PRECONDITION_LINE.match(failed_precondition.strip())
    if m is not None:
        explicit = m.group("msg").strip().rstrip(".")
        implicit = explicit.split(" because ", 1)[0]
        return ErrorInfo(action, implicit, explicit, m.group("prop"))
    implicit = f"I cannot {action}"
    cause = (failed_precondition or message or error_name).strip().rstrip(".")
    return ErrorInfo(action, implicit, f"{implicit} because {cause}" if cause else implicit, "")


def _strings(path: Path, raw: Any, key: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(s, str) and s.strip() for s in raw):
        raise ValueError(f"{path}: {key} must be a list of non-empty strings")
    return tuple(" ".join(s.split()) for s in raw)


def load_domain(prompt_dir: Path, name: str) -> CapeDomain:
    """Load and check <prompt_dir>/<name>.yaml; ValueError naming the problem."""
    path = Path(prompt_dir) / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"CAPE demonstration file {path} does not exist")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    formats = raw.get("formats")
    need = {"task": "{task}", "step": "{n}", "error": "{message}", "separator": ""}
    if not isinstance(formats, dict) or any(not isinstance(formats.get(k), str) or v not in formats[k]
                                            for k, v in need.items()):
        raise ValueError(f"{path}: formats needs task ({{task}}), step ({{n}}, {{action}}), "
                         "error ({message}) and separator")
    skills = raw.get("skills")
    if not isinstance(skills, dict) or not skills or not all(isinstance(v, str) for v in skills.values()):
        raise ValueError(f"{path}: skills must map skill names to templates")
    done = raw.get("done")
    if not isinstance(done, str) or not done.strip():
        raise ValueError(f"{path}: done must be the termination action text")
    demos: list[Demonstration] = []
    for i, d in enumerate(raw.get("demonstrations") or []):
        if not isinstance(d, dict) or not isinstance(d.get("task"), str):
            raise ValueError(f"{path}: demonstrations[{i}] needs a task and steps")
        steps = _strings(path, d.get("steps"), f"demonstrations[{i}].steps")
        demos.append(Demonstration(" ".join(d["task"].split()), steps))
    if not demos:
        raise ValueError(f"{path}: no demonstrations")
    examples: list[CorrectionExample] = []
    for i, c in enumerate(raw.get("corrections") or []):
        fields = ("task", "failed", "reason", "correction")
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) and c[k].strip() for k in fields):
            raise ValueError(f"{path}: corrections[{i}] needs {', '.join(fields)} and steps")
        steps = _strings(path, c.get("steps") or [], f"corrections[{i}].steps") if c.get("steps") else ()
        cannot = c.get("cannot") or ""
        if not isinstance(cannot, str):
            raise ValueError(f"{path}: corrections[{i}].cannot must be a string")
        examples.append(CorrectionExample(" ".join(c["task"].split()), steps, c["failed"].strip(),
                                          c["reason"].strip().rstrip("."), c["correction"].strip(),
                                          " ".join(cannot.split())))
    return CapeDomain(name, {k: str(v) for k, v in formats.items()}, {str(k): str(v) for k, v in skills.items()},
                      done.strip(), tuple(demos), tuple(examples))
