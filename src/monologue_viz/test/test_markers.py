"""RViz markers: valid frames, ids unique per namespace, DELETE for what disappears, lifetimes."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from monologue_viz.core.markers import (
    ADD,
    CUBE,
    CYLINDER,
    DELETE,
    NS_LABELS,
    NS_OBJECTS,
    NS_SKILL,
    NS_TRANSCRIPT,
    MarkerSpec,
    SceneItem,
    SceneView,
    TranscriptView,
    ViewConfig,
)

# config/monologue.yaml's viz section
CFG = ViewConfig(frame_id="base_link", lines=12, line_height_m=0.035, text_size_m=0.025, anchor=(0.5, -0.55, 0.45),
                 lifetime_s=0.0)


def check(markers: list[MarkerSpec]) -> None:
    """What RViz needs: a frame, one marker per (ns, id) per update, sane sizes and lifetimes."""
    assert all(m.frame_id for m in markers)
    dup = [k for k, n in Counter((m.ns, m.id) for m in markers).items() if n > 1]
    assert not dup, dup
    for m in markers:
        assert m.action in (ADD, DELETE) and m.lifetime_s >= 0
        if m.action == ADD:
            assert m.scale[2] > 0 and 0 < m.color[3] <= 1
            assert m.type != "text" or m.text


def test_transcript_keeps_the_last_rows_and_deletes_the_rest() -> None:
    view = TranscriptView(replace(CFG, lines=3, lifetime_s=0.0))
    view.on_event("e1", 0, "SCENE_OBJECTS", "Scene: There is a red block.", {})
    view.on_event("e1", 1, "HUMAN_INSTRUCTION", "Human: stack them.", {})
    first = view.markers()
    check(first)
    assert [(m.ns, m.id, m.action) for m in first] == [(NS_TRANSCRIPT, 0, ADD), (NS_TRANSCRIPT, 1, ADD)]
    assert first[0].position[2] > first[1].position[2]  # oldest on top
    for i, text in enumerate(["Robot action: a", "Success: True", "Robot action: b"], start=2):
        view.on_event("e1", i, "ROBOT_ACTION" if "action" in text else "SUCCESS", text,
                      {"skill": "pick_place", "args": ["a", "b"]} if "action" in text else {"success": True})
    m = view.markers()
    check(m)
    rows = [x.text for x in m if x.ns == NS_TRANSCRIPT]
    assert rows == ["Robot action: a", "Success: True", "Robot action: b"]
    skill = [x for x in m if x.ns == NS_SKILL]
    assert skill and skill[0].action == ADD and skill[0].text == "executing pick_place(a, b): started"
    view.on_skill_state("moving to place")
    assert [x.text for x in view.markers() if x.ns == NS_SKILL] == ["executing pick_place(a, b): moving to place"]
    view.on_event("e2", 0, "HUMAN_INSTRUCTION", "Human: next.", {})  # new episode: old rows go away
    m = view.markers()
    check(m)
    assert [(x.id, x.action) for x in m if x.ns == NS_TRANSCRIPT] == [(0, ADD), (1, DELETE), (2, DELETE)]
    assert [(x.ns, x.action) for x in m if x.ns == NS_SKILL] == [(NS_SKILL, DELETE)]
    assert [x for x in view.markers() if x.ns == NS_SKILL] == []  # deleted once, not again


def test_long_lines_wrap_and_failed_success_is_red() -> None:
    view = TranscriptView(replace(CFG, lines=10, wrap_chars=20))
    view.on_event("e", 0, "SCENE_OBJECTS", "Scene: There is a red, blue, green block and a yellow bowl.", {})
    view.on_event("e", 1, "SUCCESS", "Success: False", {"success": False})
    m = view.markers()
    check(m)
    assert len(m) >= 4 and all(len(x.text) <= 20 for x in m)
    assert m[-1].color[:3] == (1.0, 0.3, 0.3)


def test_scene_objects_keep_ids_and_vanished_ones_are_deleted() -> None:
    view = SceneView(lifetime_s=2.0)
    red = SceneItem("red block", "block", (0.4, 0.1, 0.02), (0.04, 0.04, 0.04))
    bowl = SceneItem("blue bowl", "bowl", (0.5, -0.1, 0.03), (0.12, 0.12, 0.06))
    corner = SceneItem("top left corner", "location", (0.3, 0.3, 0.0), (0.0, 0.0, 0.0))
    m = view.markers("base_link", [red, bowl, corner])
    check(m)
    shapes = {x.text or x.ns: x for x in m}
    assert [(x.ns, x.type) for x in m if x.ns == NS_OBJECTS] == [(NS_OBJECTS, CUBE), (NS_OBJECTS, CYLINDER)]
    assert shapes["red block"].ns == NS_LABELS and all(x.lifetime_s == 2.0 for x in m)
    assert [x for x in m if x.ns == NS_OBJECTS][0].color[:3] == (0.9, 0.1, 0.1)
    m = view.markers("base_link", [bowl])
    check(m)
    assert sorted((x.ns, x.id, x.action) for x in m) == [
        (NS_LABELS, 0, DELETE), (NS_LABELS, 1, ADD), (NS_OBJECTS, 0, DELETE), (NS_OBJECTS, 1, ADD)]


def test_bad_view_config_is_refused() -> None:
    with pytest.raises(ValueError, match="frame_id"):
        TranscriptView(replace(CFG, frame_id=""))
    with pytest.raises(ValueError):
        TranscriptView(replace(CFG, lines=0))
