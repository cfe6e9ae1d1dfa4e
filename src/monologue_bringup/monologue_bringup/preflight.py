"""The preflight checks of `monologue-check` (no rclpy, no SDK): what must hold before a real robot moves.

Each check reads the hardware through a small Protocol (UrArm, Camera, SpotRobot, LlmBackend; the adapters that
talk to ur_rtde's dashboard server, pyrealsense2, bosdyn-client and the LLM live in check.py) and the robot's
parameters (the skills / camera / perception blocks of its YAML files), and returns Findings: one line each, and
for a failure one line saying how to fix it. Units: m, rad, kg, %.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

UR5E_REACH_M = 0.85  # m, from the base axis to the flange (UR5e datasheet)
UR5E_JOINT_LIMIT_RAD = (2 * math.pi, 2 * math.pi, math.pi, 2 * math.pi, 2 * math.pi, 2 * math.pi)  # +- rad
TCP_TOLERANCE_M, TCP_TOLERANCE_RAD = 0.001, 0.01  # m, rad: the pendant's TCP against ur5e.tcp_offset
PAYLOAD_TOLERANCE_KG, COG_TOLERANCE_M = 0.05, 0.01  # kg, m
MIN_BATTERY_PERCENT = 20.0  # %: below, a kitchen episode may not finish
MAX_CALIBRATION_AGE_DAYS = 30.0  # days


@dataclass(frozen=True)
class Finding:
    """The outcome of one check: ok, or a failure (or a warning) with its fix in one line."""

    check: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False  # a failed warning does not fail the preflight

    @property
    def fails(self) -> bool:
        return not self.ok and not self.warning

    def line(self) -> str:
        tag = "ok  " if self.ok else ("WARN" if self.warning else "FAIL")
        return f"[{tag}] {self.check}: {self.detail}" + (f" -> {self.fix}" if not self.ok and self.fix else "")


def passed(findings: Iterable[Finding]) -> bool:
    return not any(f.fails for f in findings)


def _ok(check: str, detail: str) -> Finding:
    return Finding(check, True, detail)


def _fail(check: str, detail: str, fix: str, warning: bool = False) -> Finding:
    return Finding(check, False, detail, fix, warning)


def _guard(check: str, fix: str, probe: Callable[[], list[Finding]]) -> list[Finding]:
    """Run `probe`; an exception (no connection, a timeout) is the check's failure."""
    try:
        return probe()
    except Exception as e:  # noqa: BLE001 - whatever the SDK raises, the user gets one line
        return [_fail(check, f"{type(e).__name__}: {e}", fix)]


# ---- parameters -----------------------------------------------------------------------------------------


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"ur5e": {"host": h}} -> {"ur5e.host": h} (ROS 2 parameter names)."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def node_parameters(files: Sequence[Path], node: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`node`'s parameters from YAML parameter files (later files win) and then `overrides`."""
    import yaml

    params: dict[str, Any] = {}
    for f in files:
        data = yaml.safe_load(Path(f).read_text()) or {}
        for section in ("/**", node):  # every node's block, then this node's
            params.update(flatten((data.get(section) or {}).get("ros__parameters") or {}))
    for k, v in (overrides or {}).items():
        params[k] = yaml.safe_load(v) if isinstance(v, str) else v
    return params


def _vec(params: Mapping[str, Any], key: str, n: int) -> list[float]:
    v = params.get(key)
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise ValueError(f"{key} must be a list of {n} numbers, got {v!r}")
    return [float(x) for x in v]


# ---- UR5e ------------------------------------------------------------------------------------------------


