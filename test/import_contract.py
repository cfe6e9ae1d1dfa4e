"""The import contract between the packages of src/ (docs/architecture.md), checked on the source.

    python test/import_contract.py        # prints every violation, exit 1 if any

Rules (every import counts, including imports inside functions):
- A node package imports only itself, the libraries and monologue_interfaces: never another node
  package, the bring-up or the evaluation package.
- A library imports only other libraries (and, outside `core` modules, monologue_interfaces).
- The tools (monologue_bringup, monologue_eval) import libraries, monologue_interfaces, each other
  (eval -> bringup) and monologue_bag's bag I/O, never a node package's internals.
- Exception: the component benchmarks (monologue_eval.benchmarks.*) time node packages' internals
  white-box, so they may import them; no other module may import those benchmarks.
- ROS-free modules (`*/core/*`, and every library module outside monologue_common's rclpy adapters)
  never import rclpy; `core` modules do not import generated messages either.
A package's tests (src/<pkg>/test) follow its package's rules; test/ (system tests) may import anything.
"""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NODES = frozenset({"planner_node", "skills_node", "perception_node", "success_detector_node", "tabletop_sim",
                   "monologue_viz", "monologue_bag", "monologue_web"})
LIBRARIES = frozenset({"monologue_llm", "monologue_domain", "monologue_common", "monologue_vision"})
TOOLS = frozenset({"monologue_bringup", "monologue_eval"})
INTERFACES = frozenset({"monologue_interfaces", "tf2_msgs"})
PROJECT = NODES | LIBRARIES | TOOLS | INTERFACES
ROS_CLIENT = ("rclpy",)
# Library modules that are rclpy adapters by design (node entry point, QoS, parameter declaration).
BENCHMARKS = "monologue_eval.benchmarks"
RCLPY_ADAPTERS = frozenset({"monologue_common.runtime", "monologue_common.qos", "monologue_common.params",
                            "monologue_common.actions"})


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    module: str  # the importing module
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.module} imports {self.imported}: {self.rule}"


def _imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def _allowed(owner: str, target: str) -> bool:
    if target == owner or target in INTERFACES:
        return True
    if owner in NODES or owner in LIBRARIES:
        return target in LIBRARIES
    if owner in TOOLS:
        return target in LIBRARIES or target in TOOLS or target == "monologue_bag"
    return True


def check_file(path: Path, owner: str, module: str) -> list[Violation]:
    """Violations of the import contract in one source file of package `owner`."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as e:
        return [Violation(path, e.lineno or 0, module, "?", f"does not parse: {e.msg}")]
    is_core = ".core." in f".{module}." or module.endswith(".core")
    ros_free = is_core or (owner in LIBRARIES and module not in RCLPY_ADAPTERS and not module.startswith(
        tuple(f"{m}." for m in RCLPY_ADAPTERS)) and ".test" not in module)
    out: list[Violation] = []
    for line, name in _imports(tree):
        top = name.split(".")[0]
        white_box = module == BENCHMARKS or module.startswith(BENCHMARKS + ".")
        if (name == BENCHMARKS or name.startswith(BENCHMARKS + ".")) and not white_box:
            out.append(Violation(path, line, module, name, "only the benchmarks themselves import them"))
        if top in PROJECT and not _allowed(owner, top) and not (white_box and top in NODES):
            kind = "node package" if top in NODES else "tool package" if top in TOOLS else "package"
            out.append(Violation(path, line, module, name, f"{owner} may not import the {kind} {top}"))
        if ros_free and top in ROS_CLIENT:
            out.append(Violation(path, line, module, name, "ROS-free module imports rclpy"))
        if is_core and top in INTERFACES:
            out.append(Violation(path, line, module, name, "core module imports generated messages"))
    return out


def check_tree(src: Path) -> list[Violation]:
    """Every violation under `src` (a directory of packages laid out as src/<pkg>/<pkg>/ and src/<pkg>/test/)."""
    out: list[Violation] = []
    for pkg_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        owner = pkg_dir.name
        if owner not in PROJECT:
            continue
        for path in sorted(pkg_dir.rglob("*.py")):
            rel = path.relative_to(pkg_dir)
            if rel.parts[0] in ("build", "install") or "__pycache__" in rel.parts:
                continue
            if rel.parts[0] == owner:
                module = ".".join(rel.with_suffix("").parts)
            elif rel.parts[0] == "test":
                module = f"{owner}.test." + ".".join(rel.with_suffix("").parts[1:])
            else:
                continue  # setup.py and the like
            out += check_file(path, owner, module)
    return out


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "src"
    found = check_tree(root)
    for v in found:
        print(v)
    print(f"import contract: {len(found)} violation(s) in {root}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
