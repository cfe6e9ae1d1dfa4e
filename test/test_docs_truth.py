"""The docs name only things that exist: every launch argument (`name:=value`), `make` target, `monologue-*`
command, `python -m` module and node parameter (`section.key` in backticks, `-p key:=value`,
`--param node:key=value`) named in README.md or docs/*.md is checked against its source of truth:

* launch arguments: the bring-up's table (monologue_bringup.up.LAUNCH_ARGUMENTS, shared by the launch files
  and monologue-up) plus the `key:=value` arguments the tools parse themselves (every
  `parse_launch_args(argv, {...})` call under src/, e.g. monologue-demo's seed:= and monologue-replay's rate:=);
* make targets: the Makefile's rules;
* commands: the console_scripts entry points of src/*/setup.py;
* parameters: config/monologue.yaml, config/robots/*.yaml and config/llm/*.yaml, flattened (`a: {b: 1}` is
  `a.b`), with or without the node's name in front (`planner.cape.method`), plus what the robot table sets;
* relative links (`[text](other.md#anchor)`): the file exists;
* `python -m <module>`: a module of ours must exist under src/ (`python -m monologue_eval.reliability`);
  anything else must be installed (`python -m pytest`).

A failure names the file, the line and the unknown name. A few names are legitimately not ours (ALLOWED).
The sources are parsed, not run (no ROS); run it in the venv, where the third-party modules the docs
run with `python -m` are installed.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

# Names the docs may use although our sources do not define them, each with its reason.
ALLOWED: dict[str, frozenset[str]] = {
    "launch": frozenset({
        "use_sim_time",  # ROS's own parameter/argument, accepted by every node and launch file
    }),
    "make": frozenset(),
    "command": frozenset(),
    "module": frozenset(),
    "link": frozenset(),
    "param": frozenset({
        "use_sim_time",  # ROS's own
        "node:name",  # the syntax of `--param node:name=value` itself
        # test-only parameters of the ur5e backend (docs/ur5e.md "Testing without a robot"): read by the
        # backend when set, deliberately absent from the YAML so that no real-robot config carries them
        "ur5e.rtde_factory",
        "ur5e.probe",
    }),
}

# Parameter groups that take any key of another group (the YAML comments say so): the Statler writer's and the
# MultiTalk Analyzer's own LLM accept every `llm.*` key over the planner's (`-p statler.writer_llm.model:=...`).
OVERRIDE_GROUPS: dict[str, str] = {"statler.writer_llm": "llm", "multitalk.analyzer_llm": "llm"}

# File name endings that make a dotted word a path, not a parameter (`monologue.yaml`, `sim.launch.py`).
FILE_SUFFIXES = ("py", "yaml", "yml", "md", "json", "jsonl", "txt", "gguf", "msg", "srv", "action", "rviz",
                 "png", "jpg", "mcap", "xml", "toml", "ini", "cfg", "sh", "db3", "npz", "onnx", "bin", "html",
                 "js", "css", "log", "csv")


@dataclass(frozen=True)
class Mention:
    """One name a doc uses: its kind (launch, make, command, param), the name, where."""

    kind: str
    name: str
    file: str
    line: int
    node: str = ""  # param given as `--param node:key=value`: the node
    explicit: bool = False  # a parameter by its syntax (`-p`, `--param`), not only by its shape


# ---- what exists ------------------------------------------------------------------------------------


def _dict_keys(node: ast.expr) -> set[str]:
    return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)} \
        if isinstance(node, ast.Dict) else set()


def tool_launch_args(src: Path) -> set[str]:
    """Keys of the defaults the tools pass to `parse_launch_args(argv, defaults)`: a dict literal, or a
    module-level name bound to one (monologue-demo's DEFAULTS)."""
    names: set[str] = set()
    for f in sorted(src.rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        if "parse_launch_args(" not in text:
            continue
        tree = ast.parse(text)
        module_dicts: dict[str, set[str]] = {}
        for stmt in tree.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        module_dicts[t.id] = _dict_keys(stmt.value)
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and len(call.args) >= 2):
                continue
            func = call.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called != "parse_launch_args":
                continue
            defaults = call.args[1]
            names |= _dict_keys(defaults)
            if isinstance(defaults, ast.Name):
                names |= module_dicts.get(defaults.id, set())
    return names


def launch_args() -> set[str]:
    from monologue_bringup.up import LAUNCH_ARGUMENTS

    return {a.name for a in LAUNCH_ARGUMENTS} | tool_launch_args(REPO / "src")


def make_targets(makefile: Path) -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile.read_text(encoding="utf-8"), re.M))