class UrArm(Protocol):
    """The UR5e controller as the preflight reads it (the dashboard server and RTDE)."""

    def connect(self) -> None: ...  # raises OSError / TimeoutError when the controller does not answer
    def remote_control(self) -> bool: ...  # the pendant is in Remote Control mode
    def robot_mode(self) -> str: ...  # dashboard `robotmode`: RUNNING, IDLE, POWER_OFF, ...
    def safety_status(self) -> str: ...  # dashboard `safetystatus`: NORMAL, PROTECTIVE_STOP, ...
    def tcp_offset(self) -> Sequence[float] | None: ...  # m, rad: the controller's TCP (None: cannot be read)
    def payload(self) -> tuple[float, Sequence[float]] | None: ...  # kg, m (None: cannot be read)
    def joints(self) -> Sequence[float]: ...  # rad


def check_ur5e_config(skills: Mapping[str, Any]) -> list[Finding]:
    """What the UR5e's parameters alone decide: the workspace box inside the reach, the joint limits inside
    the UR5e's, home inside them."""
    out: list[Finding] = []
    lo, hi = _vec(skills, "safety.workspace_min", 3), _vec(skills, "safety.workspace_max", 3)
    corners = [(x, y) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])]
    far = max(math.hypot(x, y) for x, y in corners)
    if any(a >= b for a, b in zip(lo, hi, strict=True)):
        out.append(_fail("workspace", f"safety.workspace_min {lo} is not below workspace_max {hi}",
                         "fix safety.workspace_min / workspace_max in config/robots/ur5e.yaml"))
    elif far > UR5E_REACH_M:
        out.append(_fail("workspace", f"the workspace box reaches {far:.3f} m from the base axis (> {UR5E_REACH_M} m,"
                         " the UR5e's reach)",
                         "shrink safety.workspace_min / workspace_max in config/robots/ur5e.yaml to within 0.85 m"))
    else:
        out.append(_ok("workspace", f"box {lo} .. {hi} m, farthest corner {far:.3f} m from the base axis"))
    jmin, jmax = _vec(skills, "safety.joint_min", 6), _vec(skills, "safety.joint_max", 6)
    bad = [i for i in range(6) if jmin[i] < -UR5E_JOINT_LIMIT_RAD[i] - 1e-3 or jmax[i] > UR5E_JOINT_LIMIT_RAD[i] + 1e-3
           or jmin[i] >= jmax[i]]
    if bad:
        out.append(_fail("joint limits", f"joints {bad} outside the UR5e's (+-2 pi, elbow +-pi) or empty",
                         "fix safety.joint_min / joint_max in config/robots/ur5e.yaml"))
    else:
        home = _vec(skills, "ur5e.home_joints", 6)
        outside = [i for i in range(6) if not jmin[i] <= home[i] <= jmax[i]]
        out.append(_fail("joint limits", f"ur5e.home_joints outside safety limits at joints {outside}",
                         "fix ur5e.home_joints or safety.joint_min / joint_max") if outside
                   else _ok("joint limits", "inside the UR5e's, home inside them"))
    return out


