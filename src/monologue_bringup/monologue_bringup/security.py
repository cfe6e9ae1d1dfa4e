"""DDS Security (SROS2) for the graph: who may command what, the DDS Security documents, and the
environment a secured node gets. ROS-free; monologue_bringup.keystore writes and signs the files.

The graph's command surfaces are listed once (COMMANDS): which node may send an instruction or skill
goal, publish `human/input`, call `estop_reset`, answer `ask_human` or approve a motion. Every node's
permissions follow from that table: the surfaces it is granted, a DENY for the others, then ALLOW for
everything else (telemetry, queries, parameters, discovery), so that only keystore members talk at all
(governance: no unauthenticated participants, encrypted discovery and data) and only the named nodes
command. docs/security.md explains the threat model.
"""
from __future__ import annotations

import mmap
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import escape

# Enclaves: one per node of the graph (/monologue/<node>), one for an in-process graph (container:=true:
# one process, one DDS participant) and two for people's tools outside the graph.
ENCLAVE_ROOT = "/monologue"
CONTAINER = "container"  # monologue-up container:=true
OPERATOR = "operator"  # benchmarks, monologue-demo, monologue-human, eval harness: may command everything
OBSERVER = "observer"  # dashboards: read everything, command nothing
TOOLS = (OPERATOR, OBSERVER)

# Launch argument values (secure:=).
OFF, ENFORCE = "false", "true"
SECURITY_CHOICES = (OFF, ENFORCE)

# The builtin plugins of a Fast DDS built with -DSECURITY=ON, as named in its plug-in factory.
FASTDDS_PLUGINS = ("builtin.PKI-DH", "builtin.AES-GCM-GMAC", "builtin.Access-Permissions")

TOPIC, SERVICE, ACTION = "topic", "service", "action"
_ACTION_CALLS = ("send_goal", "cancel_goal", "get_result")


@dataclass(frozen=True)
class Command:
    """One command surface of the graph and who may use it.

    topic: `writers` may publish (anyone in the keystore may subscribe);
    service: `writers` serve it (reply), `readers` call it (request);
    action: `writers` execute it (the server), `readers` call it (send goals, cancel)."""

    kind: str  # TOPIC, SERVICE or ACTION
    name: str  # absolute ROS name
    writers: frozenset[str]  # node names (or TOOLS) that publish / serve / execute
    readers: frozenset[str] = frozenset()  # node names that call (services, actions)
    why: str = ""
    guard_servers: bool = True  # False: only the callers are restricted (every node serves its own)

    def request_topics(self) -> tuple[str, ...]:
        """DDS topics that carry commands to the server (service and action requests)."""
        if self.kind == SERVICE:
            return (f"rq{self.name}Request",)
        if self.kind == ACTION:
            return tuple(f"rq{self.name}/_action/{c}Request" for c in _ACTION_CALLS)
        return ()

    def server_topics(self) -> tuple[str, ...]:
        """DDS topics only the server writes (replies; action feedback and status); a topic's data."""
        if self.kind == TOPIC:
            return (f"rt{self.name}",)
        if self.kind == SERVICE:
            return (f"rr{self.name}Reply",)
        return tuple(f"rr{self.name}/_action/{c}Reply" for c in _ACTION_CALLS) + (
            f"rt{self.name}/_action/feedback", f"rt{self.name}/_action/status")


def _s(*names: str) -> frozenset[str]:
    return frozenset(names)


APPROVAL_ACTION = "/approve_motion"  # config/monologue.yaml skills approval.action = web approval_action

