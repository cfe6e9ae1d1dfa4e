"""The tuning data's own instruction wordings (issue 30): templates, synonyms, the languages of the paraphrase
lists (config/benchmarks/wordings.yaml: English, Chinese, German; wordings_dev.yaml: Spanish, Japanese) and
misspellings. Seeded and deterministic: `Wordings(seed).say(intent, slots, key)` gives the same text for
the same arguments.

An intent is what the instruction asks for, independent of the world's wording: e.g. `tabletop.stack`,
`kitchen.bring`, `household.put_in`. Its templates name slots in braces ({block}, {target}, {location},
{bowl}, {object}, {place}, {thing}, {receptacle}, {switch}); `[a|b|c]` is a choice of synonyms. Object
names stay as the scene names them (a person reads them off the screen), except that locations may be
said with a synonym ("upper left corner"), as a person would. Nothing here is copied from a benchmark, a
paraphrase list, a development list or a prompt: test_tune_disjoint.py checks that no generated text
shares a word 4-gram with any of them.
"""
from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

LANGUAGES: tuple[str, ...] = ("en", "de", "zh", "es", "ja")  # the paraphrase lists' languages
LANGUAGE_WEIGHTS: tuple[float, ...] = (0.70, 0.09, 0.09, 0.06, 0.06)  # share of instructions per language
MISSPELL_SHARE = 0.2  # share of English instructions with one or two typos
INFORMAL_SHARE = 0.25  # share of English instructions lower-cased, without the final full stop

# Location synonyms (tabletop): a person may say these instead of the scene's names.
LOCATION_SYNONYMS: dict[str, tuple[str, ...]] = {
    "top left corner": ("top left corner", "upper left corner", "upper-left corner", "far left corner"),
    "top right corner": ("top right corner", "upper right corner", "upper-right corner", "far right corner"),
    "bottom left corner": ("bottom left corner", "lower left corner", "lower-left corner", "near left corner"),
    "bottom right corner": ("bottom right corner", "lower right corner", "lower-right corner", "near right corner"),
    "top side": ("top side", "upper edge", "far edge", "top edge"),
    "bottom side": ("bottom side", "lower edge", "near edge", "bottom edge"),
    "left side": ("left side", "left edge", "left-hand edge"),
    "right side": ("right side", "right edge", "right-hand edge"),
    "middle": ("middle", "centre", "center"),
}

