"""The success detector's parameters: the YAML holds every one (the llm block is the shared one of
config/llm/*.yaml), and every problem is reported at once."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_domain.robots import node_parameters
from monologue_llm.factory import ALL_KEYS
from success_detector_node.core.settings import settings_from_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"


def params(node: str, *files: str) -> dict[str, object]:
    """{dotted name: value} the node gets from these config files (in override order), `/**` included."""
    return node_parameters(CONFIG, node, files)

FILES = ("monologue.yaml", "robots/sim_kinematic.yaml", "llm/embedded.yaml")


def test_the_yaml_sets_every_parameter() -> None:
    s = settings_from_parameters(params("success_detector", *FILES))
    assert s.judge == "sim_geometric" and s.unused == () and s.llm == {}
    assert s.judge_params() == {"xy_tolerance_m": 0.04, "stack_tolerance_m": 0.03, "sort_tolerance_m": 0.10,
                                   "clip_threshold": 0.5}
    assert s.clip.buffer_size == 60 and s.clip.image_topic == "camera/color/image_raw"


def test_llm_judge_takes_the_shared_llm_block() -> None:
    for llm in ("embedded", "openai"):
        p = params("success_detector", "monologue.yaml", "robots/sim_kinematic.yaml", f"llm/{llm}.yaml")
        s = settings_from_parameters({**p, "judge": "llm_judge"})
        assert set(s.llm) == ALL_KEYS and s.llm["backend"] == ("llama_cpp" if llm == "embedded" else "openai")
        assert s.unused == ()


def test_missing_and_bad_parameters_are_reported_together() -> None:
    p = params("success_detector", "monologue.yaml")   # no llm block
    del p["sort_tolerance"]
    p.update({"judge": "llm_judge", "xy_tolerance": 0.0, "clip.buffer_size": 0, "typo": 1})
    with pytest.raises(ValueError) as e:
        settings_from_parameters(p)
    for text in ("sort_tolerance: missing", "xy_tolerance", "clip.buffer_size", "needs the llm block"):
        assert text in str(e.value)
    p = params("success_detector", *FILES)
    with pytest.raises(ValueError, match="clip.model_path"):
        settings_from_parameters({**p, "judge": "clip"})
    assert settings_from_parameters({**p, "typo": 1}).unused == ("typo",)


def test_the_shared_block_reaches_a_node_through_the_params_files() -> None:
    """rcl's `/**` wildcard: a real rclpy node started as the launch starts it (the params files in
    override order, then -p) gets config/llm/<llm>.yaml's block and its own section."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.context import Context
    from rclpy.node import Node

    from monologue_common.params import NODE_OPTIONS, parameter_values

    context = Context()
    files = [a for f in ("monologue.yaml", "robots/sim_kinematic.yaml", "llm/openai.yaml")
             for a in ("--params-file", str(CONFIG / f))]
    rclpy.init(args=["test", "--ros-args", "-r", "__node:=success_detector", *files,
                     "-p", "judge:=llm_judge", "-p", "llm.cassette_mode:=replay"], context=context)
    try:
        node = Node("renamed_by_the_remap", context=context, **NODE_OPTIONS)
        try:
            s = settings_from_parameters(parameter_values(node))
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    assert s.judge == "llm_judge" and set(s.llm) == ALL_KEYS and s.unused == ()
    assert s.llm["backend"] == "openai" and s.llm["cassette_mode"] == "replay" and s.llm["n_ctx"] == 4096