def check_ur5e(arm: UrArm, skills: Mapping[str, Any]) -> list[Finding]:
    """Connectivity, Remote Control, robot and safety mode, TCP and payload against the config, the joints
    inside the limits (then the configuration checks)."""
    host = skills.get("ur5e.host", "?")
    out: list[Finding] = []
    try:
        arm.connect()
    except Exception as e:  # noqa: BLE001
        return [_fail("ur5e connection", f"no answer from {host}: {e}",
                      f"power the controller on, check the cable and that this machine reaches {host} "
                      "(ping it; ur5e.host in config/robots/ur5e.yaml)")] + check_ur5e_config(skills)
    out.append(_ok("ur5e connection", f"dashboard server and RTDE of {host} answer"))

    def modes() -> list[Finding]:
        found = []
        found.append(_ok("remote control", "the pendant is in Remote Control") if arm.remote_control() else
                     _fail("remote control", "the pendant is in Local mode: the controller refuses remote programs",
                           "on the teach pendant, tap the Local/Remote icon (top right) and choose Remote Control"))
        safety = arm.safety_status().upper()
        if "EMERGENCY" in safety:
            found.append(_fail("safety", f"safety status {safety}",
                               "release the emergency stop button (twist it), then reset it on the pendant"))
        elif "PROTECTIVE" in safety or "SAFEGUARD" in safety or "VIOLATION" in safety or "FAULT" in safety:
            found.append(_fail("safety", f"safety status {safety}",
                               "clear the cause, then press 'Unlock protective stop' on the pendant"))
        else:
            found.append(_ok("safety", f"safety status {safety}"))
        mode = arm.robot_mode().upper()
        found.append(_ok("robot mode", mode) if "RUNNING" in mode else
                     _fail("robot mode", f"robot mode {mode} (not RUNNING)",
                           "on the pendant: ON, then START to power the arm and release the brakes"))
        return found

    out += _guard("ur5e modes", "check the dashboard server (port 29999) is reachable", modes)

    def tcp_payload() -> list[Finding]:
        found = []
        want = _vec(skills, "ur5e.tcp_offset", 6)
        tcp = arm.tcp_offset()
        if tcp is None:
            found.append(_fail("tcp", "the controller's TCP cannot be read", "check ur5e.tcp_offset on the pendant",
                               warning=True))
        elif (max(abs(a - b) for a, b in zip(tcp[:3], want[:3], strict=True)) > TCP_TOLERANCE_M
              or max(abs(a - b) for a, b in zip(tcp[3:], want[3:], strict=True)) > TCP_TOLERANCE_RAD):
            found.append(_fail("tcp", f"controller TCP {[round(v, 4) for v in tcp]} != ur5e.tcp_offset {want}",
                               "set the TCP in the pendant's Installation > TCP to ur5e.tcp_offset, or fix "
                               "ur5e.tcp_offset to the tool you mounted"))
        else:
            found.append(_ok("tcp", f"{want} (m, rad)"))
        mass, cog = float(skills.get("ur5e.payload_mass", 0.0)), _vec(skills, "ur5e.payload_cog", 3)
        got = arm.payload()
        if got is None:
            found.append(_fail("payload", "the controller's payload cannot be read",
                               "check the payload on the pendant", warning=True))
        elif (abs(got[0] - mass) > PAYLOAD_TOLERANCE_KG
              or max(abs(a - b) for a, b in zip(got[1], cog, strict=True)) > COG_TOLERANCE_M):
            found.append(_fail("payload", f"controller payload {got[0]:.2f} kg at {list(got[1])} != config "
                               f"{mass:.2f} kg at {cog}",
                               "set the payload in the pendant's Installation > Payload, or fix ur5e.payload_mass"
                               " / payload_cog"))
        else:
            found.append(_ok("payload", f"{mass:.2f} kg at {cog} m"))
        q = list(arm.joints())
        jmin, jmax = _vec(skills, "safety.joint_min", 6), _vec(skills, "safety.joint_max", 6)
        outside = [i for i in range(6) if not jmin[i] <= q[i] <= jmax[i]]
        found.append(_fail("joints", f"joints {outside} outside safety.joint_min / joint_max: {q}",
                           "move the arm into its limits with the pendant (freedrive)") if outside
                     else _ok("joints", "inside safety.joint_min / joint_max"))
        return found

    out += _guard("ur5e state", "check RTDE (port 30004) is reachable", tcp_payload)
    return out + check_ur5e_config(skills)


# ---- camera ----------------------------------------------------------------------------------------------


class Camera(Protocol):
    """The RealSense as the preflight reads it."""

    def start(self, width: int, height: int, fps: int) -> None: ...  # raises when no device streams
    def frames(self, n: int, timeout_s: float) -> int: ...  # frame sets received within timeout_s
    def intrinsics(self) -> tuple[float, float, float, float]: ...  # fx, fy, ppx, ppy (px)
    def depth_scale(self) -> float: ...  # m per unit
    def stop(self) -> None: ...


