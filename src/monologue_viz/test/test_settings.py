"""The viz node's parameters: the YAML holds every one, and every problem is reported at once."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_domain.robots import node_parameters
from monologue_viz.core.settings import settings_from_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"


def params(node: str, *files: str) -> dict[str, object]:
    """{dotted name: value} the node gets from these config files (in override order), `/**` included."""
    return node_parameters(CONFIG, node, files)


def test_the_yaml_sets_every_parameter() -> None:
    s = settings_from_parameters(params("viz", "monologue.yaml", "robots/sim.yaml", "llm/embedded.yaml"))
    assert s.view.frame_id == "base_link" and s.view.lines == 12 and s.view.anchor == (0.5, -0.55, 0.45)
    assert s.unused == ()


def test_missing_and_bad_parameters_are_reported_together() -> None:
    p = params("viz", "monologue.yaml")
    del p["lifetime"]
    p.update({"lines": 0, "anchor": [1.0, 2.0], "text_size": "big"})
    with pytest.raises(ValueError) as e:
        settings_from_parameters(p)
    for text in ("lifetime: missing", "lines", "anchor", "text_size"):
        assert text in str(e.value)
