"""What the tuned planner never trains on (issue 30), and the texts its training instructions must not touch.

Held out of training entirely (examples of these get `split: heldout`, and the trainer skips them; the
benchmark reports them separately):

- tabletop: IM Table 1's families `mismatched_bowls` ("Put the blocks on mismatched bowls") and
  `different_corners` ("Put all the blocks in different corners"), two unseen families of Table 1;
- kitchen: SayCan's Long-Horizon family (`long_horizon`; our kitchen instructions of two objects);
- statler: the Weight domain (`weights`);
- household: CAPE's scenes of the room type `kitchen` (household scene `kitchen`).

The benchmark texts (`benchmark_texts`): every string of the benchmark files (config/benchmarks/*.yaml: IM
kitchen, SayCan 101, CAPE, Statler's queries, the paraphrase list wordings.yaml and the development list
wordings_dev.yaml), the goal-example library (config/prompts/goal_examples/*.yaml), CAPE's demonstrations
(config/prompts/cape_*.yaml), IM Table 1's instructions (monologue_domain.tasks, every family over many
seeds), CAPE's generated tasks and MultiTalk's task. `shared_ngrams` finds a training instruction's word
4-grams (lower-cased, punctuation stripped) among theirs.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

# world -> families (or scenes) held out
HELDOUT: dict[str, frozenset[str]] = {
    "tabletop": frozenset({"mismatched_bowls", "different_corners"}),
    "kitchen": frozenset({"long_horizon"}),
    "statler": frozenset({"weights"}),
    "household": frozenset({"kitchen"}),  # a household scene name, i.e. its room type
}
N = 4  # word n-gram length of the disjointness test
TABLE1_SEEDS = 400  # IM Table 1 instructions sampled per family for the benchmark texts
_PUNCT = re.compile(r"[^\w\s]")


def world_group(world: str) -> str:
    """The HELDOUT key of an example's `world` ("kinematic" and "mujoco" are the tabletop, "statler:<d>"
    Statler's, "multitalk" MultiTalk's scenes of the tabletop)."""
    if world in ("kinematic", "mujoco", "multitalk"):
        return "tabletop"
    if world.startswith("statler"):
        return "statler"
    return world


def split_of(world: str, family: str, scene: str = "") -> str:
    """"heldout" when the example's family (or Statler domain, or household scene) is held out, else "train"."""
    held = HELDOUT.get(world_group(world), frozenset())
    if world.startswith("statler:") and world.split(":", 1)[1] in held:
        return "heldout"
    return "heldout" if family in held or (scene and scene in held) else "train"


def words(text: str) -> list[str]:
    """Lower-cased words with punctuation replaced by spaces."""
    return _PUNCT.sub(" ", text.lower()).split()


def ngrams(text: str, n: int = N) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(node, (list, tuple)):
        for v in node:
            yield from _strings(v)


def _yaml_strings(path: Path) -> list[str]:
    return list(_strings(yaml.safe_load(path.read_text(encoding="utf-8"))))


def benchmark_texts(config_dir: Path) -> dict[str, list[str]]:
    """source name -> its texts (see the module docstring)."""
    from monologue_domain.kitchen.household import generate_tasks
    from monologue_domain.tasks import FAMILIES, sample_task

    out: dict[str, list[str]] = {}
    for path in sorted((config_dir / "benchmarks").glob("*.yaml")):
        out[f"benchmarks/{path.name}"] = _yaml_strings(path)
    for path in sorted((config_dir / "prompts" / "goal_examples").glob("*.yaml")):
        out[f"prompts/goal_examples/{path.name}"] = _yaml_strings(path)
    for path in sorted((config_dir / "prompts").glob("cape_*.yaml")):
        out[f"prompts/{path.name}"] = _yaml_strings(path)
    out["IM Table 1"] = sorted({sample_task(f, s).instruction for f in FAMILIES for s in range(TABLE1_SEEDS)})
    cape = yaml.safe_load((config_dir / "benchmarks" / "cape.yaml").read_text(encoding="utf-8"))
    gen = cape.get("generated") or {}
    out["CAPE generated"] = [t.text for t in generate_tasks(gen.get("scenes", []), int(gen.get("per_scene", 0)),
                                                            int(gen.get("seed", 0)))]
    from ..suites.multitalk import TASK

    out["MultiTalk"] = [TASK]
    return out


class NgramIndex:
    """The word 4-grams of the benchmark texts, each with a source that has it."""

    def __init__(self, texts: dict[str, list[str]]) -> None:
        self.where: dict[tuple[str, ...], tuple[str, str]] = {}
        for source, items in texts.items():
            for t in items:
                for g in ngrams(t):
                    self.where.setdefault(g, (source, t))

    def shared(self, text: str) -> list[tuple[tuple[str, ...], str, str]]:
        """(4-gram, source, benchmark text) for each of `text`'s 4-grams a benchmark text has."""
        return [(g, *self.where[g]) for g in sorted(ngrams(text)) if g in self.where]

    def clean(self, text: str) -> bool:
        return not any(g in self.where for g in ngrams(text))


def shared_ngrams(instructions: Iterable[str], index: NgramIndex) -> list[tuple[str, tuple[str, ...], str, str]]:
    """(instruction, 4-gram, source, benchmark text) for every shared 4-gram."""
    return [(i, g, s, t) for i in instructions for g, s, t in index.shared(i)]
