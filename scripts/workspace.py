#!/usr/bin/env python3
"""The packages of src/ and their kinds, read from each package's own manifest (stdlib only).

Every package declares its kind once, in its package.xml:

    <export>
      <build_type>ament_python</build_type>
      <monologue_kind>node</monologue_kind>      <!-- node | library | tool | interfaces -->
    </export>

(`<monologue_kind wheels_only="true">` marks a stand-in built only on the PyPI-wheel path.) Everything
that needs the package list reads it from here: the import contract (test/import_contract.py), pytest's
import path (conftest.py), mypy's search path and file list (scripts/run_tests.sh) and the wheels-only
skip list (scripts/setup.sh). Adding a package is adding its folder.

    python3 scripts/workspace.py                  # name kind path, one package a line
    python3 scripts/workspace.py --kind node      # the node packages' names
    python3 scripts/workspace.py --python-paths   # source roots of the Python packages (':'-joined)
    python3 scripts/workspace.py --wheels-only    # names of the wheels-only stand-ins
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("node", "library", "tool", "interfaces")
SKIP_DIRS = {"build", "install", "log", ".venv", "node_modules"}


@dataclass(frozen=True)
class Package:
    name: str
    kind: str  # one of KINDS
    path: Path  # the folder holding package.xml
    build_type: str  # ament_python | ament_cmake
    wheels_only: bool = False

    @property
    def is_python(self) -> bool:
        """An ament_python package: its importable package is `<path>/<name>`."""
        return self.build_type == "ament_python"


def read_manifest(manifest: Path) -> Package:
    """The package a package.xml declares; ValueError naming the file when its kind is missing or unknown."""
    root = ET.parse(manifest).getroot()
    name = (root.findtext("name") or "").strip()
    export = root.find("export")
    kind_el = export.find("monologue_kind") if export is not None else None
    build_type = (export.findtext("build_type") or "").strip() if export is not None else ""
    if not name:
        raise ValueError(f"{manifest}: no <name>")
    if kind_el is None or (kind_el.text or "").strip() not in KINDS:
        raise ValueError(f"{manifest}: <export> needs <monologue_kind> with one of {', '.join(KINDS)}")
    return Package(name, (kind_el.text or "").strip(), manifest.parent, build_type,
                   kind_el.get("wheels_only", "false") == "true")


def packages(src: Path = ROOT / "src") -> list[Package]:
    """Every package under `src` (folders with a COLCON_IGNORE, caches and build trees left out), by name."""
    found: list[Package] = []
    for manifest in sorted(src.rglob("package.xml")):
        rel = manifest.relative_to(src).parts
        if any(p in SKIP_DIRS or p.startswith(".") for p in rel) or (manifest.parent / "COLCON_IGNORE").exists():
            continue
        found.append(read_manifest(manifest))
    names = [p.name for p in found]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"packages declared twice under {src}: {dupes}")
    return sorted(found, key=lambda p: p.name)


def by_kind(pkgs: list[Package], kind: str) -> frozenset[str]:
    return frozenset(p.name for p in pkgs if p.kind == kind)


def python_paths(pkgs: list[Package]) -> list[Path]:
    """The source roots that make every Python package importable (`<root>/<name>/__init__.py`)."""
    return [p.path for p in pkgs if p.is_python]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=Path, default=ROOT / "src")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--kind", choices=KINDS)
    group.add_argument("--python-paths", action="store_true")
    group.add_argument("--python-packages", action="store_true", help="import paths of the Python packages")
    group.add_argument("--wheels-only", action="store_true")
    args = ap.parse_args(argv)
    try:
        pkgs = packages(args.src)
    except ValueError as e:
        print(f"workspace.py: {e}", file=sys.stderr)
        return 1
    if args.kind:
        print("\n".join(sorted(by_kind(pkgs, args.kind))))
    elif args.python_paths:
        print(":".join(str(p) for p in python_paths(pkgs)))
    elif args.python_packages:
        print("\n".join(str(p.path / p.name) for p in pkgs if p.is_python))
    elif args.wheels_only:
        print("\n".join(p.name for p in pkgs if p.wheels_only))
    else:
        for p in pkgs:
            print(f"{p.name} {p.kind}{' (wheels only)' if p.wheels_only else ''} {p.path.relative_to(args.src.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