COMMANDS: tuple[Command, ...] = (
    Command(ACTION, "/execute_instruction", _s("planner"), _s("web", OPERATOR),
            "starts an episode: the person's instruction to the planner"),
    Command(ACTION, "/execute_skill", _s("skills", "bag_player"), _s("planner", OPERATOR),
            "moves the robot: one skill"),
    Command(ACTION, "/arm/command", _s("tabletop_sim"), _s("skills", OPERATOR),
            "moves the simulated arm below the skills node's safety layer"),
    Command(SERVICE, "/estop_reset", _s("skills"), _s("web", OPERATOR),
            "releases a latched e-stop: the robot may move again"),
    Command(TOPIC, "/human/input", _s("web", OPERATOR), why="interjections and answers steer the planner"),
    Command(ACTION, "/ask_human", _s("web", OPERATOR), _s("planner", "skills"),
            "answers the robot's questions (a stranger serving it would answer for the person)"),
    Command(ACTION, APPROVAL_ACTION, _s("web", OPERATOR), _s("skills"),
            "approves a motion the skills node holds back"),
    Command(SERVICE, "/sim/reset", _s("tabletop_sim"), _s(OPERATOR), "resets the simulated scene"),
    Command(SERVICE, "/sim/disturb", _s("tabletop_sim"), _s(OPERATOR), "moves simulated objects"),
    Command(SERVICE, "/*/set_parameters", frozenset(), _s(OPERATOR),
            "reconfigures a node (limits, backends)", guard_servers=False),
    Command(SERVICE, "/*/set_parameters_atomically", frozenset(), _s(OPERATOR),
            "reconfigures a node (limits, backends)", guard_servers=False),
)
# `estop` is not a command surface here: every keystore member may publish it (stopping is always safe),
# nobody outside the keystore can (authentication); releasing it is estop_reset's, which is guarded.


def enclave_name(node: str) -> str:
    """`/monologue/<node>`: the enclave (and certificate subject) of a node or tool."""
    return f"{ENCLAVE_ROOT}/{node}"


def subject_name(enclave: str) -> str:
    """The X.509 subject of an enclave's identity certificate, as in its permissions grant."""
    return f"CN={enclave}"


@dataclass
class Grant:
    """What one enclave may do on the guarded DDS topics (the rest is allowed)."""

    enclave: str
    allow_publish: set[str] = field(default_factory=set)
    allow_subscribe: set[str] = field(default_factory=set)
    deny_publish: set[str] = field(default_factory=set)
    deny_subscribe: set[str] = field(default_factory=set)


def grant_for(enclave: str, nodes: Iterable[str], commands: Sequence[Command] = COMMANDS) -> Grant:
    """The grant of an enclave holding `nodes` (one node; all of them for an in-process graph)."""
    held = set(nodes)
    g = Grant(enclave)
    for c in commands:
        server, caller = bool(held & c.writers), bool(held & c.readers)
        if c.kind == TOPIC:
            (g.allow_publish if server else g.deny_publish).update(c.server_topics())
            continue
        if c.guard_servers:  # only the server answers, and only it reads the requests
            (g.allow_publish if server else g.deny_publish).update(c.server_topics())
            (g.allow_subscribe if server else g.deny_subscribe).update(c.request_topics())
        (g.allow_publish if caller else g.deny_publish).update(c.request_topics())
    g.deny_publish -= g.allow_publish
    g.deny_subscribe -= g.allow_subscribe
    return g


