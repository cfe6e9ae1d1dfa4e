"""Prompt profiles render the paper's formats (IM Listing 1)."""
from __future__ import annotations

from pathlib import Path

import pytest

from planner_node.core.prompts import color_groups, load_profile

PROMPT_DIR = Path(__file__).resolve().parents[3] / "config" / "prompts"


def test_listing1_formats() -> None:
    p = load_profile(PROMPT_DIR, "im_sim_object_success")
    cats = {"red bowl": "bowl", "blue block": "block", "top left corner": "location"}
    # objects are listed in sorted order, so the prompt does not depend on detection order
    assert p.objects(["cyan block", "yellow block", "brown block"]) == "Scene: There is a brown, cyan, yellow block."
    assert p.objects(["red bowl", "blue block", "red block"]) == "Scene: There is a blue, red block and a red bowl."
    assert p.instruction("move all the blocks to the top left corner") == \
        "Human: move all the blocks to the top left corner."
    assert p.action("pick_place", ("red block", "red bowl"), cats) == \
        "Robot action: Pick the red block and place it in the red bowl."
    assert p.action("pick_place", ("red block", "top left corner"), cats) == \
        "Robot action: Pick the red block and place it on the top left corner."
    assert p.action("pick_place", ("red block", "blue block"), cats) == \
        "Robot action: Pick the red block and place it on the blue block."
    assert p.done_line == "Robot thought: None."
    assert p.success(True) == "Success: True" and p.success(False) == "Success: False"
    assert p.preamble.startswith("===============\n") and p.preamble.endswith("===============\n")
    prompt = p.render_prompt(["Human: a."])
    assert prompt.endswith("===============\nHuman: a.\n")


def test_color_groups() -> None:
    assert color_groups(["red block", "blue block", "green bowl"]) == "red, blue block and a green bowl"
    assert color_groups(["apple"]) == "apple"


def test_bad_profiles_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not found"):
        load_profile(tmp_path, "nope")
    with pytest.raises(ValueError, match="invalid"):
        load_profile(tmp_path, "../etc")
    (tmp_path / "x.yaml").write_text("formats: {action: 'a'}\nskills: {}\n")
    with pytest.raises(ValueError, match="lack"):
        load_profile(tmp_path, "x")


def test_unicode_instruction_kept() -> None:
    p = load_profile(PROMPT_DIR, "im_sim_object_success")
    assert p.instruction("把积木放进碗里") == "Human: 把积木放进碗里"
