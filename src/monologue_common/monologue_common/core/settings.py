"""One parameter style for every node: read a flat parameter mapping into a frozen settings
dataclass, collecting every problem and raising them together (no rclpy here).

Defaults live only in the YAML files (config/monologue.yaml, config/robots/*.yaml, config/llm/*.yaml):
nodes declare their parameters from those overrides (monologue_common.params), so a parameter that
no file sets is reported as missing, never silently defaulted in code.

    r = ParamReader(params, "skills")
    rate = r.number("status_rate", low=0.0, low_open=True)   # Hz
    host = r.string("ur5e.host")
    r.finish()   # ValueError listing every missing, mistyped or out-of-range parameter
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

_MISSING = object()


class ParamReader:
    """Typed, range-checked access to `params` (dotted names, as rclpy gives them)."""

    def __init__(self, params: Mapping[str, object], node: str) -> None:
        self.params = dict(params)
        self.node = node
        self.errors: list[str] = []
        self.read: set[str] = set()

    # -- access -------------------------------------------------------------------------------
    def _get(self, name: str) -> object:
        self.read.add(name)
        value = self.params.get(name, _MISSING)
        if value is _MISSING:
            self.errors.append(f"{name}: missing (set it in config/*.yaml or with -p {name}:=...)")
        return value

    def has(self, name: str) -> bool:
        return name in self.params

    def number(self, name: str, low: float = -math.inf, high: float = math.inf, low_open: bool = False,
               high_open: bool = False) -> float:
        """A finite float (an integer is accepted) in [low, high] (or open at either end)."""
        v = self._get(name)
        if v is _MISSING:
            return low if math.isfinite(low) else 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.errors.append(f"{name}: must be a number, got {v!r}")
            return low if math.isfinite(low) else 0.0
        f = float(v)
        if (not math.isfinite(f) or f < low or f > high or (low_open and f == low)
                or (high_open and f == high)):
            lo, hi = "(" if low_open else "[", ")" if high_open else "]"
            self.errors.append(f"{name}: must be in {lo}{low:g}, {high:g}{hi}, got {f:g}")
        return f

    def integer(self, name: str, low: int | None = None, high: int | None = None) -> int:
        v = self._get(name)
        if v is _MISSING:
            return low if low is not None else 0
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                self.errors.append(f"{name}: must be an integer, got {v!r}")
                return low if low is not None else 0
        if (low is not None and v < low) or (high is not None and v > high):
            self.errors.append(f"{name}: must be in [{low if low is not None else '-inf'}, "
                               f"{high if high is not None else 'inf'}], got {v}")
        return int(v)

    def boolean(self, name: str) -> bool:
        v = self._get(name)
        if v is _MISSING:
            return False
        if not isinstance(v, bool):
            self.errors.append(f"{name}: must be true or false, got {v!r}")
            return False
        return v

    def string(self, name: str, choices: Sequence[str] | None = None, nonempty: bool = False) -> str:
        v = self._get(name)
        if v is _MISSING:
            return choices[0] if choices else ""
        if not isinstance(v, str):
            self.errors.append(f"{name}: must be a string, got {v!r}")
            return choices[0] if choices else ""
        if choices is not None and v not in choices:
            self.errors.append(f"{name}: must be one of {list(choices)}, got {v!r}")
        if nonempty and not v.strip():
            self.errors.append(f"{name}: must not be empty")
        return v

    def strings(self, name: str) -> tuple[str, ...]:
        """A list of strings; empty entries are dropped (ROS cannot type `[]`, so YAML says `[""]`)."""
        v = self._get(name)
        if v is _MISSING:
            return ()
        if not isinstance(v, (list, tuple)) or not all(isinstance(s, str) for s in v):
            self.errors.append(f"{name}: must be a list of strings, got {v!r}")
            return ()
        return tuple(s.strip() for s in v if s.strip())

    def numbers(self, name: str, length: int | None = None, allow: Iterable[int] = ()) -> tuple[float, ...]:
        """A list of finite numbers, of `length` entries (or one of the lengths in `allow`)."""
        v = self._get(name)
        if v is _MISSING:
            return ()
        if (not isinstance(v, (list, tuple)) or
                not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
            self.errors.append(f"{name}: must be a list of numbers, got {v!r}")
            return ()
        out = tuple(float(x) for x in v)
        lengths = {length} if length is not None else set()
        lengths |= set(allow)
        if lengths and len(out) not in lengths:
            self.errors.append(f"{name}: must have {' or '.join(str(n) for n in sorted(lengths))} entries, "
                               f"got {len(out)}")
        if not all(math.isfinite(x) for x in out):
            self.errors.append(f"{name}: entries must be finite, got {list(out)}")
        return out

    def section(self, prefix: str) -> dict[str, object]:
        """Every parameter under `prefix.` (prefix stripped), marked as read (e.g. a plug-in's block)."""
        p = prefix.rstrip(".") + "."
        out = {k[len(p):]: v for k, v in self.params.items() if k.startswith(p)}
        self.read.update(p + k for k in out)
        return out

    def check(self, ok: bool, message: str) -> None:
        """Record `message` as an error unless `ok` (cross-parameter rules)."""
        if not ok:
            self.errors.append(message)

    # -- end ----------------------------------------------------------------------------------
    def unused(self, ignore: Sequence[str] = ("use_sim_time", "start_type_description_service")) -> list[str]:
        """Parameters that were set but never read (typos, or another robot's block)."""
        return sorted(k for k in self.params
                      if k not in self.read and not any(k == i or k.startswith(i + ".") for i in ignore))

    def finish(self) -> None:
        """Raise ValueError listing every problem found so far."""
        if self.errors:
            raise ValueError(f"invalid {self.node} parameters:\n  " + "\n  ".join(self.errors))


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    """A nested `ros__parameters` mapping as rclpy sees it: {dotted name: value}."""
    out: dict[str, object] = {}
    for k, v in tree.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def parameters_from_files(files: Iterable[Path], node: str) -> dict[str, object]:
    """The parameters `node` gets from these ROS parameter files, in override order (each file's `/**`
    section, then its `node` section), as {dotted name: value}. For callers without a node (tests,
    benchmarks), so that they use the YAML's values rather than defaults of their own."""
    import yaml

    out: dict[str, object] = {}
    for f in files:
        try:
            doc = yaml.safe_load(Path(f).read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise ValueError(f"{f}: not a valid YAML file: {e}") from e
        for section in ("/**", node):
            out.update(flatten((doc.get(section) or {}).get("ros__parameters") or {}))
    return out
