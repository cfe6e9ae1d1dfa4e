"""Human feedback (no rclpy): the inbox of interjections, stop requests, the robot's questions
(IM A.3 ` and ask:`) and post-task answers (IM Fig. 5d)."""
from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from monologue_domain.transcript import EventKind, Transcript
from monologue_llm.base import LLMBackend

from .episode import ScoredCandidate, one_line
from .ports import HumanAsker
from .prompts import PromptProfile
from .strategy import EpisodeContext

_COURTESY = frozenset({"please", "robot", "now", "thanks", "thank", "you", "ok", "okay", "right"})


class HumanInbox:
    """The planner's HumanPort: interjections for the running episode (drained at every step
    boundary) and questions to a person through `asker`. Thread-safe."""

    def __init__(self, asker: HumanAsker | None = None) -> None:
        self._asker = asker
        self._lock = threading.Lock()
        self._episode = ""
        self._texts: list[str] = []

    def open(self, episode_id: str) -> None:
        with self._lock:
            self._episode, self._texts = episode_id, []

    def close(self) -> None:
        with self._lock:
            self._episode, self._texts = "", []

    def offer(self, text: str, episode_id: str = "") -> bool:
        """Queue `text` if an episode is running and `episode_id` is empty or names it."""
        with self._lock:
            if not self._episode or (episode_id and episode_id != self._episode):
                return False
            self._texts.append(text)
            return True

    def poll(self) -> list[str]:
        with self._lock:
            out, self._texts = self._texts, []
            return out

    def ask(self, question: str, timeout_s: float, cancel: threading.Event) -> str | None:
        if self._asker is None:
            return None
        return self._asker.ask(question, timeout_s, cancel, self._episode)


def is_stop_request(text: str, phrases: Sequence[str]) -> bool:
    """True if `text` is one of `phrases`, ignoring case, punctuation and courtesy words."""
    def norm(t: str) -> str:
        words = re.sub(r"[^\w\s']", " ", t.lower()).split()
        return " ".join(w for w in words if w not in _COURTESY)

    said = norm(text)
    return bool(said) and said in {norm(p) for p in phrases}


def heard(ep: EpisodeContext) -> list[str]:
    """What people said since the last look, each on one line (NULs cannot go into a transcript);
    empty texts are dropped."""
    human = ep.ports.human
    if human is None:
        return []
    texts = (" ".join(text.replace("\x00", "").split()) for text in human.poll())
    return [text for text in texts if text]


def take_interjections(ep: EpisodeContext) -> list[str]:
    """Append what people said since the last step (a step boundary), if Human feedback is on."""
    taken: list[str] = []
    human = ep.ports.human
    if human is None:
        return taken
    for text in human.poll():
        if not text.strip():
            continue
        if ep.options.human_feedback:
            text = " ".join(text.replace("\x00", "").split())  # NULs cannot go into a transcript
            ep.transcript.append(EventKind.HUMAN_INTERJECTION, ep.profile.human(text), {"text": text})
            taken.append(text)
        else:
            ep.log.warning("Human feedback is off; ignoring interjection %r", text)
    return taken


def asks(ep: EpisodeContext) -> bool:
    """True if the robot may ask questions in this episode (profile, Human feedback and a person)."""
    return ep.profile.can_ask and ep.options.human_feedback and ep.ports.human is not None


def ask_or_continue(ep: EpisodeContext, step: int, chosen: ScoredCandidate, suffix: str) -> str:
    """IM A.3: after each step the LLM chooses ` and continue` or ` and ask: <question>`.

    Returns the question, or "" to continue. In generate mode the LLM already wrote the suffix
    (`suffix`); in score mode both suffixes are scored after the chosen step, and the question
    is generated. A question that is empty or not text is logged and the robot continues.
    """
    if not asks(ep):
        return ""
    profile = ep.profile
    f = profile.formats
    ask_head = f["ask_suffix"].split("{question}", 1)[0].rstrip(" ")
    prompt = profile.prompt(ep.transcript.prompt_events()) + profile.lead + chosen.text
    if suffix == "":
        result = ep.llm.score(prompt, [f["continue_suffix"], ask_head])
        wants = result.scores[1].logprob > result.scores[0].logprob
        ep.log.info("step %d: continue %.2f vs ask %.2f -> %s", step, result.scores[0].logprob,
                    result.scores[1].logprob, "ask" if wants else "continue")
        if not wants:
            return ""
        gen = ep.llm.generate(prompt + ask_head, stop=["\n", "Human:"], max_tokens=40)
        suffix = "ask: " + gen.text
    if not suffix.startswith("ask:"):
        return ""
    question = one_line(suffix[len("ask:"):], 200).strip()
    if not question or not any(ch.isalpha() for ch in question):
        ep.transcript.append(EventKind.ERROR, f"Rejected question {question!r}: no text; continuing",
                             {"step": step, "output": question})
        return ""
    return question


def await_answer(ep: EpisodeContext, question: str) -> None:
    """Send the question to a person and append `Human: <answer>`; a timeout is logged only."""
    human = ep.ports.human
    assert human is not None
    timeout_s = ep.options.answer_timeout_s
    answer = human.ask(question, timeout_s, ep.cancel)
    if answer is None or not answer.strip():
        ep.transcript.append(EventKind.ERROR, f"No answer to {question!r} within {timeout_s:.0f} s",
                             {"question": question, "timeout_s": timeout_s})
        return
    answer = " ".join(answer.replace("\x00", "").split())  # NULs cannot go into a transcript
    ep.transcript.append(EventKind.HUMAN_ANSWER, f"Human: {answer}", {"text": answer, "question": question})


def answer_question(llm: LLMBackend, profile: PromptProfile, transcript: Transcript, question: str,
                    max_tokens: int = 64) -> str:
    """Answer a question about the scene in text, from the episode so far (IM Fig. 5d).

    Appends `Human: <question>` and `Robot thought: <answer>` (marked post_task once the episode
    ended); never runs a skill.
    """
    question = " ".join(question.split())
    if not question:
        raise ValueError("the question is empty")
    post = transcript.ended
    transcript.append(EventKind.HUMAN_INTERJECTION, profile.human(question), {"question": question}, post_task=post)
    fmt = profile.formats.get("thought", "Robot thought: {thought}")
    prefix = fmt.split("{thought}", 1)[0]
    prompt = profile.prompt(transcript.prompt_events(), next_step=False) + prefix
    gen = llm.generate(prompt, stop=["\n"], max_tokens=max_tokens)
    text = one_line(gen.text) or "I don't know."
    transcript.append(EventKind.ROBOT_THOUGHT, prefix + text, {"answer": text}, post_task=post)
    return text