def check_camera(camera: Camera, params: Mapping[str, Any], timeout_s: float = 5.0) -> list[Finding]:
    """Streaming at the configured mode, plausible intrinsics, the depth scale."""
    w, h, fps = int(params.get("width", 640)), int(params.get("height", 480)), int(params.get("fps", 15))
    try:
        camera.start(w, h, fps)
    except Exception as e:  # noqa: BLE001
        return [_fail("camera", f"no RealSense streams {w}x{h} at {fps} Hz: {e}",
                      "plug the camera into a USB 3 port (rs-enumerate-devices lists it), or fix camera.serial / "
                      "width / height / fps")]
    try:
        out: list[Finding] = []
        got = camera.frames(3, timeout_s)
        out.append(_ok("camera streaming", f"{got} frame sets at {w}x{h}") if got >= 3 else
                   _fail("camera streaming", f"{got} of 3 frame sets within {timeout_s:.0f} s",
                         "use a USB 3 port and cable (rs-enumerate-devices), or lower camera.fps"))
        fx, fy, ppx, ppy = camera.intrinsics()
        sane = fx > 0 and fy > 0 and 0 < ppx < w and 0 < ppy < h and 0.5 < fx / fy < 2.0
        out.append(_ok("camera intrinsics", f"fx {fx:.1f} fy {fy:.1f} px, centre ({ppx:.1f}, {ppy:.1f})") if sane else
                   _fail("camera intrinsics", f"implausible fx {fx} fy {fy} ppx {ppx} ppy {ppy}",
                         "recalibrate the camera (rs-on-chip-calib) or update its firmware"))
        scale = camera.depth_scale()
        out.append(_ok("depth scale", f"{scale:g} m per unit") if 1e-5 <= scale <= 1e-2 else
                   _fail("depth scale", f"depth scale {scale:g} m per unit is implausible",
                         "reset the camera's depth units (realsense-viewer > Advanced) to 0.001"))
        return out
    finally:
        camera.stop()


# ---- TF tree and calibration -------------------------------------------------------------------------------


def check_tf(edges: Iterable[tuple[str, str]], base_frame: str, camera_frame: str) -> list[Finding]:
    """The TF tree the graph will publish (parent, child edges) connects perception's `base_frame` to the
    camera's optical frame."""
    children: dict[str, set[str]] = {}
    for parent, child in edges:
        children.setdefault(parent, set()).add(child)
    seen, todo = {base_frame}, [base_frame]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    if camera_frame in seen:
        return [_ok("tf tree", f"{base_frame} -> ... -> {camera_frame}")]
    return [_fail("tf tree", f"no chain {base_frame} -> {camera_frame} (reached {sorted(seen)})",
                  "make the camera node's frame_id match the hand-eye child frame (camera.frame_id, "
                  "ur5e.hand_eye.child_frame / spot.camera_mount.frame)")]


def check_calibration(path: Path, max_age_days: float = MAX_CALIBRATION_AGE_DAYS) -> list[Finding]:
    """The hand-eye calibration file present and recent (monologue_vision's calibration_status); a warning."""
    from monologue_vision.calibration.store import calibration_status

    ok, line = calibration_status(path, max_age_days)
    fix = "" if ok or "monologue-calibrate" in line else "run monologue-calibrate (docs/ur5e.md, first day)"
    return [Finding("calibration", ok, line, fix, warning=True)]


# ---- LLM ---------------------------------------------------------------------------------------------------


class LlmBackend(Protocol):
    """The planner's LLM as the preflight reads it."""

    name: str

    def score(self, prompt: str, options: Sequence[str]) -> Sequence[float]: ...  # raises when unreachable
    def supports_scoring(self) -> bool: ...


