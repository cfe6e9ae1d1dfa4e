"""The scene message adapter: SceneObject / SceneDescription round trips, poses, points and stamps."""
from __future__ import annotations

import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Vector3
from std_msgs.msg import Header

from monologue_domain.msgs import (
    pose_stamped_msg,
    position_of,
    scene_from_msg,
    scene_object_from_msg,
    scene_object_to_msg,
    scene_to_msg,
    seconds,
    time_msg,
    vec3,
)
from monologue_domain.scene import Scene, SceneObject
from monologue_interfaces.msg import SceneDescription
from monologue_interfaces.msg import SceneObject as SceneObjectMsg

PLATE = SceneObject("red plate", "plate", (0.6, -0.1, 0.01), (0.2, 0.2, 0.02), visible=False, confidence=0.75,
                    place_point=(0.62, -0.13, 0.01), orientation=(0.0, 0.0, 0.7071, 0.7071))
BLOCK = SceneObject("blue block", "block", (0.5, 0.1, 0.02), (0.04, 0.04, 0.04), segmentation_id=3)
CORNER = SceneObject("top left corner", "location", (0.7, 0.3, 0.0))


def test_scene_object_round_trip_keeps_every_message_field() -> None:
    header = Header(frame_id="base_link", stamp=Time(sec=5, nanosec=250))
    for obj in (PLATE, BLOCK, CORNER):
        msg = scene_object_to_msg(obj, header)
        assert msg.pose.header.frame_id == "base_link" and msg.pose.header.stamp.nanosec == 250
        assert scene_object_from_msg(msg) == obj
    msg = scene_object_to_msg(PLATE, header)
    assert msg.has_place_point and (msg.place_point.x, msg.place_point.y) == (0.62, -0.13)
    assert (msg.size.x, msg.size.z, msg.confidence, msg.visible) == (0.2, 0.02, 0.75, False)
    assert not scene_object_to_msg(BLOCK).has_place_point and scene_object_to_msg(BLOCK).pose.pose.orientation.w == 1.0


def test_colour_and_heavy_are_ground_truth_extras_the_message_drops() -> None:
    truth = SceneObject("purple block", "block", (0.5, 0.0, 0.02), color="purple", heavy=True)
    back = scene_object_from_msg(scene_object_to_msg(truth))
    assert (back.color, back.heavy) == ("", False) and back.position == truth.position


def test_a_message_built_field_by_field_reads_back() -> None:
    m = SceneObjectMsg(name="red block", category="block", visible=True, confidence=1.0, segmentation_id=-1)
    m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z = 0.42, -0.1, 0.02
    m.size.x = m.size.y = m.size.z = 0.04
    o = scene_object_from_msg(m)
    assert (o.position, o.size, o.place_point, o.orientation) == ((0.42, -0.1, 0.02), (0.04, 0.04, 0.04), None,
                                                                   (0.0, 0.0, 0.0, 1.0))


def test_scene_round_trip_and_stamps() -> None:
    scene = Scene("base_link", 1700000000.5, "owlvit", (BLOCK, PLATE, CORNER), held_objects=("blue block",))
    msg = scene_to_msg(scene)
    assert isinstance(msg, SceneDescription)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1700000000, 500_000_000)
    assert all(o.pose.header.frame_id == "base_link" for o in msg.objects)
    assert scene_from_msg(msg) == scene
    stamped = scene_to_msg(scene, stamp=Time(sec=7, nanosec=1))
    assert (stamped.header.stamp.sec, stamped.header.stamp.nanosec) == (7, 1)
    assert scene_from_msg(stamped).stamp_s == pytest.approx(7.000000001)


def test_geometry_and_time_helpers() -> None:
    assert vec3(Point(x=1.0, y=2.0, z=3.0)) == (1.0, 2.0, 3.0) == vec3(Vector3(x=1.0, y=2.0, z=3.0))
    pose = pose_stamped_msg((0.1, 0.2, 0.3), header=Header(frame_id="tool0"))
    assert position_of(pose) == (0.1, 0.2, 0.3) and pose.header.frame_id == "tool0" and pose.pose.orientation.w == 1.0
    assert seconds(time_msg(12.25)) == 12.25
    t = time_msg(3.9999999999)
    assert (t.sec, t.nanosec) == (4, 0)
