"""The MultiTalk strategy's parameters (`planner.multitalk.*`), validated once (no rclpy).

MultiTalk (../shared/papers/multitalk_supplement.txt; requirements_statler_cape_multitalk.md §3) states
no iteration limits, tolerances or LLM; every bound here is ours. Defaults live only in
config/monologue.yaml (`planner: multitalk:`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from monologue_common.core.settings import ParamReader

from ...role_llm import read_role_llm

ABLATIONS = ("full", "no_analyzer")  # full pipeline | Planner + Simulator (M Fig. 4)
ACCEPT_GATES = ("off", "ask")  # the person's acceptance before the simulator (M l.134 "accepted by the user")
PROMPT_ROLES = ("planner", "analyzer")
GRAMMAR_COORDINATES = ("scene", "numbers")  # constrained Planner coordinates: perceived centres | any numbers
GRAMMAR_PLANS = ("pairs", "free")  # constrained plans: grasp/move pairs (+ home() last) | any action per line
PLANNER_DECODINGS = ("generate", "scored")  # Planner answers: generated (constrained or not) | scored line by line


@dataclass(frozen=True)
class MultitalkSettings:
    """Prompt files, ablation, loop bounds and geometry tolerances of MultiTalk."""

    prompt_dir: Path  # config/prompts
    prompts: dict[str, str]  # role (PROMPT_ROLES) -> file stem: <prompt_dir>/<stem>.txt
    ablation: str  # one of ABLATIONS
    accept_gate: str  # one of ACCEPT_GATES
    robot_name: str  # replaces "Franka Arm" in the prompts
    max_rounds: int  # Planner answers per episode (M: not stated)
    max_reprompts: int  # consecutive unparseable answers of one role before the episode fails
    max_questions: int  # rounds of questions to the person
    max_perception_reruns: int  # "Perception Rerun Required" answers honoured
    defer_repeated_plan: bool  # a plan resubmitted unchanged after Analyzer comments is accepted (M l.231-233)
    max_tokens_planner: int  # tokens per Planner answer
    max_tokens_analyzer: int  # tokens per Analyzer answer
    match_tolerance: float  # m (x-y) between a coordinate and an object's centre (or a location) it names
    near_distance: float  # m (x-y) under which two objects are 'near'
    include_locations: bool  # the table's named locations in <objects> as zero-size boxes
    digits: int  # decimals of coordinates in the prompts
    home_skill: str  # skill run for home(); "" = none (the arm returns home after every pick_place)
    # the Analyzer's own LLM block (the planner's `llm.*` with `multitalk.analyzer_llm.*` over it); {} = the
    # planner's LLM (M uses one GPT-4 for both roles; a second model gives the analysis an independent view)
    analyzer_llm: Mapping[str, object] = field(default_factory=dict)
    # grammar-constrained decoding (grammar.py): the Planner and Analyzer can only write their
    # output formats; the Planner's coordinates are the perceived centres ("scene") or any numbers
    constrained: bool = False
    grammar_coordinates: str = "scene"  # one of GRAMMAR_COORDINATES
    grammar_plan: str = "pairs"  # one of GRAMMAR_PLANS
    planner_decoding: str = "scored"  # one of PLANNER_DECODINGS (scored.py)
    scored_calibration: bool = True  # scored: minus each line's score under the prompt with the task as "N/A"

    def prompt_path(self, role: str) -> Path:
        return self.prompt_dir / f"{self.prompts[role]}.txt"


def read_multitalk_settings(r: ParamReader, prompt_dir: str) -> MultitalkSettings:
    """`multitalk.*` from a planner ParamReader (errors are collected in `r`; call `r.finish()`)."""
    prompts = {role: r.string(f"multitalk.prompts.{role}", nonempty=True) for role in PROMPT_ROLES}
    return MultitalkSettings(
        prompt_dir=Path(prompt_dir).expanduser(),
        prompts=prompts,
        ablation=r.string("multitalk.ablation", choices=ABLATIONS),
        accept_gate=r.string("multitalk.accept_gate", choices=ACCEPT_GATES),
        robot_name=r.string("multitalk.robot_name", nonempty=True),
        max_rounds=r.integer("multitalk.max_rounds", low=1),
        max_reprompts=r.integer("multitalk.max_reprompts", low=0),
        max_questions=r.integer("multitalk.max_questions", low=0),
        max_perception_reruns=r.integer("multitalk.max_perception_reruns", low=0),
        defer_repeated_plan=r.boolean("multitalk.defer_repeated_plan"),
        max_tokens_planner=r.integer("multitalk.max_tokens_planner", low=1),
        max_tokens_analyzer=r.integer("multitalk.max_tokens_analyzer", low=1),
        match_tolerance=r.number("multitalk.match_tolerance", low=0.0, low_open=True),
        near_distance=r.number("multitalk.near_distance", low=0.0),
        include_locations=r.boolean("multitalk.include_locations"),
        digits=r.integer("multitalk.digits", low=1, high=6),
        home_skill=r.string("multitalk.home_skill"),
        analyzer_llm=read_role_llm(r, "multitalk.analyzer_llm"),
        constrained=r.boolean("multitalk.constrained"),
        grammar_coordinates=r.string("multitalk.grammar_coordinates", choices=GRAMMAR_COORDINATES),
        grammar_plan=r.string("multitalk.grammar_plan", choices=GRAMMAR_PLANS),
        planner_decoding=r.string("multitalk.planner_decoding", choices=PLANNER_DECODINGS),
        scored_calibration=r.boolean("multitalk.scored_calibration"),
    )
