"""SROS2 for the graph (issue 32): permissions derived from the command table, the keystore made with
openssl (layout rcl reads, signatures, identities), and the plumbing that runs each node in its enclave."""
from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monologue_bringup import up
from monologue_bringup.keystore import (
    KeystoreError,
    check_identity,
    create_keystore,
    enclave_dir,
    graph_node_names,
    openssl,
    verify,
)
from monologue_bringup.keystore import main as keystore_main
from monologue_bringup.security import (
    ACTION,
    COMMANDS,
    CONTAINER,
    ENCLAVE_FILES,
    FASTDDS_PLUGINS,
    OBSERVER,
    OPERATOR,
    SERVICE,
    TOOLS,
    Command,
    enclave_name,
    enclaves,
    fastdds_security,
    grant_for,
    keystore_problems,
    permissions_xml,
)
from monologue_bringup.up import Supervisor, launch_values, security_keystore

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config"
SRC = REPO / "src"
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl tool is not installed")
NODES = ["planner", "skills", "web", "viz"]  # a small keystore: fast to make


def _may(enclave_nodes: list[str], topic: str, publish: bool = True) -> bool:
    """Whether the grant of `enclave_nodes` lets it publish (or subscribe to) the DDS topic `topic`:
    the first matching rule decides, as DDS Security evaluates a grant."""
    g = grant_for("/x", enclave_nodes)
    allow, deny = (g.allow_publish, g.deny_publish) if publish else (g.allow_subscribe, g.deny_subscribe)
    if topic in allow:
        return True
    return not any(re.fullmatch(p.replace("*", ".*"), topic) for p in deny)


# ---- permissions from the graph description ---------------------------------------------------------


def test_only_the_named_nodes_may_command() -> None:
    goal = "rq/execute_instruction/_action/send_goalRequest"
    skill = "rq/execute_skill/_action/send_goalRequest"
    assert _may(["web"], goal) and _may([OPERATOR], goal)
    assert not any(_may([n], goal) for n in ("planner", "skills", "viz", "perception", OBSERVER))
    assert _may(["planner"], skill) and not any(_may([n], skill) for n in ("web", "viz", "skills", OBSERVER))
    assert _may(["web"], "rq/estop_resetRequest") and not _may(["planner"], "rq/estop_resetRequest")
    assert not _may(["viz"], "rq/estop_resetRequest")
    assert _may(["web"], "rt/human/input") and not _may(["viz"], "rt/human/input")
    # only the server reads the requests and answers: nobody else can pose as the skills node
    assert _may(["skills"], skill, publish=False) and not _may(["viz"], skill, publish=False)
    assert _may(["skills"], "rr/execute_skill/_action/send_goalReply")
    assert not _may(["viz"], "rr/execute_skill/_action/send_goalReply")
    assert not _may(["viz"], "rt/execute_skill/_action/feedback")
    # a node's own parameters are served by it; setting another node's is the operator's
    assert _may(["skills"], "rr/skills/set_parametersReply")
    assert not _may(["planner"], "rq/skills/set_parametersRequest") and _may([OPERATOR], "rq/skills/set_parametersRequest")


def test_everything_else_stays_open_inside_the_keystore() -> None:
    """Telemetry, queries, discovery and e-stop: any member may use them (stopping is always safe)."""
    for n in ("viz", "planner", OBSERVER):
        assert _may([n], "rt/estop") and _may([n], "rt/robot/status") and _may([n], "ros_discovery_info")
        assert _may([n], "rt/scene/description", publish=False) and _may([n], "rq/describe_sceneRequest")
        assert _may([n], "rt/execute_skill/_action/feedback", publish=False)  # the web page shows it


def test_the_container_holds_every_nodes_rights_and_no_tools() -> None:
    every = graph_node_names(CONFIG)
    made = enclaves(every)
    assert set(made) == {enclave_name(n) for n in every} | {enclave_name(CONTAINER)} | {enclave_name(t) for t in TOOLS}
    held = list(made[enclave_name(CONTAINER)])
    assert set(held) == set(every)
    assert _may(held, "rq/execute_instruction/_action/send_goalRequest")  # it holds the web node
    assert not _may(held, "rq/sim/resetRequest")  # the operator's only


def test_the_command_table_names_real_nodes_and_interfaces() -> None:
    """A renamed node or interface would silently leave a surface unguarded or a node locked out."""
    nodes = set(graph_node_names(CONFIG)) | set(TOOLS)
    sources = "\n".join(p.read_text(errors="replace") for p in SRC.glob("*/*/**/*.py") if "/test/" not in str(p))
    approval = re.search(r"approval_action:\s*(\S+)", (CONFIG / "monologue.yaml").read_text())
    assert approval is not None
    for c in COMMANDS:
        assert c.writers | c.readers <= nodes, c
        assert c.writers or not c.guard_servers, c
        if "*" in c.name:
            continue
        name = c.name.lstrip("/")
        assert f'"{name}"' in sources or name == approval.group(1), f"{c.name} is used nowhere in src/"