def check_llm(llm: LlmBackend) -> list[Finding]:
    """Reachable, and scoring (SayCan / Inner Monologue rank skills by their likelihood) supported."""
    if not llm.supports_scoring():
        return [_fail("llm", f"{llm.name} cannot score options (no log-probabilities)",
                      "use llm:=embedded, or an OpenAI-compatible server that returns logprobs")]
    try:
        scores = list(llm.score("Robot: I will", [" pick up the block.", " done."]))
    except Exception as e:  # noqa: BLE001
        return [_fail("llm", f"{llm.name} unreachable: {e}",
                      "start the LLM server or fix llm.* in config/llm/<llm>.yaml (API key in the environment)")]
    if len(scores) != 2 or not all(math.isfinite(s) for s in scores):
        return [_fail("llm", f"{llm.name} scored {scores}", "check the model file / server")]
    return [_ok("llm", f"{llm.name} reachable, scores options")]


# ---- Spot --------------------------------------------------------------------------------------------------


class SpotRobot(Protocol):
    """Spot as the preflight reads it (bosdyn-client)."""

    def connect(self) -> None: ...  # authenticate, time sync; raises when unreachable
    def body_lease_owner(self) -> str: ...  # "" when nobody holds the body lease
    def estop_endpoints(self) -> list[tuple[str, bool]]: ...  # (name, stopped?) of each registered endpoint
    def battery_percent(self) -> float | None: ...  # None: the robot reports no battery
    def waypoints(self) -> set[str]: ...  # GraphNav waypoint ids of the map on the robot (empty: none)


def check_spot(spot: SpotRobot, skills: Mapping[str, Any]) -> list[Finding]:
    """Reachable; the body lease free (or take_lease); the e-stop endpoints released; battery; the GraphNav map
    holds the configured waypoints."""
    host = skills.get("spot.hostname", "?")
    try:
        spot.connect()
    except Exception as e:  # noqa: BLE001
        return [_fail("spot connection", f"{host}: {e}",
                      "join Spot's network, check spot.hostname and BOSDYN_CLIENT_USERNAME / _PASSWORD")]
    out = [_ok("spot connection", f"{host} answers, time synced")]

    def state() -> list[Finding]:
        found = []
        owner = spot.body_lease_owner()
        client = str(skills.get("spot.client_name", "monologue"))
        if owner and not owner.startswith(client) and not skills.get("spot.take_lease", False):
            found.append(_fail("lease", f"the body lease is held by {owner!r}",
                               "release control on the tablet, or set spot.take_lease: true"))
        else:
            found.append(_ok("lease", f"body lease {'held by ' + owner if owner else 'free'}"))
        stopped = [n for n, s in spot.estop_endpoints() if s]
        found.append(_fail("estop", f"e-stop endpoints asserting stop: {stopped}",
                           "release the e-stop on the tablet / the e-stop client named above") if stopped
                     else _ok("estop", "no endpoint asserts stop"))
        battery = spot.battery_percent()
        if battery is None:
            found.append(_fail("battery", "the robot reports no battery state", "check the battery on the tablet",
                               warning=True))
        else:
            found.append(_ok("battery", f"{battery:.0f} %") if battery >= MIN_BATTERY_PERCENT else
                         _fail("battery", f"{battery:.0f} % (< {MIN_BATTERY_PERCENT:.0f} %)",
                               "charge or swap the battery"))
        return found

    def graphnav() -> list[Finding]:
        wanted = {str(w).split("=", 1)[1] for w in skills.get("spot.waypoints", []) or [] if "=" in str(w)}
        if not wanted:
            return []
        missing = sorted(wanted - spot.waypoints())
        return [_fail("graphnav", f"waypoints {missing} are not in the robot's map",
                      "upload the map (docs/spot.md, GraphNav map) or fix spot.waypoints") if missing
                else _ok("graphnav", f"{len(wanted)} waypoints in the map")]

    return (out + _guard("spot state", "check Spot's network", state)
            + _guard("graphnav", "upload the map (docs/spot.md, GraphNav map) or set spot.waypoints to [\"\"]",
                     graphnav))
