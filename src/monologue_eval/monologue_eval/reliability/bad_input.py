"""Bad input everywhere: empty, 1 MB and invalid instructions, unknown strategies and profiles, malformed
YAML and prompt files, corrupted bags and cassettes. Each case must end in a clear error that names the
input (an INVALID_GOAL / LLM_FAILED outcome with the reason, or a ValueError / BagError / LLMError naming
the file), without a crash (no other exception type, no INTERNAL_ERROR), and without losing what was
recorded before (the transcripts, bags and cassettes already on disk are byte-identical afterwards).

    python -m monologue_eval.reliability.bad_input
"""
# ruff: noqa: E402
from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from monologue_llm.base import LLMError
from monologue_llm.fuzz import FuzzBackend
from planner_node.core.runner import EpisodeRunner, GoalRequest

from .common import PROMPTS, REPO, Row
from .r1_fuzz import FuzzPorts, Scenario, make_runner

CLEAR_ERRORS: tuple[type[BaseException], ...] = (ValueError, LLMError, OSError)
FIXTURE_BAGS = REPO / "test" / "fixtures"


@dataclass
class Case:
    name: str
    ok: bool
    message: str


@dataclass
class Report:
    cases: list[Case] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Case]:
        return [c for c in self.cases if not c.ok]


def digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def expect_error(report: Report, name: str, names: str, fn: Callable[[], object],
                 clear: tuple[type[BaseException], ...] = CLEAR_ERRORS) -> None:
    """`fn` must raise one of `clear` whose message contains `names` (the input)."""
    try:
        fn()
    except clear as e:
        msg = str(e)
        report.cases.append(Case(name, names.lower() in msg.lower(), msg[:300]))
        return
    except Exception as e:  # noqa: BLE001 - anything else is a crash
        report.cases.append(Case(name, False, f"crash: {type(e).__name__}: {str(e)[:300]}"))
        return
    report.cases.append(Case(name, False, "accepted"))


def goal_cases(report: Report, tmp: Path) -> None:
    ports = FuzzPorts("tabletop", 3)
    llm = FuzzBackend(seed=1, valid=["Robot thought: None."], valid_rate=1.0)
    runner: EpisodeRunner = make_runner(Scenario("inner_monologue_generative", "im_sim_object_success", "tabletop"),
                                        llm, ports, tmp / "transcripts")
    # something already recorded: one finished episode
    first = runner.execute(GoalRequest("Put the blocks in their matching bowls."))
    before = digest(tmp / "transcripts")

    def goal(name: str, request: GoalRequest, names: str, allowed: tuple[str, ...] = ("INVALID_GOAL",)) -> None:
        try:
            out = runner.execute(request)
        except Exception as e:  # noqa: BLE001
            report.cases.append(Case(name, False, f"crash: {type(e).__name__}: {str(e)[:300]}"))
            return
        r = out.result
        ok = r.error.name in allowed and names.lower() in r.reason.lower()
        report.cases.append(Case(name, ok, f"{r.error.name}: {r.reason[:200]}"))

    goal("empty instruction", GoalRequest(""), "instruction")
    goal("blank instruction", GoalRequest(" \n\t "), "instruction")
    goal("1 MB instruction", GoalRequest("Put the blocks in the bowls. " * 36_000), "",
         ("INVALID_GOAL", "NONE", "PLANNING_FAILED", "MAX_STEPS_REACHED", "LLM_FAILED"))
    goal("NUL and control characters", GoalRequest("Put the\x00 blocks\x1b[2J in\x07 the bowls."), "instruction")
    goal("control characters", GoalRequest("Put the blocks\x1b[2J in\x07 the bowls.\r"), "",
         ("INVALID_GOAL", "NONE", "PLANNING_FAILED", "MAX_STEPS_REACHED"))
    goal("lone surrogates", GoalRequest("Put the \ud800 blocks in the bowls."), "",
         ("INVALID_GOAL", "NONE", "PLANNING_FAILED", "MAX_STEPS_REACHED"))
    goal("unknown strategy", GoalRequest("x", strategy="no_such_strategy"), "no_such_strategy")
    goal("unknown profile", GoalRequest("x", prompt_profile="no_such_profile"), "no_such_profile")
    goal("profile name with a path", GoalRequest("x", prompt_profile="../../etc/passwd"), "../../etc/passwd")
    goal("unknown episode to resume", GoalRequest("x", resume_episode="nope"), "nope")
    from .r7_injection import ObedientBackend
    from .r7_injection import scenario_for as r7_scenario

    for strategy, text in ((s, t) for s in ("inner_monologue_generative", "statler", "multitalk", "cape")
                           for t in ("stop\x00 now", "use the\x00 red bowl", "\ud800\udfff", "x" * 1_000_000)):
        obedient = ObedientBackend(text, interject=True)  # interjections
        inter = make_runner(r7_scenario(strategy), obedient, FuzzPorts("tabletop", 3), tmp / "transcripts")
        obedient.runner = inter
        try:
            out = inter.execute(GoalRequest("Put the blocks in their matching bowls."))
            ok = out.result.error.name != "INTERNAL_ERROR"
            report.cases.append(Case(f"{strategy}: interjection {text[:12]!r}", ok, f"{out.result.error.name}: "
                                     f"{out.result.reason[:200]}"))
        except Exception as e:  # noqa: BLE001
            report.cases.append(Case(f"{strategy}: interjection {text[:12]!r}", False, f"crash: {e!r}"[:300]))
    after = {k: v for k, v in digest(tmp / "transcripts").items() if k in before}
    if after != before:
        report.lost.append("a transcript written before the bad goals changed")
    if first.path is None or not first.path.is_file():
        report.lost.append("the first episode's transcript is gone")


