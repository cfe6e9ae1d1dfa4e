"""rclpy side of bags: message classes by type name, share directories, QoS conversion."""
from __future__ import annotations

import array
import copy
import functools
import importlib
from dataclasses import dataclass
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


_MSG, _MSG_SEQUENCE, _MSG_ARRAY, _VALUE = range(4)  # how a field is copied


@dataclass(frozen=True)
class _Field:
    """How to_message copies one field of a generated class (worked out once per class)."""

    name: str
    kind: str  # the rosidl type, e.g. "sequence<monologue_interfaces/SceneObject>"
    how: int
    item: Any  # the class of a nested message, or of a sequence's or array's items
    default: Any  # the field's default in a new instance (never handed out: defaults are made fresh)
    length: int = 0  # items of a fixed-size array of messages

    def fresh_default(self) -> Any:
        if self.how == _MSG:
            return self.item()
        if self.how == _MSG_ARRAY:
            return [self.item() for _ in range(self.length)]
        if isinstance(self.default, (list, array.array, np.ndarray)):
            return copy.copy(self.default)
        return self.default  # immutable: a number, bool, str or bytes


@functools.cache
def _fields(cls: Any) -> tuple[tuple[_Field, ...], bool]:
    """The copy plan of `cls`'s fields, and the field check flag its instances get by default."""
    proto = cls()
    fields = []
    for name, kind in cls.get_fields_and_field_types().items():
        current = getattr(proto, name)
        if "/" in kind and kind.startswith("sequence<"):
            item = message_class(_full_type(kind[len("sequence<"):].split(",")[0].rstrip(">")))
            fields.append(_Field(name, kind, _MSG_SEQUENCE, item, current))
        elif "/" in kind and "[" in kind:  # fixed-size array of messages
            fields.append(_Field(name, kind, _MSG_ARRAY, type(current[0]), current, len(current)))
        elif "/" in kind:
            fields.append(_Field(name, kind, _MSG, type(current), current))
        else:
            fields.append(_Field(name, kind, _VALUE, None, current))
    return tuple(fields), bool(getattr(proto, "_check_fields", False))


def to_message(src: Any, cls: Any) -> Any:
    """Copy a decoded message (a rosbags dataclass, possibly of an older definition) into the current
    generated class `cls`, field by field: fields the old definition lacks keep their defaults,
    fields the current one dropped are ignored. Raises DefinitionError if a field cannot be copied.

    The instance is made without its constructor, which builds a default of every nested message only
    to have it replaced (most of the time of converting an old bag's messages); every field is then
    set through its property, as the constructor would."""
    fields, check = _fields(cls)
    out = cls.__new__(cls)
    if "_check_fields" in cls.__slots__:
        out._check_fields = check
    for f in fields:
        if not hasattr(src, f.name):
            setattr(out, f.name, f.fresh_default())
            continue
        value = getattr(src, f.name)
        try:
            if f.how == _MSG_SEQUENCE:
                setattr(out, f.name, [to_message(v, f.item) for v in value])
            elif f.how == _MSG_ARRAY:
                if len(value) != f.length:
                    raise ValueError(f"{len(value)} items, not {f.length}")
                setattr(out, f.name, [to_message(v, f.item) for v in value])
            elif f.how == _MSG:
                setattr(out, f.name, to_message(value, f.item))
            elif isinstance(value, np.ndarray):
                current = f.default
                if isinstance(current, array.array):
                    setattr(out, f.name, array.array(current.typecode, value.astype(current.typecode).tobytes()))
                elif isinstance(current, np.ndarray):
                    setattr(out, f.name, value.astype(current.dtype))
                elif f.kind in ("sequence<uint8>", "sequence<octet>") or f.kind.startswith("uint8["):
                    setattr(out, f.name, value.tobytes())
                else:
                    setattr(out, f.name, value.tolist())
            else:
                setattr(out, f.name, value)
        except (TypeError, ValueError, AssertionError, DefinitionError) as e:
            raise DefinitionError(f"{cls.__name__}.{f.name} ({f.kind}): cannot copy the recorded value: {e}") from e
    return out


def _full_type(name: str) -> str:
    """"pkg/Name" (as get_fields_and_field_types spells nested messages) -> "pkg/msg/Name"."""
    pkg, _, rest = name.partition("/")
    return name if "/" in rest else f"{pkg}/msg/{rest}"