# intent -> language -> templates. English templates may use [a|b] synonym choices.
TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    # --- tabletop (IM Table 1's families, our own words) ---
    "tabletop.pick_place": {
        "en": ("[Grab|Take|Lift] that {block}, then [drop|set|lower] it {prep} that {target}.",
               "I'd like {block} sitting {prep} {target}, please.",
               "Get {block} over to {target} and leave it there.",
               "{block} -> {target}",
               "Could the robot [shift|transfer|carry] {block} onto {target}?",
               "Your job: {block} {prep} {target}."),
        "de": ("Setz {block} bitte auf {target}.", "Bring {block} zu {target} rüber."),
        "zh": ("请将{block}移到{target}那里。", "把{block}搬到{target}。"),
        "es": ("Deja {block} sobre {target}, por favor.",),
        "ja": ("{block}を{target}へ動かして。",),
    },
    "tabletop.stack": {
        "en": ("Pile every cube [up|together] into one column.",
               "Make a single [tower|column|pile] from each cube here.", "Cubes: one tall stack, all of them.",
               "Could you [heap|pile] up each cube, one atop another?"),
        "de": ("Mach einen Turm aus jedem Würfel hier.",), "zh": ("把桌上方块全都摞起来。",),
        "es": ("Construye una torre usando cada cubo.",), "ja": ("キューブを一本の塔にまとめて。",),
    },
    "tabletop.blocks_to_location": {
        "en": ("[Gather|Collect|Herd] each cube [near|by|at] {location}.",
               "Cubes should [all|each] end up near {location}.", "Shift each cube toward {location}, one by one.",
               "{location}: bring each cube there."),
        "de": ("Schieb jeden Würfel Richtung {location}.",), "zh": ("把每个方块挪到{location}附近。",),
        "es": ("Junta cada cubo cerca de {location}.",), "ja": ("キューブを{location}のあたりに寄せて。",),
    },
    "tabletop.blocks_to_bowl": {
        "en": ("[Drop|Toss|Load] each cube into {bowl}.", "{bowl} should hold every cube afterwards.",
               "Fill {bowl} with each cube you see.", "Every cube goes inside {bowl}, thanks."),
        "de": ("Jeder Würfel kommt in {bowl}.",), "zh": ("每个方块都装进{bowl}。",),
        "es": ("Mete cada cubo dentro de {bowl}.",), "ja": ("キューブを残らず{bowl}に入れて。",),
    },
    "tabletop.different_corners": {
        "en": ("Spread the cubes out, one per corner.", "Each cube needs its own separate corner.",
               "[Scatter|Distribute] cubes so no two share a corner."),
        "de": ("Jeder Würfel in eine eigene Ecke.",), "zh": ("每个方块各占一个角。",),
        "es": ("Un cubo por esquina, sin repetir.",), "ja": ("キューブを角ごとに一個ずつ置いて。",),
    },
    "tabletop.matching_bowls": {
        "en": ("Sort cubes by colour: each into its same-coloured bowl.", "Cubes go home to bowls sharing their hue.",
               "Pair every cube with [the|a] bowl of identical colour.", "colour-match cubes with bowls pls"),
        "de": ("Sortiere die Würfel nach Farbe in passende Schalen.",), "zh": ("按颜色把方块放进同色的碗。",),
        "es": ("Cada cubo a su cuenco del mismo tono.",), "ja": ("キューブを同じ色のボウルに分けて。",),
    },
    "tabletop.mismatched_bowls": {
        "en": ("Each cube into any bowl whose hue differs.", "No cube may rest in a bowl sharing its hue.",
               "Put cubes into bowls, never matching colours."),
        "de": ("Jeder Würfel in eine Schale anderer Farbe.",), "zh": ("让方块进颜色不同的碗。",),
        "es": ("Cada cubo va a un cuenco distinto en tono.",), "ja": ("キューブを色違いのボウルに入れて。",),
    },
    "tabletop.stack_on_location": {
        "en": ("Build one column of cubes [near|at|by] {location}.", "Over at {location}, pile each cube up high.",
               "{location}: a single tower, every cube."),
        "de": ("Bau bei {location} einen Turm aus jedem Würfel.",), "zh": ("在{location}把方块摞成一座塔。",),
        "es": ("Apila cada cubo junto a {location}.",), "ja": ("{location}でキューブを積み上げて。",),
    },
    "tabletop.matching_bowls_one": {  # MultiTalk scenes with a single target bowl named
        "en": ("{block} belongs with the bowl sharing its hue.",),
        "de": ("{block} gehört zur Schale gleicher Farbe.",), "zh": ("把{block}放进同色的碗。",),
        "es": ("{block} va al cuenco de su tono.",), "ja": ("{block}を同じ色のボウルへ。",),
    },
    # --- SayCan's kitchen ---
    "kitchen.bring": {
        "en": ("[Fetch|Grab|Get] {object} for me, would you?", "I could use {object} over here.",
               "Hand {object} to me when you can.", "Deliver {object} to where I'm sitting.",
               "i want {object} pls"),
        "de": ("Hol mir {object}, bitte.",), "zh": ("给我拿{object}过来。",),
        "es": ("Tráeme {object}, porfa.",), "ja": ("{object}を持ってきて。",),
    },
    "kitchen.pick": {
        "en": ("Lift {object} off its spot and keep holding it.", "Just grasp {object} and hold on.",
               "[Grab|Grasp] {object}; no need to move it elsewhere."),
        "de": ("Greif {object} und halt es fest.",), "zh": ("抓住{object}拿着就好。",),
        "es": ("Agarra {object} y sostenlo.",), "ja": ("{object}をつかんで持っていて。",),
    },
    "kitchen.move": {
        "en": ("Relocate {object} onto {place}.", "{object} belongs on {place}; take it there.",
               "[Carry|Move|Shift] {object} across to {place}.", "Could {object} go over to {place}?"),
        "de": ("Stell {object} auf {place}.",), "zh": ("把{object}搬到{place}。",),
        "es": ("Lleva {object} hasta {place}.",), "ja": ("{object}を{place}に移して。",),
    },
    "kitchen.trash": {
        "en": ("{object} is garbage now; bin it.", "Dispose of {object}, please.", "Chuck {object} out."),
        "de": ("Wirf {object} weg.",), "zh": ("把{object}扔掉。",),
        "es": ("Tira {object} a la basura.",), "ja": ("{object}を捨てておいて。",),
    },
    "kitchen.drawer": {
        "en": ("Stow {object} inside that drawer up top.", "{object} should be tucked into the upper drawer."),
        "de": ("Leg {object} in die obere Schublade.",), "zh": ("把{object}收进上层抽屉。",),
        "es": ("Guarda {object} en el cajón de arriba.",), "ja": ("{object}を上の引き出しにしまって。",),
    },
    "kitchen.two_to_place": {
        "en": ("Both {object} and {other} need moving onto {place}.", "Relocate {object}, then {other}, onto {place}.",
               "Gather {object} plus {other} over at {place}."),
        "de": ("Stell {object} und {other} auf {place}.",), "zh": ("把{object}和{other}都搬到{place}。",),
        "es": ("Lleva {object} y {other} hasta {place}.",), "ja": ("{object}と{other}を{place}に移して。",),
    },
    "kitchen.two_bring": {
        "en": ("Fetch me {object}, and afterwards {other} too.", "I'd love {object} plus {other} brought here.",
               "Deliver {object} first, {other} second."),
        "de": ("Hol mir {object} und danach {other}.",), "zh": ("先给我拿{object}，再拿{other}。",),
        "es": ("Tráeme {object} y luego {other}.",), "ja": ("{object}と{other}を持ってきて。",),
    },
    # --- CAPE's household ---
    "household.fetch": {
        "en": ("Get {thing} and hand it over.", "I need {thing}; fetch it for me.",
               "[Retrieve|Fetch] {thing}, please."),
        "de": ("Hol {thing} und gib es mir.",), "zh": ("把{thing}拿给我。",),
        "es": ("Consígueme {thing}.",), "ja": ("{thing}を取ってきて。",),
    },
    "household.put_on": {
        "en": ("{thing} should end up resting on {receptacle}.", "Set {thing} down onto {receptacle}.",
               "Relocate {thing} over onto {receptacle}."),
        "de": ("Leg {thing} auf {receptacle}.",), "zh": ("把{thing}放到{receptacle}上面。",),
        "es": ("Coloca {thing} encima de {receptacle}.",), "ja": ("{thing}を{receptacle}の上に置いて。",),
    },
    "household.put_in": {
        "en": ("Stow {thing} inside {receptacle}.", "{thing} goes into {receptacle}; close up after.",
               "Tuck {thing} away within {receptacle}."),
        "de": ("Räum {thing} in {receptacle} ein.",), "zh": ("把{thing}收进{receptacle}里。",),
        "es": ("Guarda {thing} dentro de {receptacle}.",), "ja": ("{thing}を{receptacle}の中にしまって。",),
    },
    "household.turn_on": {
        "en": ("Switch {switch} on.", "Power up {switch}, please.", "Get {switch} running."),
        "de": ("Schalte {switch} ein.",), "zh": ("打开{switch}的开关。",),
        "es": ("Enciende {switch}.",), "ja": ("{switch}のスイッチを入れて。",),
    },
    "household.put_turn_on": {
        "en": ("Set {thing} onto {receptacle}, then switch {switch} on.",
               "First {thing} onto {receptacle}; afterwards power up {switch}."),
        "de": ("Leg {thing} auf {receptacle} und schalte {switch} ein.",),
        "zh": ("把{thing}放到{receptacle}上，再打开{switch}。",),
        "es": ("Coloca {thing} encima de {receptacle} y enciende {switch}.",),
        "ja": ("{thing}を{receptacle}に置いてから{switch}をつけて。",),
    },
}
# Determiners put before a slot's value in English (a person says "that red block", "blue bowl").
DETERMINERS: tuple[str, ...] = ("that", "this", "", "")  # never "the": it makes benchmark 4-grams
_CHOICE = re.compile(r"\[([^\[\]]+)\]")
_SLOT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Wording:
    """One instruction's text and how it was made."""

    text: str
    intent: str
    language: str
    template: int  # index in TEMPLATES[intent][language]
    misspelled: bool = False


