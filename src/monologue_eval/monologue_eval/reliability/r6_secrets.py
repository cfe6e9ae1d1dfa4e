"""R6: secrets in the environment never reach an output.

A fake OpenAI-style API key (OPENAI_API_KEY, the variable config/llm/*.yaml name) and a fake Spot password
(BOSDYN_CLIENT_PASSWORD) are set; then the core paths that log, raise or write run: the openai backend
against a closed port (retries, LLMUnavailableError), an episode on it (the transcript file), the
factory's settings and the planner's settings (repr, the transcript header), a cassette recorded through
the backend factory, SpotRobot's authentication failure on FakeSpot (wrong password), the Spot
credentials' repr, and the web monitor's state JSON of that episode. Every captured log record (root
logger, DEBUG), exception text, repr and file written is searched for both secrets: 0 hits.

    python -m monologue_eval.reliability.r6_secrets
"""
# ruff: noqa: E402
from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .common import CONFIG, PROMPTS, Row

API_KEY_ENV = "OPENAI_API_KEY"
PASSWORD_ENV = "BOSDYN_CLIENT_PASSWORD"


class Capture(logging.Handler):
    """Every log record of the process, formatted with its exception text."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception as e:  # noqa: BLE001 - a record that cannot be formatted is kept as its repr
            self.lines.append(f"{record!r} {e!r}")


@dataclass
class Findings:
    outputs: dict[str, str] = field(default_factory=dict)  # what -> text searched
    errors: list[str] = field(default_factory=list)  # paths that did not run as expected

    def add(self, what: str, text: str) -> None:
        self.outputs[what] = self.outputs.get(what, "") + "\n" + text

    def hits(self, secret_values: list[str]) -> list[str]:
        return [what for what, text in self.outputs.items() for s in secret_values if s and s in text]


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def attempt(f: Findings, what: str, fn: Callable[[], object]) -> None:
    """Run `fn`; its exception text (with the chain) is an output too."""
    try:
        out = fn()
        f.add(what, repr(out))
    except Exception as e:  # noqa: BLE001 - the text of whatever it raised is searched
        chain: list[str] = []
        cur: BaseException | None = e
        while cur is not None and len(chain) < 10:
            chain.append(f"{type(cur).__name__}: {cur} {cur.args!r}")
            cur = cur.__cause__ or cur.__context__
        f.add(what, "\n".join(chain))


def llm_paths(f: Findings, tmp: Path) -> None:
    from monologue_common.core.settings import parameters_from_files
    from monologue_llm.factory import make_backend_from_params
    from monologue_llm.openai_backend import OpenAICompatBackend
    from planner_node.core.runner import EpisodeRunner, GoalRequest
    from planner_node.core.settings import settings_from_parameters

    from .r1_fuzz import FuzzPorts

    url = f"http://127.0.0.1:{closed_port()}/v1"
    backend = OpenAICompatBackend(url, "gpt-fake", api_key_env=API_KEY_ENV, timeout_s=0.5, max_retries=1,
                                  backoff_s=0.01)
    f.add("openai backend repr", repr(backend) + repr(vars(backend)))
    attempt(f, "openai generate error", lambda: backend.generate("Human: hello\n", stop=["\n"]))
    attempt(f, "openai score error", lambda: backend.score("Human: hello\n", ["a", "b"]))
    # the planner's settings and an episode on the failing backend (transcript file, header, outcome)
    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "llm" / "openai.yaml"], "planner")
    params.update({"prompt_dir": str(PROMPTS), "transcript_dir": str(tmp / "transcripts"), "llm.base_url": url,
                   "llm.timeout_s": 0.5, "llm.max_retries": 1, "llm.backoff_s": 0.01})
    settings = settings_from_parameters(params)
    f.add("planner settings repr", repr(settings))
    llm_params = {k[4:]: v for k, v in params.items() if k.startswith("llm.")}
    llm_params["cassette_mode"] = "record"
    llm_params["cassette_path"] = str(tmp / "cassette.json")
    try:
        made = make_backend_from_params(llm_params, logging.getLogger("reliability.r6.factory"))
        f.add("factory backend repr", repr(made))
    except Exception as e:  # noqa: BLE001
        f.add("factory error", repr(e))
        made = backend
    ports = FuzzPorts("tabletop", 1)
    runner = EpisodeRunner(settings, made, ports, ports, ports, logger=logging.getLogger("reliability.r6.planner"))
    out = runner.execute(GoalRequest("Put the blocks in their matching bowls."))
    f.add("episode outcome", repr(out.result))
    if out.result.error.name != "LLM_FAILED":
        f.errors.append(f"the episode on a closed port ended {out.result.error.name}, expected LLM_FAILED")
    monitor_state(f, out.events)
    from monologue_llm.cassette import CassetteBackend
    from monologue_llm.fuzz import FuzzBackend

    cassette = CassetteBackend(FuzzBackend(valid=["Robot thought: None."], valid_rate=1.0), tmp / "recorded.json",
                               "record")
    attempt(f, "cassette record", lambda: cassette.generate("Human: hello\n", stop=["\n"]))
    cassette.close()
    with contextlib.suppress(Exception):
        made.close()


def monitor_state(f: Findings, events: object) -> None:
    try:
        from monologue_web.core.state import EventView, MonitorState
    except Exception as e:  # noqa: BLE001 - the web package is optional for this figure
        f.errors.append(f"web monitor state not checked: {e!r}")
        return
    state = MonitorState()
    for ev in events:  # type: ignore[attr-defined]
        state.on_event(EventView(ev.episode_id, ev.index, ev.kind.name, ev.text, dict(ev.data), ev.stamp))
    state.on_status({"llm": "failed", "environment": "no secrets here"})
    f.add("web monitor state JSON", json.dumps(state.snapshot(), default=str))


def spot_paths(f: Findings, password: str) -> None:
    from skills_node.robots.spot.core.robot import USERNAME_ENV, SpotCredentials, SpotRobot, SpotSettings
    from skills_node.robots.spot.testing.fake_spot import FakeSpot

    creds = SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: password})
    f.add("spot credentials repr", repr(creds) + str(creds))
    with FakeSpot(username="operator", password="the-right-password", motion_duration_s=0.01) as fake:
        settings = SpotSettings(
            hostname="127.0.0.1", port=fake.port, client_name="reliability", ca_cert_path=str(fake.ca_cert_path),
            rpc_timeout_s=1.0, connect_timeout_s=3.0, command_timeout_s=3.0, feedback_period_s=0.05,
            take_lease=False, lease_check_period_s=0.5, estop_timeout_s=3.0, max_linear_velocity=0.5,
            max_angular_velocity=0.8, max_arm_reach=1.0)
        f.add("spot settings repr", repr(settings))
        robot = SpotRobot(settings, creds, logging.getLogger("reliability.r6.spot"))
        attempt(f, "spot auth failure", robot.connect)
        with contextlib.suppress(Exception):
            robot.close()


def measure() -> tuple[Findings, list[str], float]:
    key = "sk-fake-" + secrets.token_hex(16)
    password = "spot-" + secrets.token_hex(12)
    capture = Capture()
    root = logging.getLogger()
    old_level, old_handlers = root.level, root.handlers[:]
    root.handlers = [capture]  # every record goes to the capture only (DEBUG would flood the console)
    root.setLevel(logging.DEBUG)
    f = Findings()
    t0 = time.monotonic()
    try:
        with environment({API_KEY_ENV: key, PASSWORD_ENV: password}), \
                tempfile.TemporaryDirectory(prefix="reliability-r6-") as tmp:
            llm_paths(f, Path(tmp))
            spot_paths(f, password)
            for p in Path(tmp).rglob("*"):
                if p.is_file():
                    f.add(f"file {p.relative_to(tmp)}", p.read_text(encoding="utf-8", errors="replace"))
    finally:
        root.handlers = old_handlers
        root.setLevel(old_level)
    f.add("captured logs", "\n".join(capture.lines))
    control = Findings()
    control.add("control", f"x{key}x {password}")  # the search itself finds what it looks for
    if control.hits([key, password]) != ["control", "control"]:
        f.errors.append("the secret search failed its control")
    return f, f.hits([key, password]), time.monotonic() - t0


def row(short: bool = False) -> Row:
    f, hits, wall = measure()
    files = sum(1 for w in f.outputs if w.startswith("file "))
    measured = (f"{len(hits)} hits in {len(f.outputs)} outputs ({files} files, "
                f"{f.outputs.get('captured logs', '').count(chr(10))} log lines, exception texts, reprs, web state)")
    details = ("hits: " + ", ".join(hits) if hits else "") + ("; " if hits and f.errors else "") + "; ".join(f.errors)
    return Row("R6", "secrets (API key, Spot password) in logs, files, errors", "0 hits", measured,
               not hits and not f.errors, wall, details)


def main() -> None:
    f, hits, wall = measure()
    print(f"{len(hits)} hits in {len(f.outputs)} outputs in {wall:.1f} s")
    for what in f.outputs:
        print("  searched:", what, len(f.outputs[what]), "chars")
    for h in hits:
        print("  HIT:", h)
    for e in f.errors:
        print("  not as expected:", e)


if __name__ == "__main__":
    main()
