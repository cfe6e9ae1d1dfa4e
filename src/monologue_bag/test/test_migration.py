"""Old bags after an interface gained fields: recorded messages are copied field by field into the
installed types (new fields take their defaults), images and fixed arrays included."""
from __future__ import annotations

import numpy as np
import pytest
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from monologue_bag.rostypes import to_message

OLD_SCENE_OBJECT = """
string name
string category
geometry_msgs/PoseStamped pose
geometry_msgs/Vector3 size
bool visible
float32 confidence
int32 segmentation_id
"""
OLD_SCENE = """
std_msgs/Header header
string source
monologue_interfaces/SceneObject[] objects
string[] held_objects
"""


@pytest.fixture(scope="module")
def old_store():  # type: ignore[no-untyped-def]
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register(get_types_from_msg(OLD_SCENE_OBJECT, "monologue_interfaces/msg/SceneObject"))
    store.register(get_types_from_msg(OLD_SCENE, "monologue_interfaces/msg/SceneDescription"))
    return store


def test_a_scene_recorded_before_place_points_converts_with_defaults(old_store) -> None:  # type: ignore[no-untyped-def]
    from monologue_interfaces.msg import SceneDescription

    t = old_store.types
    header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=12, nanosec=5), frame_id="base_link")
    pose = t["geometry_msgs/msg/PoseStamped"](header=header, pose=t["geometry_msgs/msg/Pose"](
        position=t["geometry_msgs/msg/Point"](x=0.5, y=-0.1, z=0.02),
        orientation=t["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)))
    obj = t["monologue_interfaces/msg/SceneObject"](
        name="red bowl", category="bowl", pose=pose, size=t["geometry_msgs/msg/Vector3"](x=0.1, y=0.1, z=0.04),
        visible=False, confidence=0.75, segmentation_id=7)
    old = t["monologue_interfaces/msg/SceneDescription"](header=header, source="camera", objects=[obj],
                                                         held_objects=["blue block"])
    raw = old_store.serialize_cdr(old, "monologue_interfaces/msg/SceneDescription")
    decoded = old_store.deserialize_cdr(raw, "monologue_interfaces/msg/SceneDescription")

    new = to_message(decoded, SceneDescription)
    assert new.header.stamp.sec == 12 and new.header.frame_id == "base_link" and new.source == "camera"
    assert list(new.held_objects) == ["blue block"]
    o = new.objects[0]
    assert (o.name, o.category, o.visible, o.segmentation_id) == ("red bowl", "bowl", False, 7)
    assert o.confidence == pytest.approx(0.75) and o.pose.pose.position.y == pytest.approx(-0.1)
    assert o.has_place_point is False and o.place_point.x == 0.0  # the new fields: defaults


def test_images_and_fixed_arrays_copy_exactly() -> None:
    from sensor_msgs.msg import CameraInfo, Image

    store = get_typestore(Stores.ROS2_JAZZY)
    t = store.types
    header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=1, nanosec=2), frame_id="cam")
    pixels = np.arange(2 * 3 * 3, dtype=np.uint8)
    img = t["sensor_msgs/msg/Image"](header=header, height=2, width=3, encoding="rgb8", is_bigendian=0, step=9,
                                     data=pixels)
    new = to_message(store.deserialize_cdr(store.serialize_cdr(img, "sensor_msgs/msg/Image"),
                                           "sensor_msgs/msg/Image"), Image)
    assert bytes(new.data) == pixels.tobytes() and new.step == 9 and new.encoding == "rgb8"
    k = np.arange(9, dtype=np.float64)
    info = t["sensor_msgs/msg/CameraInfo"](
        header=header, height=2, width=3, distortion_model="plumb_bob", d=np.zeros(5), k=k, r=np.eye(3).ravel(),
        p=np.zeros(12), binning_x=0, binning_y=0,
        roi=t["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))
    new_info = to_message(info, CameraInfo)
    assert list(new_info.k) == list(k) and len(new_info.d) == 5
