"""Benchmark reports: the IM Table 1 Markdown table, the wall-time table, results JSON, a bar chart."""
from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .benchmark import PAPER_EPISODES, VARIANTS, Cell, EpisodeRecord, Settings

Titles = Mapping[str, tuple[str, str]]  # task key -> (IM Table 1 row label, "seen" | "unseen")


def cell_text(cell: Cell) -> str:
    """'40% [12–77] 2/5': success rate, 95% Wilson interval (%), successes/episodes."""
    if cell.n == 0:
        return "–"
    lo, hi = cell.interval
    return f"{100 * cell.rate:.0f}% [{100 * lo:.0f}–{100 * hi:.0f}] {cell.successes}/{cell.n}"


def paper_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}%"


def markdown_table(cells: Sequence[Cell], tasks: Sequence[str], variants: Sequence[str], titles: Titles) -> str:
    """IM Table 1 layout: rows are tasks grouped Seen / Unseen; per variant, ours then the paper's."""
    by = {(c.task, c.variant): c for c in cells}
    head = ["", "Task"]
    align = ["---", "---"]
    for v in variants:
        head += [f"{VARIANTS[v].label} (ours)", "(paper)"]
        align += ["---:", "---:"]
    rows = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    for split in ("seen", "unseen"):
        first = True
        for t in (t for t in tasks if titles[t][1] == split):
            row = [split.capitalize() if first else "", titles[t][0]]
            first = False
            for v in variants:
                c = by[(t, v)]
                row += [cell_text(c), paper_text(c.paper)]
            rows.append("| " + " | ".join(row) + " |")
    return "\n".join(rows) + "\n"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def timing_table(records: Sequence[EpisodeRecord], variants: Sequence[str]) -> str:
    """Mean episode wall time split into LLM / motion / rest, scene set-up time and LLM tokens."""
    rows = ["| Variant | episodes | steps | wall s | LLM s | motion s | rest s | scene set-up s | LLM calls | "
            "prompt tokens | evaluated tokens | generated tokens |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    groups = [(VARIANTS[v].label, [r for r in records if r.variant == v]) for v in variants]
    groups.append(("all", list(records)))
    for label, rs in groups:
        if not rs:
            continue
        wall = _mean([r.wall_s for r in rs])

        def share(x: float, wall: float = wall) -> str:
            return f"{x:.1f} ({100 * x / wall:.0f}%)" if wall > 0 else f"{x:.1f}"

        rows.append("| " + " | ".join([
            label, str(len(rs)), f"{_mean([float(r.steps) for r in rs]):.1f}", f"{wall:.1f}",
            share(_mean([r.llm_s for r in rs])), share(_mean([r.motion_s for r in rs])),
            share(_mean([r.rest_s for r in rs])), f"{_mean([r.setup_s for r in rs]):.1f}",
            f"{_mean([float(r.llm_calls) for r in rs]):.1f}", f"{_mean([float(r.prompt_tokens) for r in rs]):.0f}",
            f"{_mean([float(r.new_tokens) for r in rs]):.0f}",
            f"{_mean([float(r.completion_tokens) for r in rs]):.0f}",
        ]) + " |")
    return "\n".join(rows) + "\n"


def settings_text(settings: Settings, episodes: int) -> str:
    aff = "on (SayCan-style)" if settings.affordances else "off (as IM's sim)"
    return (f"LLM `{settings.llm}`, strategy `{settings.strategy}`, affordances {aff}, place noise "
            f"N(0, {settings.place_noise_m:g} m), k = {settings.max_steps}, seed {settings.seed}, "
            f"{episodes} episode(s) per cell (paper: {PAPER_EPISODES})"
            + ("" if settings.wording == "original"
               else f", wording `{settings.wording}` (config/benchmarks/wordings.yaml)")
            + (f", parameters `{settings.params}`" if settings.params else ""))


def report_markdown(
    settings: Settings, cells: Sequence[Cell], records: Sequence[EpisodeRecord], tasks: Sequence[str],
    variants: Sequence[str], titles: Titles, episodes: int,
) -> str:
    return (
        f"## IM Table 1 benchmark\n\n{settings_text(settings, episodes)}.\n\n"
        + markdown_table(cells, tasks, variants, titles)
        + "\nOurs: success rate, 95% Wilson interval in %, successes/episodes. Paper: IM Table 1 "
        "(InstructGPT 1.3B, Ravens-based sim with test-time noise, 50 episodes).\n\n"
        "### Episode wall time (means per episode)\n\n"
        + timing_table(records, variants)
        + "\nLLM: time inside the LLM backend; motion: skill execution (from each `Robot action` to its "
        "feedback); rest: everything else in the episode (ROS round trips, scene description, success "
        "checks, prompt building). Scene set-up: restarting the scene's node(s) before the episode.\n"
    )


def results_json(
    settings: Settings, cells: Sequence[Cell], records: Sequence[EpisodeRecord], titles: Titles,
) -> dict[str, Any]:
    return {
        "settings": asdict(settings),
        "cells": [
            {"task": c.task, "title": titles[c.task][0], "split": titles[c.task][1], "variant": c.variant,
             "variant_label": VARIANTS[c.variant].label, "episodes": c.n, "successes": c.successes,
             "rate": None if c.n == 0 else c.rate,
             "wilson95": None if c.n == 0 else list(c.interval), "paper_percent": c.paper}
            for c in cells
        ],
        "episodes": [r.to_json() for r in records],
    }


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def write_chart(
    path: Path, cells: Sequence[Cell], tasks: Sequence[str], variants: Sequence[str], titles: Titles, subtitle: str,
) -> None:
    """Grouped bars per task: our rate per variant with its 95% interval (grey); the paper's as a red tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(c.task, c.variant): c for c in cells}
    width = 0.8 / max(1, len(variants))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(tasks)), 4.8))
    for j, v in enumerate(variants):
        xs, ys, err_lo, err_hi, paper_x, paper_y = [], [], [], [], [], []
        for i, t in enumerate(tasks):
            c = by[(t, v)]
            x = i + (j - (len(variants) - 1) / 2) * width
            rate = 0.0 if c.n == 0 else 100 * c.rate
            lo, hi = c.interval
            xs.append(x)
            ys.append(rate)
            # clamped: at 0% or 100% rounding can put the Wilson bound a hair past the rate
            err_lo.append(max(0.0, rate - 100 * lo) if c.n else 0.0)
            err_hi.append(max(0.0, 100 * hi - rate) if c.n else 0.0)
            if c.paper is not None:
                paper_x.append(x)
                paper_y.append(c.paper)
        ax.bar(xs, ys, width * 0.95, yerr=[err_lo, err_hi], capsize=2, ecolor="0.6",
               label=f"{VARIANTS[v].label} (ours)")
        ax.scatter(paper_x, paper_y, marker="_", s=220, color="crimson", linewidths=2.5,
                   label="paper (IM Table 1)" if j == 0 else None, zorder=3)
    labels = [f"{titles[t][0].strip(chr(34))}\n({titles[t][1]})" for t in tasks]
    ax.set_xticks(range(len(tasks)), labels, fontsize=7, rotation=20, horizontalalignment="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel("success rate (%), 95% Wilson interval")
    wrapped = "\n".join(textwrap.wrap(subtitle.replace("`", ""), width=int(14 * fig.get_figwidth())))
    ax.set_title(f"IM Table 1 tasks\n{wrapped}", fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