def _rng(seed: int, *parts: object) -> random.Random:
    key = hashlib.sha256("\0".join(str(p) for p in (seed, *parts)).encode()).hexdigest()
    return random.Random(key)


def misspell(text: str, rng: random.Random, protected: Sequence[str] = ()) -> str:
    """`text` with one or two typos (swapped, doubled or dropped letter) in words of >= 4 letters that are
    not part of a `protected` phrase (the slot values)."""
    words = text.split(" ")
    keep = {w.lower().strip(".,?!") for p in protected for w in p.split()}
    idx = [i for i, w in enumerate(words) if len(w.strip(".,?!;:")) >= 4 and w.isascii()
           and w.lower().strip(".,?!;:") not in keep]
    for i in rng.sample(idx, min(len(idx), rng.choice((1, 1, 2)))):
        w = words[i]
        j = rng.randrange(1, len(w.rstrip(".,?!;:")) - 1)
        kind = rng.randrange(3)
        if kind == 0:
            w = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        elif kind == 1:
            w = w[:j] + w[j] + w[j:]
        else:
            w = w[:j] + w[j + 1:]
        words[i] = w
    return " ".join(words)


class Wordings:
    """The seeded wording generator."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    @staticmethod
    def intents() -> list[str]:
        return list(TEMPLATES)

    def say(self, intent: str, slots: Mapping[str, str], key: object = 0, language: str | None = None) -> Wording:
        """An instruction for `intent` with `slots` filled; `key` (e.g. an episode index) picks the draw."""
        rng = _rng(self.seed, intent, sorted(slots.items()), key)
        by_lang = TEMPLATES[intent]
        if language is None:
            language = rng.choices(LANGUAGES, LANGUAGE_WEIGHTS)[0]
        options = by_lang.get(language) or by_lang["en"]
        if language not in by_lang:
            language = "en"
        t = rng.randrange(len(options))
        template = _CHOICE.sub(lambda m: rng.choice(m.group(1).split("|")), options[t])
        values = dict(slots)
        if "location" in values:
            values["location"] = rng.choice(LOCATION_SYNONYMS.get(values["location"], (values["location"],)))
        values.setdefault("prep", "in" if values.get("target", "").endswith("bowl") else "on")
        if language == "en":  # a determiner before object slots that do not carry one
            for name in ("block", "target", "bowl", "location", "object", "other", "place", "thing",
                         "receptacle", "switch"):
                if name in values and f"that {{{name}}}" not in template and f"{{{name}}}" in template:
                    det = rng.choice(DETERMINERS)
                    start = template.startswith(f"{{{name}}}")
                    values[name] = (f"{det.capitalize() if start else det} {values[name]}" if det
                                    else values[name])
        text = _SLOT.sub(lambda m: values[m.group(1)], template)
        text = text[0].upper() + text[1:] if text and text[0].islower() and language == "en" else text
        typo = False
        if language == "en":
            if rng.random() < INFORMAL_SHARE:
                text = text.lower().rstrip(".")
            if rng.random() < MISSPELL_SHARE:
                text = misspell(text, rng, [str(v) for v in slots.values()])
                typo = True
        return Wording(" ".join(text.split()), intent, language, t, typo)

    def every_template(self, intent: str, slots: Mapping[str, str]) -> list[str]:
        """Every template of `intent` filled with `slots` (each synonym choice's first option): for tests."""
        vals = dict(slots)
        vals.setdefault("prep", "in" if vals.get("target", "").endswith("bowl") else "on")

        def fill(m: re.Match[str]) -> str:
            return vals[m.group(1)]

        out = []
        for options in TEMPLATES[intent].values():
            for t in options:
                for pick in range(3):
                    def choose(m: re.Match[str], p: int = pick) -> str:
                        return m.group(1).split("|")[min(p, m.group(1).count("|"))]

                    out.append(_SLOT.sub(fill, _CHOICE.sub(choose, t)))
        return out