def commands(src: Path) -> set[str]:
    """console_scripts of every package's setup.py (`'monologue-demo = monologue_eval.demo:main'`)."""
    found: set[str] = set()
    for f in sorted(src.glob("*/setup.py")):
        found |= set(re.findall(r"['\"]\s*([\w-]+)\s*=\s*[\w.]+:\w+\s*['\"]", f.read_text(encoding="utf-8")))
    return found


def module_problem(name: str, src: Path) -> str:
    """Why `python -m name` cannot run ("" if it can): a module of ours must be a file or a package with a
    __main__ under src/<package>/; anything else must be installed (`python -m pytest`, `llama_cpp.server`)."""
    parts = name.split(".")
    ours = [p for p in src.glob(f"*/{parts[0]}/__init__.py")]
    if not ours:
        if importlib.util.find_spec(parts[0]) is None:
            return "neither a package under src/ nor an installed one"
        return ""
    base = ours[0].parent.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file() or (base / "__main__.py").is_file():
        return ""
    return f"no {'/'.join(parts)}.py or {'/'.join(parts)}/__main__.py under src/"


def _flatten(d: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for k, v in d.items():
        key = f"{prefix}{k}"
        yield key  # groups too: `cape`, `statler.writer_llm`
        if isinstance(v, dict):
            yield from _flatten(v, key + ".")


def parameters(config: Path) -> dict[str, set[str]]:
    """Node -> its parameters (flattened) from the parameter files; "/**" holds the ones every node gets."""
    files = [config / "monologue.yaml", *sorted((config / "robots").glob("*.yaml")),
             *sorted((config / "llm").glob("*.yaml"))]
    params: dict[str, set[str]] = {}
    for node, keys in robot_table_parameters(config).items():
        params.setdefault(node, set()).update(keys)
    for f in files:
        data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
        for node, section in data.items():
            if isinstance(section, dict) and isinstance(section.get("ros__parameters"), dict):
                params.setdefault(str(node), set()).update(_flatten(section["ros__parameters"]))
    return params


def robot_table_parameters(config: Path) -> dict[str, set[str]]:
    """The parameters the robot table (config/robots.yaml) sets per node: the skills `backend`, the perception
    `source`, the success detector's choice (monologue_bringup.graph.robot_params)."""
    from monologue_bringup.graph import robot_params, robots

    out: dict[str, set[str]] = {}
    for robot in robots(config):
        for node, values in robot_params(robot, config).items():
            out.setdefault(node, set()).update(values)
    return out


def known_parameters(params: dict[str, set[str]]) -> set[str]:
    """Every way the docs may write a parameter: `key.sub`, and `node.key.sub`."""
    common = params.get("/**", set())
    known: set[str] = set(common)
    for node, keys in params.items():
        known |= keys
        if node != "/**":
            known |= {f"{node}.{k}" for k in keys | common}
    for group, target in OVERRIDE_GROUPS.items():
        extra = {f"{group}.{k[len(target) + 1:]}" for k in known if k.startswith(target + ".")}
        known |= extra | {f"{n}.{k}" for k in extra for n in params if n != "/**"}
    return known


# ---- what the docs name -------------------------------------------------------------------------------


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LAUNCH_ARG = re.compile(r"(?<![\w.:/$-])([a-z_][a-z0-9_]*):=")
ROS_PARAM = re.compile(r"(?:^|[\s`])-p\s+([\w.]+):=")  # `--ros-args -p name:=value`
ROS_REMAP = re.compile(r"(?:^|[\s`])-r\s+[\w/]+:=")  # `--ros-args -r __node:=camera`: not an argument
PARAM_FLAG = re.compile(r"--param\s+([a-z_]\w*):([\w.]+)=")  # monologue-up/-demo `--param node:key=value`
MAKE = re.compile(r"(?:^|[\s;&(|`\"'])make\s+([a-z][\w-]*)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")  # [text](relative/path#anchor)
PYTHON_M = re.compile(r"(?<![\w-])python3?\s+-m\s+([A-Za-z_][\w.]*)")
COMMAND = re.compile(r"(?<![\w./-])(monologue-[a-z][a-z0-9-]*[a-z0-9])")
DOTTED = re.compile(r"[a-z_][a-z0-9_]*(?:\.(?:[a-z0-9_]+|\*|<[\w-]+>))+")


def _code_parts(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(line number, code text): every inline code span, and every line of a fenced block with its shell
    comment removed (`make demo   # set up if needed` names `make demo`, not what the comment says)."""
    fenced = False
    for i, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            yield i, re.sub(r"(^|\s)#.*$", "", line)
        else:
            for m in CODE_SPAN.finditer(line):
                yield i, m.group(2)


def _params_in(code: str) -> Iterator[str]:
    """The dotted parameter names of a code span: `llm.tree_scoring: true`, `cape.*`, `feedback.scene`."""
    word = re.split(r"[:=\s]", code.strip(), maxsplit=1)[0]
    if DOTTED.fullmatch(word):
        yield word


def mentions(path: Path, docs_root: Path = REPO) -> Iterator[Mention]:
    """What `path` names; its file is given relative to `docs_root`."""
    rel = path.relative_to(docs_root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, 1):
        cleaned = ROS_REMAP.sub(" ", line)
        for m in ROS_PARAM.finditer(cleaned):
            yield Mention("param", m.group(1), rel, i, explicit=True)
        cleaned = ROS_PARAM.sub(" ", cleaned)
        for m in LAUNCH_ARG.finditer(cleaned):
            yield Mention("launch", m.group(1), rel, i)
        for m in COMMAND.finditer(line):
            yield Mention("command", m.group(1), rel, i)
        for m in LINK.finditer(line):
            if "://" not in m.group(1) and not m.group(1).startswith("mailto:"):
                yield Mention("link", m.group(1), rel, i)
        for m in PYTHON_M.finditer(line):
            yield Mention("module", m.group(1), rel, i)
        for m in PARAM_FLAG.finditer(line):
            yield Mention("param", m.group(2), rel, i, node=m.group(1), explicit=True)
    for i, code in _code_parts(lines):
        for m in MAKE.finditer(code):
            yield Mention("make", m.group(1), rel, i)
        if "--param" not in code and not ROS_PARAM.search(code):
            for name in _params_in(code):
                yield Mention("param", name, rel, i)


@lru_cache(maxsize=4)
def code_names(src: Path) -> dict[str, set[str]]:
    """Every module and package under src/, by each dotted tail of its name (`kitchen.household`,
    `household`, `tabletop_sim.core`), with the names defined at its top level (functions, classes,
    assignments) and its sub-modules."""
    index: dict[str, set[str]] = {}
    for pkg in sorted(p for p in src.glob("*/*/__init__.py")):
        root = pkg.parent.parent
        for f in sorted(pkg.parent.rglob("*.py")):
            mod = f.relative_to(root).with_suffix("").parts
            if mod[-1] == "__init__":
                mod = mod[:-1]
            defined: set[str] = set()
            if f.name == "__init__.py":
                defined |= {c.stem for c in f.parent.glob("*.py")} | {c.name for c in f.parent.iterdir() if c.is_dir()}
            for stmt in ast.parse(f.read_text(encoding="utf-8")).body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defined.add(stmt.name)
                elif isinstance(stmt, ast.Assign):
                    defined |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    defined.add(stmt.target.id)
            for i in range(len(mod)):
                index.setdefault(".".join(mod[i:]), set()).update(defined)
    return index


def _is_code(name: str, code: dict[str, set[str]]) -> bool:
    """`name` is a module (`tabletop_sim.core`) or a name in one (`household.reference_program`)."""
    parts = name.split(".")
    if len(parts) >= 2 and name in code:
        return True
    return any(".".join(parts[:k]) in code and parts[k] in code[".".join(parts[:k])] for k in range(1, len(parts)))


def _is_parameter_like(name: str, roots: set[str], code: dict[str, set[str]]) -> bool:
    """A dotted word that names a parameter, not a path or code: its first part is a node's section or a
    parameter group (`planner`, `cape`, `llm`, `sim`), it does not end in a file suffix, and it is not a
    module or a name defined in one."""
    parts = name.split(".")
    return parts[0] in roots and parts[-1] not in FILE_SUFFIXES and not _is_code(name, code)


def _param_known(m: Mention, params: dict[str, set[str]], known: set[str]) -> bool:
    name = m.name.replace(".*", "")
    name = re.sub(r"\.<[\w-]+>.*$", "", name)  # `statler.writer_llm.<key>`: the group must exist
    if m.node:
        if f"{m.node}:{m.name}" in ALLOWED["param"]:
            return True
        return m.node in params and name in params[m.node] | params.get("/**", set())
    return name in known


def problems(files: Iterable[Path], kind: str, docs_root: Path = REPO) -> list[str]:
    """One line per unknown name of `kind` in `files`: `file:line: unknown <kind> <name>`."""
    allowed = ALLOWED[kind]
    out: list[str] = []
    known: set[str] = set()
    if kind == "launch":
        known = launch_args()
    elif kind == "make":
        known = make_targets(REPO / "Makefile")
    elif kind == "command":
        known = commands(REPO / "src")
    elif kind == "module":
        known = set()
    params = parameters(REPO / "config")
    known_params = known_parameters(params)
    # a dotted word is checked when it starts with a node's name or a parameter group (a key with keys under it)
    roots = set(params) | {k.split(".")[0] for keys in params.values() for k in keys if "." in k}
    roots.discard("/**")
    code = code_names(REPO / "src")
    for f in files:
        for m in mentions(f, docs_root):
            if m.kind != kind or m.name in allowed:
                continue
            if kind == "link":
                if not (f.parent / m.name).exists():
                    out.append(f"{m.file}:{m.line}: link to {m.name}, which does not exist")
                continue
            if kind == "module":
                why = module_problem(m.name, REPO / "src")
                if why:
                    out.append(f"{m.file}:{m.line}: `python -m {m.name}`: {why}")
                continue
            if kind == "param":
                if not m.explicit and not _is_parameter_like(m.name, roots, code):
                    continue
                if _param_known(m, params, known_params):
                    continue
                where = f" of node {m.node!r}" if m.node else ""
                out.append(f"{m.file}:{m.line}: unknown parameter{where} `{m.name}` (not in config/monologue.yaml, "
                           "config/robots/*.yaml or config/llm/*.yaml)")
            elif m.name not in known:
                out.append(f"{m.file}:{m.line}: unknown {DESCRIBE[kind]} {m.name!r}; known: {sorted(known)}")
    return out


DESCRIBE = {"launch": "launch argument (name:=value)", "make": "make target", "command": "command",
            "module": "module"}


# ---- the checks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["launch", "make", "command", "param", "module", "link"])
def test_docs_name_only_what_exists(kind: str) -> None:
    found = problems(doc_files(), kind)
    assert not found, f"{len(found)} name(s) in the docs that the sources do not define:\n" + "\n".join(found)


def test_the_checker_finds_made_up_names(tmp_path: Path) -> None:
    """The checks catch a wrong name of every kind, with file and line, and accept the real ones."""
    doc = tmp_path / "page.md"
    doc.write_text(
        "Run `make demo` and `make no-such-target`.\n"
        "```bash\n"
        "monologue-up robot:=sim no_such_arg:=1   # make sure: a comment is not a target\n"
        "monologue-nonexistent --help\n"
        "monologue-up --param planner:max_steps=5 --param planner:no_such.key=1\n"
        "```\n"
        "Set `generation.max_reprompts`, `planner.cape.method`, `cape.*` or `generation.no_such_key: 3`;\n"
        "`-p no_such_param:=1`, `-p max_steps:=3`, `-r __node:=camera`.\n"
        "`python -m monologue_eval.no_such_module`, `python -m pytest`, `python -m no_such_package.x`.\n"
        "[here](page.md#top), [gone](no_such_page.md), [web](https://example.org/x.md).\n"
        "`config/monologue.yaml` and `monologue_eval.demo` are not parameters.\n",
        encoding="utf-8")
    result = {k: problems([doc], k, docs_root=tmp_path)
              for k in ("launch", "make", "command", "param", "module", "link")}
    assert [r.split(": ")[0] for r in result["launch"]] == ["page.md:3"] and "'no_such_arg'" in result["launch"][0]
    assert [r.split(": ")[0] for r in result["make"]] == ["page.md:1"] and "'no-such-target'" in result["make"][0]
    assert len(result["command"]) == 1 and "'monologue-nonexistent'" in result["command"][0]
    assert result["command"][0].startswith("page.md:4:")
    params = sorted(result["param"])
    assert len(params) == 3, params
    assert params[0].startswith("page.md:5:") and "`no_such.key`" in params[0] and "'planner'" in params[0]
    assert params[1].startswith("page.md:7:") and "`generation.no_such_key`" in params[1]
    assert params[2].startswith("page.md:8:") and "`no_such_param`" in params[2]
    modules = result["module"]
    assert [m.split(": ")[0] for m in modules] == ["page.md:9", "page.md:9"], modules
    assert "monologue_eval.no_such_module" in modules[0] and "no_such_package.x" in modules[1]
    assert result["link"] == ["page.md:10: link to no_such_page.md, which does not exist"]