def test_request_and_server_topics_follow_ros_naming() -> None:
    act = Command(ACTION, "/a/b", frozenset({"x"}))
    assert act.request_topics() == ("rq/a/b/_action/send_goalRequest", "rq/a/b/_action/cancel_goalRequest",
                                    "rq/a/b/_action/get_resultRequest")
    assert "rt/a/b/_action/status" in act.server_topics() and "rr/a/b/_action/get_resultReply" in act.server_topics()
    srv = Command(SERVICE, "/s", frozenset({"x"}))
    assert (srv.request_topics(), srv.server_topics()) == (("rq/sRequest",), ("rr/sReply",))


def test_permissions_document_rule_order_and_validity() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    root = ET.fromstring(permissions_xml(grant_for("/monologue/viz", ["viz"]), 84, start, 30))
    grant = root.find("permissions/grant")
    assert grant is not None and grant.get("name") == "/monologue/viz"
    assert grant.findtext("subject_name") == "CN=/monologue/viz"
    assert (grant.findtext("validity/not_before"), grant.findtext("validity/not_after")) == (
        "2026-01-01T00:00:00", "2026-01-31T00:00:00")
    rules = [e for e in grant if e.tag in ("allow_rule", "deny_rule")]
    # viz holds no command: the DENY on every guarded topic comes before the catch-all ALLOW
    assert [r.tag for r in rules] == ["deny_rule", "allow_rule"]
    assert all(r.findtext("domains/id") == "84" for r in rules)
    denied = {t.text for t in rules[0].iter("topic")}
    assert "rq/execute_instruction/_action/send_goalRequest" in denied and "rq/estop_resetRequest" in denied
    assert [t.text for t in rules[1].iter("topic")] == ["*", "*"]
    assert grant.findtext("default") == "DENY"


# ---- the keystore (openssl) -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keystore(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl tool is not installed")
    root = tmp_path_factory.mktemp("keystore")
    create_keystore(root, NODES, 84, days=30)
    return root


@needs_openssl
def test_layout_is_the_one_rcl_reads(keystore: Path) -> None:
    assert keystore_problems(keystore, NODES + [CONTAINER, OPERATOR, OBSERVER]) == []
    for f in ("public/ca.cert.pem", "public/identity_ca.cert.pem", "public/permissions_ca.cert.pem",
              "private/identity_ca.key.pem", "private/permissions_ca.key.pem", "enclaves/governance.p7s"):
        assert (keystore / f).is_file(), f
    d = enclave_dir(keystore, "/monologue/planner")
    assert d == keystore / "enclaves" / "monologue" / "planner"
    assert sorted(p.name for p in d.iterdir() if p.name in ENCLAVE_FILES) == sorted(ENCLAVE_FILES)
    assert (d / "key.pem").stat().st_mode & 0o077 == 0 and (keystore / "private" / "ca.key.pem").stat().st_mode & 0o077 == 0
    assert "BEGIN PRIVATE KEY" in (d / "key.pem").read_text()
    assert "ASN1 OID: prime256v1" in openssl("x509", "-in", str(d / "cert.pem"), "-noout", "-text")
    problems = keystore_problems(keystore, ["perception"])
    assert len(problems) == 1 and "/monologue/perception" in problems[0]
    assert "not a keystore" in keystore_problems(keystore / "nope", ["planner"])[0]


@needs_openssl
def test_documents_are_signed_by_the_permissions_ca(keystore: Path, tmp_path: Path) -> None:
    d = enclave_dir(keystore, "/monologue/web")
    assert verify(keystore, d / "permissions.p7s") == (d / "permissions.xml").read_text()
    gov = verify(keystore, keystore / "enclaves" / "governance.p7s")
    assert "<allow_unauthenticated_participants>false" in gov and "<id>84</id>" in gov
    assert "<data_protection_kind>ENCRYPT" in gov
    forged = tmp_path / "forged.p7s"  # a grant widened after signing is rejected
    forged.write_text((d / "permissions.p7s").read_text().replace("<default>DENY</default>",
                                                                  "<default>ALLOW</default>"))
    with pytest.raises(KeystoreError):
        verify(keystore, forged)


@needs_openssl
def test_identities_chain_to_the_ca_and_name_their_enclave(keystore: Path, tmp_path: Path) -> None:
    for n in NODES + [CONTAINER, OPERATOR]:
        check_identity(keystore, enclave_name(n))
    stranger = tmp_path / "stranger"  # a keystore of its own: its certificates mean nothing here
    create_keystore(stranger, ["viz"], 84, days=1)
    shutil.copy(enclave_dir(stranger, "/monologue/viz") / "cert.pem", tmp_path / "cert.pem")
    with pytest.raises(KeystoreError):
        openssl("verify", "-CAfile", str(keystore / "public" / "identity_ca.cert.pem"), str(tmp_path / "cert.pem"))


