"""The import contract between the packages of src/ (docs/architecture.md), checked on the source.

    python test/import_contract.py        # prints every violation, exit 1 if any

Rules (every import counts, including imports inside functions):
- A node package imports only itself, the libraries and monologue_interfaces: never another node
  package, the bring-up or the evaluation package.
- A library imports only other libraries (and, outside `core` modules, monologue_interfaces).
- The tools (monologue_bringup, monologue_eval) import libraries, monologue_interfaces, each other
  (eval -> bringup) and monologue_bag's bag I/O, never a node package's internals.
- Exception: the component benchmarks (monologue_eval.benchmarks.*) time node packages' internals
  white-box, and the reliability suite (monologue_eval.reliability.*, with its tests in
  src/monologue_eval/test/reliability/) drives the planner's and skills' ROS-free cores directly, so
  they may import them; no other module may import those white-box modules.
- ROS-free modules (`*/core/*`, and every library module outside monologue_common's rclpy adapters)
  never import rclpy; `core` modules do not import generated messages either.
A package's tests (src/<pkg>/test) follow its package's rules; test/ (system tests) may import anything.
"""
from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


def _workspace() -> ModuleType:
    """scripts/workspace.py: the packages and the kinds their manifests declare (<monologue_kind>)."""
    spec = importlib.util.spec_from_file_location("monologue_workspace", REPO / "scripts" / "workspace.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("monologue_workspace", mod)
    spec.loader.exec_module(mod)
    return mod


REPO = Path(__file__).resolve().parents[1]
_PACKAGES = _workspace().packages(REPO / "src")
NODES = frozenset(p.name for p in _PACKAGES if p.kind == "node")
LIBRARIES = frozenset(p.name for p in _PACKAGES if p.kind == "library")
TOOLS = frozenset(p.name for p in _PACKAGES if p.kind == "tool")
INTERFACES = frozenset(p.name for p in _PACKAGES if p.kind == "interfaces")
PROJECT = NODES | LIBRARIES | TOOLS | INTERFACES
ROS_CLIENT = ("rclpy",)
# Library modules that are rclpy adapters by design (node entry point, QoS, parameter declaration).
# White-box modules (with their sub-modules): they may import node packages' internals; only they import each other.
WHITE_BOX = ("monologue_eval.benchmarks", "monologue_eval.reliability", "monologue_eval.test.reliability")
RCLPY_ADAPTERS = frozenset({"monologue_common.runtime", "monologue_common.qos", "monologue_common.params",
                            "monologue_common.actions", "monologue_common.dedicated"})


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


def _white_box(module: str) -> bool:
    return any(module == w or module.startswith(w + ".") for w in WHITE_BOX)


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
        white_box = _white_box(module)
        if _white_box(name) and not white_box:
            out.append(Violation(path, line, module, name, "only the white-box benchmarks themselves import them"))
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
        out += check_circles(pkg_dir / owner, owner)
    return out


# ---- import circles inside a package ----------------------------------------------------------------------

def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, inside functions too, but not under `if TYPE_CHECKING:` (never executed)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def module_graph(pkg: Path, owner: str) -> dict[str, dict[str, int]]:
    """{module: {imported module of the same package: line}} for the package folder `pkg` (src/<p>/<p>)."""
    files: dict[str, Path] = {}
    for path in sorted(pkg.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = (owner, *path.relative_to(pkg).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        is_pkg = path.name == "__init__.py"
        edges: dict[str, int] = {}
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError:
            continue  # check_file reports it
        for node in _runtime_imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = module.split(".") if is_pkg else module.split(".")[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for t in targets:
                hit = resolve(t) if t.split(".")[0] == owner else None
                if hit is not None and hit != module:
                    edges.setdefault(hit, node.lineno)
        graph[module] = edges
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check_circles(pkg: Path, owner: str) -> list[Violation]:
    """One violation per import circle inside the package (a module that imports itself back through a chain)."""
    if not pkg.is_dir():
        return []
    graph = module_graph(pkg, owner)
    out: list[Violation] = []
    for comp in _circles(graph):
        first = comp[0]
        nxt = min(w for w in graph[first] if w in comp)
        path = pkg.joinpath(*first.split(".")[1:])
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        out.append(Violation(path, graph[first][nxt], first, nxt, "import circle: " + " <-> ".join(comp)))
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