def profile_cases(report: Report, tmp: Path) -> None:
    from planner_node.core.prompts import load_profile

    d = tmp / "prompts"
    shutil.copytree(PROMPTS, d)
    cases = {
        "malformed_yaml": "formats: [unclosed\n  - : :\n",
        "not_a_mapping": "- just\n- a list\n",
        "no_formats": "description: x\n",
        "bad_skills": (PROMPTS / "im_sim_object_success.yaml").read_text(encoding="utf-8")
        .replace('template: "Pick the {0} and place it {prep1} the {1}."', "oops: 3"),
        "skill_not_a_mapping": (PROMPTS / "im_sim_object_success.yaml").read_text(encoding="utf-8")
        .replace("  pick_place:\n", "  pick_place: just text\n  other:\n", 1),
        "missing_preamble": (PROMPTS / "im_sim_object_success.yaml").read_text(encoding="utf-8")
        .replace("preamble_file: im_sim_object_success.txt", "preamble_file: gone.txt"),
        "binary": "\x00\x01\x02\xff",
    }
    for name, text in cases.items():
        (d / f"{name}.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
        expect_error(report, f"prompt profile {name}", name, lambda n=name: load_profile(d, n))  # type: ignore[misc]


def config_cases(report: Report, tmp: Path) -> None:
    from monologue_common.core.settings import parameters_from_files

    bad = tmp / "bad_monologue.yaml"
    bad.write_text("planner:\n  ros__parameters:\n    strategy: [unclosed\n", encoding="utf-8")
    expect_error(report, "malformed config YAML", "bad_monologue.yaml",
                 lambda: parameters_from_files([bad], "planner"))
    missing = tmp / "missing.yaml"
    expect_error(report, "missing config file", "missing.yaml", lambda: parameters_from_files([missing], "planner"))


def cassette_cases(report: Report, tmp: Path) -> None:
    from monologue_llm.cassette import CassetteBackend

    good = tmp / "good.jsonl"
    rec = CassetteBackend(FuzzBackend(valid=["ok"], valid_rate=1.0), good, "record")
    rec.generate("p", stop=["\n"])
    rec.close()
    variants = {"truncated": good.read_text(encoding="utf-8")[:-7], "not_json": "this is not a cassette\n",
                "binary": "\x00\xff\xfe garbage", "json_list": "[1, 2, 3]\n", "missing_key": '{"kind": "generate"}\n'}
    for name, text in variants.items():
        p = tmp / f"cassette_{name}.jsonl"
        p.write_text(text, encoding="utf-8", errors="surrogateescape")
        before = p.read_bytes()
        expect_error(report, f"cassette {name} (replay)", p.name,
                     lambda p=p: CassetteBackend(None, p, "replay"))  # type: ignore[misc]
        try:  # recording next to a corrupt cassette must not destroy it
            r = CassetteBackend(FuzzBackend(valid=["ok"], valid_rate=1.0), p, "record")
            r.generate("q", stop=["\n"])
            r.close()
        except Exception:  # noqa: BLE001 - refusing is fine too
            pass
        if not p.read_bytes().startswith(before):
            report.lost.append(f"recording to the corrupt cassette {p.name} rewrote what it held")
    expect_error(report, "cassette missing (replay)", "nowhere.jsonl",
                 lambda: CassetteBackend(None, tmp / "nowhere.jsonl", "replay"))


def bag_cases(report: Report, tmp: Path) -> None:
    try:
        from monologue_bag.core.bagio import Bag, BagError
    except Exception as e:  # noqa: BLE001
        report.cases.append(Case("bags", False, f"monologue_bag not importable: {e!r}"))
        return
    clear = (BagError, ValueError, OSError)
    empty = tmp / "empty_bag"
    empty.mkdir()
    expect_error(report, "bag: empty directory", "empty_bag", lambda: Bag(empty), clear)
    garbage = tmp / "garbage_bag"
    garbage.mkdir()
    (garbage / "garbage_bag_0.mcap").write_bytes(b"\x89MCAP0\r\n" + bytes(range(256)) * 10)
    expect_error(report, "bag: garbage MCAP", "garbage_bag", lambda: Bag(garbage), clear)
    meta = tmp / "bad_meta_bag"
    meta.mkdir()
    (meta / "metadata.yaml").write_text("rosbag2_bagfile_information: [unclosed\n", encoding="utf-8")
    expect_error(report, "bag: malformed metadata.yaml", "bad_meta_bag", lambda: Bag(meta), clear)
    sources = [p.parent for p in sorted(FIXTURE_BAGS.rglob("metadata.yaml"))]
    if sources:  # a real recorded bag, cut in half
        cut = tmp / "cut_bag"
        shutil.copytree(sources[0], cut)
        before = digest(sources[0])
        for mcap in cut.glob("*.mcap"):
            data = mcap.read_bytes()
            mcap.write_bytes(data[: len(data) // 2])
        expect_error(report, "bag: recorded bag cut in half", "cut_bag",
                     lambda: list(Bag(cut).messages()) if hasattr(Bag, "messages") else Bag(cut), clear)
        if digest(sources[0]) != before:
            report.lost.append("reading a copy changed the fixture bag")


def measure() -> Report:
    report = Report()
    with tempfile.TemporaryDirectory(prefix="reliability-bad-") as d:
        tmp = Path(d)
        goal_cases(report, tmp)
        profile_cases(report, tmp)
        config_cases(report, tmp)
        cassette_cases(report, tmp)
        bag_cases(report, tmp)
    return report


def row(short: bool = False) -> Row:
    t0 = time.monotonic()
    r = measure()
    wall = time.monotonic() - t0
    bad = r.failed
    measured = (f"{len(r.cases) - len(bad)} of {len(r.cases)} inputs refused with a clear error naming them, "
                f"{len(bad)} not; {len(r.lost)} losses of recorded data")
    details = " / ".join(f"{c.name}: {c.message[:120]}" for c in bad) + ("; " + "; ".join(r.lost) if r.lost else "")
    return Row("bad input", "empty / 1 MB / invalid instructions, unknown names, malformed files, corrupt bags "
               "and cassettes", "every one a clear error naming it, nothing lost", measured,
               not bad and not r.lost, wall, details)


def main() -> None:
    logging.basicConfig(level=logging.CRITICAL)
    r = measure()
    for c in r.cases:
        print(f"{'ok ' if c.ok else 'BAD'} {c.name}: {c.message[:160]!r}")
    for lost in r.lost:
        print("LOST", lost)


if __name__ == "__main__":
    main()