@needs_openssl
def test_rerun_keeps_keys_and_rotate_renews_them(tmp_path: Path) -> None:
    root = tmp_path / "ks"
    create_keystore(root, ["viz"], 5, days=2)
    key = (enclave_dir(root, "/monologue/viz") / "key.pem").read_text()
    ca = (root / "public" / "ca.cert.pem").read_text()
    create_keystore(root, ["viz"], 6, days=2)
    assert (enclave_dir(root, "/monologue/viz") / "key.pem").read_text() == key
    assert "<id>6</id>" in verify(root, enclave_dir(root, "/monologue/viz") / "permissions.p7s")
    create_keystore(root, ["viz"], 6, days=2, rotate=True)
    assert (enclave_dir(root, "/monologue/viz") / "key.pem").read_text() != key
    assert (root / "public" / "ca.cert.pem").read_text() == ca
    check_identity(root, "/monologue/viz")


@needs_openssl
def test_cli_makes_every_nodes_enclave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert keystore_main([str(tmp_path / "ks"), "--domain", "7", "--days", "3", "--config-dir", str(CONFIG)]) == 0
    assert "secure:=true keystore:=" in capsys.readouterr().out
    assert keystore_problems(tmp_path / "ks", graph_node_names(CONFIG)) == []


# ---- running secured --------------------------------------------------------------------------------


def test_fastdds_probe_reads_the_plugin_names(tmp_path: Path) -> None:
    (tmp_path / "with").mkdir()
    (tmp_path / "with" / "libfastdds.so.3.1").write_bytes(b"\0".join(p.encode() for p in FASTDDS_PLUGINS))
    (tmp_path / "without").mkdir()
    (tmp_path / "without" / "libfastrtps.so.2.14.5").write_bytes(b"security is disabled\0builtin.SQLITE3")
    assert fastdds_security(dirs=[tmp_path / "with"]).available
    probe = fastdds_security(dirs=[tmp_path / "without"])
    assert not probe.available and probe.missing == FASTDDS_PLUGINS and "-DSECURITY=OFF" in probe.explain()
    assert fastdds_security(dirs=[tmp_path]).library is None
    print(fastdds_security().explain())  # the installed one, for the log


def test_security_arguments() -> None:
    values, _ = launch_values(["secure:=true", "keystore:=/k"])
    assert security_keystore(values) == Path("/k")
    assert security_keystore(launch_values([])[0]) is None
    with pytest.raises(ValueError, match="needs keystore"):
        security_keystore(launch_values(["secure:=true"])[0])
    with pytest.raises(ValueError, match="needs secure:=true"):
        security_keystore(launch_values(["keystore:=/k"])[0])
    with pytest.raises(ValueError, match="not one of"):
        launch_values(["secure:=maybe"])


def test_monologue_up_refuses_instead_of_running_open(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    started: list[object] = []

    def run(sup: object, *_: object) -> int:
        started.append(sup)
        return 0

    monkeypatch.setattr(up, "run_until_signal", run)
    assert up.main(["secure:=true"]) == 2
    assert up.main([f"keystore:={tmp_path}"]) == 2
    monkeypatch.setattr(up, "middleware_security_error", lambda: "no plug-ins")
    assert up.main(["robot:=sim_kinematic", "secure:=true", f"keystore:={tmp_path}"]) == 2
    assert "no plug-ins" in capsys.readouterr().err
    monkeypatch.setattr(up, "middleware_security_error", lambda: None)
    assert up.main(["robot:=sim_kinematic", "secure:=true", f"keystore:={tmp_path}"]) == 2  # no enclaves
    assert "not a keystore" in capsys.readouterr().err
    assert started == []
    monkeypatch.undo()
    assert up.middleware_security_error({"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}) is None  # its own checks


@needs_openssl
def test_each_process_runs_in_its_enclave(keystore: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(up, "executable_path", lambda spec: Path("/bin") / spec.executable)
    sup = Supervisor("sim_kinematic", "embedded", CONFIG, nodes=["planner", "skills"], keystore=keystore,
                     env={"ROS_SECURITY_ENCLAVE_OVERRIDE": "/monologue/operator"})  # a tool's, inherited
    cmds = sup.commands()
    assert cmds["planner"][-2:] == ["--enclave", "/monologue/planner"]
    assert cmds["skills"][-2:] == ["--enclave", "/monologue/skills"]
    assert sup.env["ROS_SECURITY_KEYSTORE"] == str(keystore.resolve())
    assert (sup.env["ROS_SECURITY_ENABLE"], sup.env["ROS_SECURITY_STRATEGY"]) == ("true", "Enforce")
    assert "ROS_SECURITY_ENCLAVE_OVERRIDE" not in sup.env
    with pytest.raises(ValueError, match="/monologue/perception"):
        Supervisor("sim_kinematic", "embedded", CONFIG, nodes=["perception"], keystore=keystore)
    open_run = Supervisor("sim_kinematic", "embedded", CONFIG, nodes=["planner"], env={})
    assert "--enclave" not in open_run.commands()["planner"] and "ROS_SECURITY_ENABLE" not in open_run.env


@needs_openssl
def test_an_in_process_graph_is_one_enclave(keystore: Path) -> None:
    from monologue_bringup.graph_run import GraphRun

    class InProcess(GraphRun):
        in_process = True

    run = InProcess("sim_kinematic", "embedded", CONFIG, nodes=["planner", "perception"], keystore=keystore)
    assert run.env["ROS_SECURITY_ENCLAVE_OVERRIDE"] == "/monologue/container"
