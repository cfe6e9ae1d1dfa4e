"""The one adapter between the domain scene (monologue_domain.scene) and its ROS messages.

`from_msg` / `to_msg` for SceneObject and SceneDescription, and the pose, point, vector and time
conversions every node needs. Imports the generated messages (not rclpy), so only nodes and tools
import it; ROS-free `core` modules use the domain types. Lengths in metres, times in seconds since
the epoch, quaternions (x, y, z, w).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

# The generated message modules ship without type information (mypy.ini ignores them): Any to mypy.
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, PoseStamped, Quaternion, Vector3
from std_msgs.msg import Header

from monologue_interfaces.msg import SceneDescription as SceneDescriptionMsg
from monologue_interfaces.msg import SceneObject as SceneObjectMsg

from .scene import IDENTITY, Scene, SceneObject, Vec3
from .scene import Quaternion as Quat


# ----- geometry ------------------------------------------------------------------------------------
def vec3(v: Point | Vector3) -> Vec3:
    """(x, y, z) of a geometry_msgs Point or Vector3."""
    return (float(v.x), float(v.y), float(v.z))


def point_msg(v: Vec3) -> Point:
    return Point(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def vector3_msg(v: Vec3) -> Vector3:
    return Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def quaternion(q: Quaternion) -> Quat:
    """(x, y, z, w) of a geometry_msgs Quaternion."""
    return (float(q.x), float(q.y), float(q.z), float(q.w))


def quaternion_msg(q: Quat) -> Quaternion:
    return Quaternion(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3]))


def pose_stamped_msg(position: Vec3, orientation: Quat = IDENTITY, header: Header | None = None) -> PoseStamped:
    """A PoseStamped at `position` (m) with `orientation` (x, y, z, w) in `header`'s frame."""
    pose = PoseStamped()
    if header is not None:
        pose.header = header
    pose.pose.position = point_msg(position)
    pose.pose.orientation = quaternion_msg(orientation)
    return pose


def position_of(pose: PoseStamped) -> Vec3:
    """(x, y, z) of a PoseStamped's position, m."""
    return vec3(pose.pose.position)


# ----- time ----------------------------------------------------------------------------------------
def seconds(stamp: Time) -> float:
    """A builtin_interfaces Time as seconds since the epoch."""
    return int(stamp.sec) + int(stamp.nanosec) * 1e-9


def time_msg(seconds_since_epoch: float) -> Time:
    """Seconds since the epoch as a builtin_interfaces Time (rounded to the nanosecond)."""
    sec = math.floor(seconds_since_epoch)
    nanosec = round((seconds_since_epoch - sec) * 1e9)
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return Time(sec=int(sec), nanosec=int(nanosec))


# ----- scene objects -------------------------------------------------------------------------------
def scene_object_from_msg(msg: SceneObjectMsg) -> SceneObject:
    """A SceneObject message as the domain object (colour and heavy are not in the message)."""
    return SceneObject(
        name=str(msg.name), category=str(msg.category), position=position_of(msg.pose), size=vec3(msg.size),
        visible=bool(msg.visible), confidence=float(msg.confidence), segmentation_id=int(msg.segmentation_id),
        place_point=vec3(msg.place_point) if msg.has_place_point else None,
        orientation=quaternion(msg.pose.pose.orientation),
    )


def scene_object_to_msg(obj: SceneObject, header: Header | None = None) -> SceneObjectMsg:
    """The domain object as a SceneObject message, its pose in `header` (frame and stamp)."""
    msg = SceneObjectMsg(
        name=obj.name, category=obj.category, pose=pose_stamped_msg(obj.position, obj.orientation, header),
        size=vector3_msg(obj.size), visible=bool(obj.visible), confidence=float(obj.confidence),
        segmentation_id=int(obj.segmentation_id),
    )
    if obj.place_point is not None:
        msg.has_place_point = True
        msg.place_point = point_msg(obj.place_point)
    return msg


def scene_objects_from_msg(msgs: Iterable[SceneObjectMsg]) -> list[SceneObject]:
    return [scene_object_from_msg(m) for m in msgs]


# ----- scene descriptions --------------------------------------------------------------------------
def scene_from_msg(msg: SceneDescriptionMsg) -> Scene:
    """A SceneDescription message as the domain scene."""
    return Scene(
        frame=str(msg.header.frame_id), stamp_s=seconds(msg.header.stamp), source=str(msg.source),
        objects=tuple(scene_object_from_msg(o) for o in msg.objects), held_objects=tuple(msg.held_objects),
    )


def scene_to_msg(scene: Scene, stamp: Time | None = None) -> SceneDescriptionMsg:
    """The domain scene as a SceneDescription message; `stamp` (e.g. the clock's now or the camera
    image's stamp) wins over `scene.stamp_s`, which a float carries to about a microsecond only."""
    header = Header(frame_id=scene.frame, stamp=stamp if stamp is not None else time_msg(scene.stamp_s))
    return SceneDescriptionMsg(
        header=header, source=scene.source, objects=[scene_object_to_msg(o, header) for o in scene.objects],
        held_objects=list(scene.held_objects),
    )


__all__ = [
    "point_msg", "pose_stamped_msg", "position_of", "quaternion", "quaternion_msg", "scene_from_msg",
    "scene_object_from_msg", "scene_object_to_msg", "scene_objects_from_msg", "scene_to_msg", "seconds",
    "time_msg", "vec3", "vector3_msg",
]
