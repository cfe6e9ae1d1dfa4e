"""One plug-in registry for every kind of plug-in: strategies, robots, detectors, judges, LLM backends,
evaluation suites (no rclpy).

A plug-in is found by name, in this order:
1. registered in this process (`registry.add(name, item)` or the `@registry.register(name)` decorator,
   which the built-in plug-ins call when their module is imported);
2. a built-in: every module or sub-package of the registry's `package` is imported once, the first
   time a name is looked up, so each can register itself (adding a built-in is adding a folder);
3. an entry point in the group `monologue.<kind>` of an installed distribution
   (`entry_points={"monologue.strategies": ["mine = my_pkg.my_strategy"]}`): the module it names is
   imported, and its `attribute` (e.g. `PLUGIN`) is the plug-in unless importing it registered `name`;
4. a dotted module path (`my_pkg.my_strategy`), importable from `PYTHONPATH`, handled like an entry point.

An unknown name is a `UnknownPluginError` (a ValueError) that lists every known name. `listing()`
gives the text of a CLI's `--list`.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
F = TypeVar("F")

ENTRY_POINT_PREFIX = "monologue."


class UnknownPluginError(ValueError):
    """No plug-in of this kind has this name (the message lists the known ones)."""


class Registry(Generic[T]):
    """Plug-ins of one kind, by name (see the module docstring)."""

    def __init__(self, kind: str, *, package: str | None = None, attribute: str | None = None,
                 describe: Callable[[T], str] | None = None) -> None:
        """`kind`: plural noun for messages and the entry point group (`monologue.<kind>`).
        `package`: the package whose modules are the built-ins (imported lazily, in name order).
        `attribute`: the module attribute that holds the plug-in, for modules that do not register
        themselves. `describe`: one line about a plug-in, for `listing()`."""
        if not kind or kind != kind.strip():
            raise ValueError(f"invalid registry kind {kind!r}")
        self.kind = kind
        self.package = package
        self.attribute = attribute
        self._describe = describe
        self._items: dict[str, T] = {}
        self._lock = threading.RLock()
        self._discovered = False

    # --------------------------------------------------------------- registration --
    def add(self, name: str, item: T, *, replace: bool = False) -> T:
        """Register `item` as `name`; a different item under a taken name is an error unless `replace`."""
        if not name or name != name.strip() or any(c.isspace() for c in name):
            raise ValueError(f"invalid {self.kind} name {name!r}")
        with self._lock:
            old = self._items.get(name)
            if old is not None and old is not item and not replace:
                raise ValueError(f"{self.kind}: {name!r} is already registered")
            self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator form of `add` (the decorated object is the plug-in)."""

        def deco(item: F) -> F:
            self.add(name, item)  # type: ignore[arg-type]
            return item

        return deco

    def unregister(self, name: str) -> None:
        """Remove `name` (a test that registered a plug-in of its own)."""
        with self._lock:
            self._items.pop(name, None)

    # ------------------------------------------------------------------- look-up --
    def get(self, name: str) -> T:
        """The plug-in called `name` (see the module docstring for where it is looked for)."""
        with self._lock:
            self._discover()
            if name in self._items:
                return self._items[name]
            for ep in self._entry_points():
                if ep.name == name:
                    return self._load_module(name, ep.value.split(":")[0], ep.value)
            if "." in name:
                return self._load_module(name, name, name)
        raise UnknownPluginError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or '(none)'}")

    def names(self) -> tuple[str, ...]:
        """Every known name: registered and built-in ones in registration order, then entry points."""
        with self._lock:
            self._discover()
            out = list(self._items)
        out += [ep.name for ep in self._entry_points() if ep.name not in out]
        return tuple(out)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def items(self) -> dict[str, T]:
        """Registered and built-in plug-ins by name (entry points are loaded only when asked for)."""
        with self._lock:
            self._discover()
            return dict(self._items)

    def listing(self) -> str:
        """A CLI's `--list` text: one line per name, with its description where there is one."""
        lines = [f"{self.kind}:"]
        items = self.items()
        for name in self.names():
            text = ""
            if self._describe is not None and name in items:
                text = next(iter(self._describe(items[name]).strip().splitlines()), "")
            elif name not in items:
                text = "(entry point)"
            lines.append(f"  {name:<24} {text}".rstrip())
        return "\n".join(lines)

    # ------------------------------------------------------------------ internals --
    def _discover(self) -> None:
        if self._discovered or self.package is None:
            self._discovered = True
            return
        self._discovered = True  # first, so a module that looks names up while importing does not recurse
        pkg = importlib.import_module(self.package)
        for info in sorted(pkgutil.iter_modules(getattr(pkg, "__path__", [])), key=lambda m: m.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{self.package}.{info.name}")
            if self.attribute is not None and info.name not in self._items:
                item = getattr(module, self.attribute, None)
                if item is not None:
                    self.add(info.name, item)

    def _entry_points(self) -> list[importlib.metadata.EntryPoint]:
        return list(importlib.metadata.entry_points(group=ENTRY_POINT_PREFIX + self.kind))

    def _load_module(self, name: str, module: str, spec: str) -> T:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and module.startswith(e.name):
                raise UnknownPluginError(f"unknown {self.kind} {name!r} (module {module} not found); "
                                         f"known: {', '.join(self.names()) or '(none)'}") from e
            raise
        if name in self._items:  # the module registered itself
            return self._items[name]
        attr = spec.split(":")[1] if ":" in spec else self.attribute
        item = getattr(mod, attr, None) if attr else None
        if item is None:
            raise UnknownPluginError(f"{self.kind}: module {module} neither registers {name!r} nor defines "
                                     f"{attr or 'a plug-in attribute'}")
        return self.add(name, item)
