"""bag_recorder's and bag_player's parameters: the YAML holds every one (the directories are set by
the launchers), and every problem is reported at once."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_bag.core.settings import player_settings_from_parameters, recorder_settings_from_parameters
from monologue_domain.robots import node_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"


def params(node: str, *files: str) -> dict[str, object]:
    """{dotted name: value} the node gets from these config files (in override order), `/**` included."""
    return node_parameters(CONFIG, node, files)

FILES = ("monologue.yaml", "robots/sim.yaml", "llm/embedded.yaml")


def test_recorder_parameters() -> None:
    p = params("recorder", *FILES)
    with pytest.raises(ValueError, match="output: must not be empty"):
        recorder_settings_from_parameters(p)   # monologue-up record:=<dir> sets it
    s = recorder_settings_from_parameters({**p, "output": "runs/bag", "custom_data": ["monologue.robot=sim"]})
    assert s.output == "runs/bag" and "/tf" in s.topics and s.max_rates == {"/camera/*/image_raw": 5.0}
    assert s.custom_data == {"monologue.robot": "sim"} and s.depth == 100 and s.compress and s.unused == ()
    with pytest.raises(ValueError) as e:
        recorder_settings_from_parameters({**p, "output": "x", "max_rates": ["/a=fast"], "custom_data": ["k"],
                                           "depth": 0})
    for text in ("max_rates", "custom_data", "depth"):
        assert text in str(e.value)


def test_player_parameters() -> None:
    p = params("bag_player", *FILES)
    with pytest.raises(ValueError, match="bag: must not be empty"):
        player_settings_from_parameters(p)   # monologue-replay <bag> sets it
    s = player_settings_from_parameters({**p, "bag": "runs/x", "rate": 2})
    assert s.playback.rate == 2.0 and s.playback.hold_period_s == 0.2 and s.episode and s.unused == ()
    with pytest.raises(ValueError) as e:
        player_settings_from_parameters({**p, "bag": "x", "rate": 0.0, "start_offset": -1.0, "skill_timeout": 0})
    for text in ("rate", "start_offset", "skill_timeout"):
        assert text in str(e.value)