def enclaves(node_names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """{enclave: the nodes it holds}: one per node and tool, and the in-process graph's (every node)."""
    names = sorted(set(node_names) - set(TOOLS) - {CONTAINER})
    out: dict[str, tuple[str, ...]] = {enclave_name(n): (n,) for n in names}
    out[enclave_name(CONTAINER)] = tuple(names)
    out.update({enclave_name(t): (t,) for t in TOOLS})
    return out


# ---- DDS Security documents (OMG DDS Security 1.1, section 9.4) -------------------------------------


def _domains(domain_id: int) -> str:
    return f"<domains><id>{domain_id}</id></domains>"


def governance_xml(domain_id: int) -> str:
    """Governance: members only (no unauthenticated participants, join access control), discovery,
    liveliness and data encrypted, read and write access control on every topic."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
  <domain_access_rules>
    <domain_rule>
      {_domains(domain_id)}
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
      <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
      <rtps_protection_kind>SIGN</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>ENCRYPT</metadata_protection_kind>
          <data_protection_kind>ENCRYPT</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"""


def _topics(tag: str, topics: Iterable[str]) -> str:
    items = "".join(f"<topic>{escape(t)}</topic>" for t in sorted(topics))
    return f"<{tag}><topics>{items}</topics></{tag}>" if items else ""


def _rule(tag: str, domain_id: int, publish: Iterable[str], subscribe: Iterable[str]) -> str:
    body = _topics("publish", publish) + _topics("subscribe", subscribe)
    return f"      <{tag}>{_domains(domain_id)}{body}</{tag}>\n" if body else ""


def _utc(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def permissions_xml(grant: Grant, domain_id: int, not_before: datetime, days: int) -> str:
    """An enclave's permissions. Rules apply in order, the first match decides: the guarded topics it
    holds, DENY on the other guarded topics, then ALLOW for everything else; DENY by default."""
    rules = (_rule("allow_rule", domain_id, grant.allow_publish, grant.allow_subscribe)
             + _rule("deny_rule", domain_id, grant.deny_publish, grant.deny_subscribe)
             + _rule("allow_rule", domain_id, ["*"], ["*"]))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
  <permissions>
    <grant name="{escape(grant.enclave)}">
      <subject_name>{escape(subject_name(grant.enclave))}</subject_name>
      <validity>
        <not_before>{_utc(not_before)}</not_before>
        <not_after>{_utc(not_before + timedelta(days=days))}</not_after>
      </validity>
{rules}      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"""


# ---- what a secured node gets -----------------------------------------------------------------------


def security_env(keystore: Path) -> dict[str, str]:
    """The environment that makes rcl load the node's enclave from `keystore` and refuse to run without
    it (Enforce: no silent fallback to an open participant)."""
    return {"ROS_SECURITY_KEYSTORE": str(Path(keystore).expanduser().resolve()),
            "ROS_SECURITY_ENABLE": "true", "ROS_SECURITY_STRATEGY": "Enforce"}


def enclave_args(node: str) -> list[str]:
    """The `--ros-args` items that put a node process in its enclave."""
    return ["--enclave", enclave_name(node)]


ENCLAVE_FILES = ("cert.pem", "key.pem", "identity_ca.cert.pem", "permissions_ca.cert.pem", "governance.p7s",
                 "permissions.p7s")


def keystore_problems(keystore: Path, nodes: Iterable[str]) -> list[str]:
    """Why `keystore` cannot secure `nodes` (missing directory or enclave files); empty when it can."""
    root = Path(keystore).expanduser()
    if not (root / "enclaves").is_dir():
        return [f"{root} is not a keystore (no enclaves/); create it with `monologue-keystore {root}`"]
    out = []
    for n in nodes:
        d = root / "enclaves" / enclave_name(n).lstrip("/")
        missing = [f for f in ENCLAVE_FILES if not (d / f).is_file()]
        if missing:
            out.append(f"enclave {enclave_name(n)}: missing {', '.join(missing)} in {d} "
                       f"(re-run `monologue-keystore {root}`)")
    return out


# ---- does the installed Fast DDS have the security plug-ins? ----------------------------------------


@dataclass(frozen=True)
class FastDdsSecurity:
    """What the installed Fast DDS library holds."""

    library: Path | None  # libfastrtps / libfastdds found (None: none found)
    missing: tuple[str, ...]  # FASTDDS_PLUGINS not in it

    @property
    def available(self) -> bool:
        return self.library is not None and not self.missing

    def explain(self) -> str:
        if self.library is None:
            return "no Fast DDS library (libfastrtps.so / libfastdds.so) found on the library paths"
        if self.missing:
            return (f"{self.library} was built without DDS Security (-DSECURITY=OFF): it lacks the plug-ins "
                    f"{', '.join(self.missing)}; rmw_fastrtps refuses a secured node (\"This Fast DDS version "
                    "doesn't have the security libraries\"). docs/security.md says what a robot PC needs.")
        return f"{self.library} has the DDS Security plug-ins {', '.join(FASTDDS_PLUGINS)}"


def _library_dirs(env: Mapping[str, str]) -> list[Path]:
    dirs = [Path(p) / "lib" for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    dirs += [Path(p) for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    return dirs + [Path(sys.prefix) / "lib"]


def fastdds_security(env: Mapping[str, str] | None = None, dirs: Sequence[Path] | None = None) -> FastDdsSecurity:
    """Look for the security plug-ins' names in the first Fast DDS shared library on the library paths
    (AMENT_PREFIX_PATH/lib, LD_LIBRARY_PATH, this Python's prefix/lib), or in `dirs`."""
    for d in dirs if dirs is not None else _library_dirs(os.environ if env is None else env):
        libs = sorted(p for pat in ("libfastdds.so*", "libfastrtps.so*") for p in d.glob(pat) if p.is_file())
        if libs:
            lib = libs[0].resolve()
            with lib.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                missing = tuple(p for p in FASTDDS_PLUGINS if m.find(p.encode()) < 0)
            return FastDdsSecurity(lib, missing)
    return FastDdsSecurity(None, FASTDDS_PLUGINS)
