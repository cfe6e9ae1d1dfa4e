"""The physics simulator with perception from its wrist camera (the `perception:=camera` demo): the
embedded LLM plans, the scene and every skill's success come from RGB-D images (oracle boxes, depth,
TF at each image's stamp, open3d), bowls get IM-R place points, and markers are published."""
from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monologue_bringup.testing import GraphPeer

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def camera_graph(ros_domain: int, tmp_path: Path) -> Iterator[Any]:
    """The camera-perception demo graph, recorded into tmp_path/bag; yields (log, bag dir, stop)."""
    from monologue_bringup.up import Supervisor
    from monologue_eval.demo import CAMERA_PERCEPTION

    from .conftest import GraphLog

    log = GraphLog()
    params: dict[str, dict[str, str]] = {k: dict(v) for k, v in CAMERA_PERCEPTION.items()}
    params["tabletop_sim"] = {"sim.seed": "11", "sim.num_blocks": "2", "sim.num_bowls": "3",
                              "camera.width": "320", "camera.height": "240"}
    bag = tmp_path / "bag"
    sup = Supervisor("sim", "embedded", config_dir=REPO / "config", sink=log, node_params=params, record=bag)
    sup.start()
    try:
        yield log, bag, sup.stop
    finally:
        sup.stop()


class Watcher(GraphPeer):
    """Collects perception's scene descriptions and marker arrays during the episode."""

    def __init__(self) -> None:
        from visualization_msgs.msg import MarkerArray

        from monologue_common.qos import LATCHED
        from monologue_interfaces.msg import SceneDescription

        super().__init__("camera_demo_watcher")
        self.scenes: list[Any] = []
        self.markers: list[Any] = []
        self.node.create_subscription(SceneDescription, "scene/description", self.scenes.append, LATCHED)
        self.node.create_subscription(MarkerArray, "perception/markers", self.markers.append, 10)
        self.spin_in_background()


def test_pick_and_place_judged_from_the_camera(camera_graph) -> None:  # type: ignore[no-untyped-def]
    from monologue_eval.demo import run_episode, world_states

    log, bag, stop_graph = camera_graph
    watcher = Watcher()
    try:
        result, objects = run_episode("Put the blocks in their matching bowls.", 600.0, lambda e: None,
                                      recorder_ready_s=60.0)
        deadline = time.monotonic() + 10.0
        while not watcher.markers and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        watcher.close()
    texts = [e.text for e in result.transcript]
    assert texts[0] == "Scene: There is a brown, cyan block and a brown, cyan, gray bowl.", texts
    actions = [t for t in texts if t.startswith("Robot action:")]
    assert actions, (texts, log.text()[-3000:])
    # the first skill moved its block into a bowl, the camera saw it, and the detector said so
    first = texts.index(actions[0])
    if texts[first + 1] != "Success: True":
        pytest.fail("\n".join(texts) + "\n" + "\n".join(x for x in log.lines if "success_detector" in x
                                                        or "perception" in x)[-4000:])
    world = {s.name: s for s in world_states(objects)}
    block = actions[0].split("Pick the ")[1].split(" and place")[0]
    bowl = actions[0].split(" in the ")[1].rstrip(".")
    dx = world[block].position[0] - world[bowl].position[0]
    dy = world[block].position[1] - world[bowl].position[1]
    assert (dx * dx + dy * dy) ** 0.5 < 0.04
    assert "from the place point on the" in log.text()  # the tabletop rule judged it, from the camera
    # nothing was dropped for a missing camera pose: TF is looked up at each image's stamp
    # the camera pose comes from /tf for every frame of the episode (a frame that arrives before the
    # simulator's static transform at start-up is dropped and logged, which is fine)
    episode = log.text()[log.text().find("[HUMAN_INSTRUCTION]"):]
    assert "[HUMAN_INSTRUCTION]" in episode and "no transform" not in episode, log.text()[-3000:]

    # the camera's scene: not the ground truth, but within 2 cm of it; bowls carry place points
    camera = [s for s in watcher.scenes if s.source != "ground_truth"]
    assert camera, [s.source for s in watcher.scenes]
    last = {o.name: o for o in camera[-1].objects if o.category != "location"}
    assert set(last) == {n for n, s in world.items() if s.category != "location"}
    for name, o in last.items():
        p, truth = o.pose.pose.position, world[name].position
        assert math.hypot(p.x - truth[0], p.y - truth[1]) < 0.02, (name, p, truth)
        assert o.has_place_point == (o.category == "bowl"), name
    # RViz markers: a box and a label per object
    texts_shown = [m.text for m in watcher.markers[-1].markers if m.ns == "labels"]
    assert len(texts_shown) == len(last) and all(any(t.startswith(n + " ") for t in texts_shown) for n in last)
    assert sum(m.ns == "objects" for m in watcher.markers[-1].markers) == len(last)

    # the recorded run replays to the same transcript, with camera perception and the tabletop rule
    # restored from the bag (TF, images and the per-image tool0 transforms keep their stamps)
    from monologue_eval.replay import replay

    stop_graph()
    said: list[str] = []
    rc = replay(bag, rate=1.0, timeout_s=600.0, config_dir=REPO / "config", sink=log, say=said.append)
    assert rc == 0, "\n".join(said) + "\n" + log.text()[-4000:]
    assert any("'source': 'camera'" in line for line in said), said
