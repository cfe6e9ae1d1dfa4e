"""success_detector_node as a real process over DDS with the clip and llm_judge strategies.

The node is started like monologue-up does (the config files for sim_kinematic + embedded, plus
overrides); a test node plays perception (describe_scene, scene/description) and the camera.
- clip: a tiny random-weight CLIP saved to a temp dir; the verdict's scores must be the ones this
  process computes with the same model on the image from before the skill's start and on an image
  published after the request (bgr8, so the decoding counts too).
- llm_judge: the real embedded Gemma 3 270M; the judge scores " yes" against " no".
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from monologue_bringup.testing import GraphPeer

if TYPE_CHECKING:
    from .conftest import GraphLog

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 180.0  # a loaded 2-core machine: torch + transformers import, model load
SCENE_TIMEOUT_S = 2.0


def _start(params: dict[str, str]) -> Iterator[GraphLog]:
    from monologue_bringup.up import Supervisor

    from .conftest import GraphLog

    log = GraphLog()
    sup = Supervisor("sim_kinematic", "embedded", config_dir=REPO / "config", nodes=["success_detector"],
                     node_params={"success_detector": {"scene_timeout": str(SCENE_TIMEOUT_S), **params}}, sink=log)
    sup.start()
    try:
        yield log
    finally:
        codes = sup.stop()
        assert codes["success_detector"] in (0, -2, -15, 130), log.text()[-5000:]


def _image(rgb: np.ndarray, stamp: Any, bgr: bool = False) -> Any:
    from sensor_msgs.msg import Image

    h, w = rgb.shape[:2]
    data = (rgb[:, :, ::-1] if bgr else rgb).tobytes()
    msg = Image(height=h, width=w, encoding="bgr8" if bgr else "rgb8", step=w * 3, data=data)
    msg.header.stamp, msg.header.frame_id = stamp, "camera_color_optical_frame"
    return msg


def _obj(name: str, category: str, xyz: tuple[float, float, float]) -> Any:
    from monologue_interfaces.msg import SceneObject

    o = SceneObject(name=name, category=category, visible=True, confidence=1.0)
    o.pose.header.frame_id = "base_link"
    o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = xyz
    return o


class Peer(GraphPeer):
    """The test's side of the graph: perception's describe_scene and scene/description, the camera."""

    def __init__(self) -> None:
        from sensor_msgs.msg import Image

        from monologue_common.qos import LATCHED
        from monologue_interfaces.msg import SceneDescription
        from monologue_interfaces.srv import DescribeScene, DetectSuccess

        super().__init__("success_detector_test_peer")
        self.camera = self.node.create_publisher(Image, "camera/color/image_raw", 10)
        self.scenes = self.node.create_publisher(SceneDescription, "scene/description", LATCHED)
        self.scene_now = SceneDescription(source="oracle")
        self.node.create_service(DescribeScene, "describe_scene", self._describe)
        self.client = self.node.create_client(DetectSuccess, "detect_success")

    def _describe(self, req: Any, res: Any) -> Any:
        res.success, res.scene = True, self.scene_now
        return res

    def now(self) -> Any:
        return self.node.get_clock().now().to_msg()

    def scene(self, objects: list[Any], stamp: Any) -> Any:
        from monologue_interfaces.msg import SceneDescription

        s = SceneDescription(source="oracle", objects=objects)
        s.header.stamp, s.header.frame_id = stamp, "base_link"
        return s

    def spin_for(self, seconds: float, every: Callable[[], None] | None = None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if every is not None:
                every()
            self.ex.spin_once(timeout_sec=0.1)

    def wait_ready(self, log: GraphLog, camera: bool) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (self.client.service_is_ready() and (not camera or self.camera.get_subscription_count() > 0)):
            assert time.monotonic() < deadline, f"success_detector not ready\n{log.text()[-5000:]}"
            self.ex.spin_once(timeout_sec=0.2)

    def detect(self, skill_start: Any, timeout_s: float, every: Callable[[], None] | None = None,
               args: tuple[str, str] = ("red block", "blue bowl")) -> tuple[Any, float]:
        """DetectSuccess(pick_place, args); calls `every` about every 0.1 s while waiting. Returns the
        response and the wall time it took (s)."""
        from monologue_interfaces.srv import DetectSuccess

        req = DetectSuccess.Request(skill="pick_place", args=list(args), skill_start=skill_start,
                                    skill_end=self.now())
        t0 = time.monotonic()
        fut = self.client.call_async(req)
        while not fut.done():
            assert time.monotonic() - t0 < timeout_s, f"detect_success did not answer within {timeout_s} s"
            if every is not None:
                every()
            self.ex.spin_once(timeout_sec=0.1)
        return fut.result(), time.monotonic() - t0



@pytest.fixture(scope="module")
def peer(ros_domain: int) -> Iterator[Peer]:
    p = Peer()
    yield p
    p.close()


BOWL = ("blue bowl", "bowl", (0.6, -0.1, 0.0))


class TestClip:
    @pytest.fixture(scope="class")
    @classmethod
    def clip_dir(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        from monologue_vision.tiny_models import tiny_clip

        return tiny_clip(tmp_path_factory.mktemp("success_clip") / "clip")

    @pytest.fixture(scope="class")
    @classmethod
    def node(cls, peer: Peer, clip_dir: Path) -> Iterator[GraphLog]:
        yield from _start({"judge": "clip", "clip.model_path": str(clip_dir)})

    @staticmethod
    def frames() -> dict[str, np.ndarray]:
        grey = np.full((64, 96, 3), 120, np.uint8)
        during, after = grey.copy(), grey.copy()
        during[:, :48] = (250, 250, 250)  # the arm over the table
        after[20:44, 36:60] = (210, 20, 20)  # a red block in the middle
        return {"before": grey, "during": during, "after": after}

    def test_scores_the_image_at_the_skill_start_and_a_fresh_one(self, peer: Peer, node: GraphLog,
                                                                 clip_dir: Path) -> None:
        from monologue_vision.clip import ClipScorer

        text = "a photo of the red block in the blue bowl"
        scorer = ClipScorer(str(clip_dir))
        frames = self.frames()
        expected = {k: round(scorer.score(v, [text])[0], 2) for k, v in frames.items()}
        assert len(set(expected.values())) == 3, f"the test images must score apart: {expected}"

        peer.scene_now = peer.scene([_obj("red block", "block", (0.6, -0.1, 0.03)), _obj(*BOWL)], peer.now())
        peer.wait_ready(node, camera=True)
        peer.spin_for(1.5, lambda: peer.camera.publish(_image(frames["before"], peer.now())))
        skill_start = peer.now()
        peer.spin_for(1.5, lambda: peer.camera.publish(_image(frames["during"], peer.now())))
        res, took = peer.detect(skill_start, 60.0,
                                lambda: peer.camera.publish(_image(frames["after"], peer.now(), bgr=True)))

        assert res.detector == "clip", res
        m = re.fullmatch(rf'CLIP score of "{text}" (-?\d+\.\d\d) -> (-?\d+\.\d\d) \(needs a rise > 0\.50\)',
                         res.explanation)
        assert m is not None, res.explanation
        before, after = float(m.group(1)), float(m.group(2))
        assert (before, after) == (expected["before"], expected["after"]), (res.explanation, expected)
        assert res.success == (after - before > 0.5)
        assert 0.5 <= res.confidence <= 1.0
        assert took < SCENE_TIMEOUT_S + 10.0

    def test_fails_cleanly_without_camera_images(self, peer: Peer, node: GraphLog) -> None:
        frames = self.frames()
        peer.scene_now = peer.scene([_obj("red block", "block", (0.6, -0.1, 0.03)), _obj(*BOWL)], peer.now())
        peer.wait_ready(node, camera=True)
        peer.spin_for(1.0, lambda: peer.camera.publish(_image(frames["before"], peer.now())))

        # Nothing published after the request: the node waits scene_timeout, then says why.
        res, took = peer.detect(peer.now(), 60.0)
        assert res.detector == "clip" and not res.success and res.confidence == 0.0
        assert res.explanation.startswith(
            f"no fresh camera image on camera/color/image_raw within scene_timeout {SCENE_TIMEOUT_S:.1f} s"), \
            res.explanation
        assert SCENE_TIMEOUT_S - 0.5 <= took < SCENE_TIMEOUT_S + 5.0

        # A skill that started before any kept image: no "before" image, answered at once.
        from builtin_interfaces.msg import Time

        res, took = peer.detect(Time(sec=1), 60.0)
        assert not res.success and res.confidence == 0.0
        assert res.explanation.startswith("no camera image on camera/color/image_raw from before the skill's start"), \
            res.explanation
        assert took < SCENE_TIMEOUT_S


class TestLlmJudge:
    @pytest.fixture(scope="class")
    @classmethod
    def node(cls, peer: Peer) -> Iterator[GraphLog]:
        yield from _start({"judge": "llm_judge", "llm.n_ctx": "1024"})

    def test_judges_with_the_embedded_llm(self, peer: Peer, node: GraphLog) -> None:
        from builtin_interfaces.msg import Time

        now = peer.now()
        t0 = now.sec + now.nanosec * 1e-9 - 2.0
        away = _obj("red block", "block", (0.3, 0.2, 0.02))
        on_bowl = _obj("red block", "block", (0.6, -0.1, 0.03))
        sec = int(t0)
        peer.scenes.publish(peer.scene([away, _obj(*BOWL)], Time(sec=sec, nanosec=int((t0 - sec) * 1e9))))
        peer.scene_now = peer.scene([on_bowl, _obj(*BOWL)], now)
        peer.wait_ready(node, camera=False)

        res, took = peer.detect(Time(sec=sec + 1, nanosec=0), 120.0)
        assert res.detector == "llm_judge", res
        m = re.fullmatch(r"LLM judge answered (yes|no) \(scored: p\(yes\)=([01]\.\d\d), p\(no\)=([01]\.\d\d)\)",
                         res.explanation)
        assert m is not None, f"{res.explanation}\n{node.text()[-3000:]}"
        assert res.success == (m.group(1) == "yes")
        assert res.confidence == pytest.approx(max(float(m.group(2)), float(m.group(3))), abs=0.006)
        assert "LLM backend llama_cpp loading" in node.text()
