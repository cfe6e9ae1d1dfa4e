"""rclpy side of bags: message classes by type name, share directories, QoS conversion."""
from __future__ import annotations

import array
import importlib
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from monologue_common.core.msgdefs import DefinitionError, split_type

from .core.bagio import QosSpec

_ACTION_PARTS = {
    "_SendGoal_Request": ("SendGoalService", "Request"), "_SendGoal_Response": ("SendGoalService", "Response"),
    "_SendGoal_Event": ("SendGoalService", "Event"), "_GetResult_Request": ("GetResultService", "Request"),
    "_GetResult_Response": ("GetResultService", "Response"), "_GetResult_Event": ("GetResultService", "Event"),
    "_FeedbackMessage": ("FeedbackMessage", ""), "_Goal": ("Goal", ""), "_Result": ("Result", ""),
    "_Feedback": ("Feedback", ""),
}


def message_class(type_name: str) -> Any:
    """The generated Python class of `pkg/msg/Name`, or of a type derived from a service or action."""
    pkg, kind, name = split_type(type_name)
    try:
        module = importlib.import_module(f"{pkg}.{kind}")
        if kind == "msg":
            return getattr(module, name)
        if kind == "srv":
            for suffix in ("_Request", "_Response", "_Event"):
                if name.endswith(suffix):
                    return getattr(getattr(module, name[: -len(suffix)]), suffix[1:])
        else:
            for suffix, (impl, sub) in _ACTION_PARTS.items():
                if name.endswith(suffix):
                    base = getattr(module, name[: -len(suffix)])
                    cls = getattr(base, impl) if impl in ("Goal", "Result", "Feedback") else getattr(base.Impl, impl)
                    return getattr(cls, sub) if sub else cls
    except (ImportError, AttributeError) as e:
        raise DefinitionError(f"no Python message class for {type_name}: {e}") from e
    raise DefinitionError(f"{type_name} is not a message type")


def share_dir(package: str) -> Path:
    """Installed share directory of `package`; KeyError if it is not installed."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        return Path(get_package_share_directory(package))
    except PackageNotFoundError as e:
        raise KeyError(package) from e


def qos_profile(spec: QosSpec) -> QoSProfile:
    return QoSProfile(
        depth=max(1, spec.depth),
        history=HistoryPolicy.KEEP_LAST,
        reliability=ReliabilityPolicy.RELIABLE if spec.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if spec.transient_local else DurabilityPolicy.VOLATILE,
    )


def offered_qos(profiles: list[QoSProfile], depth: int) -> QosSpec:
    """What publishers offer, the way `ros2 bag record` adapts: reliable / transient local only if all are."""
    if not profiles:
        return QosSpec(depth=depth)
    return QosSpec(
        reliable=all(p.reliability == ReliabilityPolicy.RELIABLE for p in profiles),
        transient_local=all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in profiles),
        depth=depth,
    )


def to_message(src: Any, cls: Any) -> Any:
    """Copy a decoded message (a rosbags dataclass, possibly of an older definition) into the current
    generated class `cls`, field by field: fields the old definition lacks keep their defaults,
    fields the current one dropped are ignored. Raises DefinitionError if a field cannot be copied."""
    out = cls()
    for name, kind in cls.get_fields_and_field_types().items():
        if not hasattr(src, name):
            continue
        value = getattr(src, name)
        current = getattr(out, name)
        try:
            if "/" in kind and kind.startswith("sequence<"):
                item = message_class(_full_type(kind[len("sequence<"):].split(",")[0].rstrip(">")))
                setattr(out, name, [to_message(v, item) for v in value])
            elif "/" in kind and "[" in kind:  # fixed-size array of messages
                setattr(out, name, [to_message(v, type(c)) for v, c in zip(value, current, strict=True)])
            elif "/" in kind:
                setattr(out, name, to_message(value, type(current)))
            elif isinstance(value, np.ndarray):
                if isinstance(current, array.array):
                    setattr(out, name, array.array(current.typecode, value.astype(current.typecode).tobytes()))
                elif isinstance(current, np.ndarray):
                    setattr(out, name, value.astype(current.dtype))
                elif kind in ("sequence<uint8>", "sequence<octet>") or kind.startswith("uint8["):
                    setattr(out, name, value.tobytes())
                else:
                    setattr(out, name, value.tolist())
            else:
                setattr(out, name, value)
        except (TypeError, ValueError, AssertionError, DefinitionError) as e:
            raise DefinitionError(f"{cls.__name__}.{name} ({kind}): cannot copy the recorded value: {e}") from e
    return out


def _full_type(name: str) -> str:
    """"pkg/Name" (as get_fields_and_field_types spells nested messages) -> "pkg/msg/Name"."""
    pkg, _, rest = name.partition("/")
    return name if "/" in rest else f"{pkg}/msg/{rest}"
