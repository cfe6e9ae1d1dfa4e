"""`monologue-keystore` (alias `monologue-keys`): an SROS2 keystore for the graph, made with openssl.

    monologue-keystore DIR [--domain N] [--days 365] [--rotate] [--config-dir DIR]

Lays out DIR as `ros2 security create_keystore` / `create_enclave` do, so rcl finds it
(ROS_SECURITY_KEYSTORE=DIR):
    public/ca.cert.pem (identity_ca.cert.pem, permissions_ca.cert.pem link to it)
    private/ca.key.pem (identity_ca.key.pem, permissions_ca.key.pem link to it)
    enclaves/governance.xml, governance.p7s
    enclaves/monologue/<node>/{cert.pem, key.pem, identity_ca.cert.pem, permissions_ca.cert.pem,
                                governance.p7s, permissions.xml, permissions.p7s}
One enclave per node of every robot's graph, one for the in-process graph (container:=true) and the
tools' /monologue/operator and /monologue/observer. Permissions come from monologue_bringup.security.
COMMANDS; governance and permissions are S/MIME-signed by the CA. Re-running keeps the CA and the node
keys (unless --rotate) and rewrites and re-signs governance and permissions (new validity, new table).
Works without the sros2 package: only the openssl command-line tool is needed.
"""
from __future__ import annotations

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .graph import all_nodes, robots
from .security import enclaves, governance_xml, grant_for, permissions_xml, subject_name

CA_SUBJECT = "monologue keystore CA"
DEFAULT_DAYS = 365  # validity of certificates and permissions (days); rotate before it ends


class KeystoreError(RuntimeError):
    """openssl is missing or failed."""


def openssl(*args: str) -> str:
    """Run `openssl args...`; its stdout. KeystoreError with its stderr when it fails."""
    exe = shutil.which("openssl")
    if exe is None:
        raise KeystoreError("the openssl command-line tool is needed (Debian/Ubuntu: apt-get install openssl)")
    res = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60, check=False)
    if res.returncode != 0:
        raise KeystoreError(f"openssl {' '.join(args[:2])} failed: {res.stderr.strip()}")
    return res.stdout


def _req_config(cn: str, ca: bool) -> str:
    """An openssl req configuration: the subject (written out: an enclave name holds '/', which -subj
    would split) and the basic constraints."""
    constraints = "critical, CA:TRUE, pathlen:1" if ca else "CA:FALSE"
    return (f"[req]\ndistinguished_name = dn\nprompt = no\nx509_extensions = ext\n"
            f"[dn]\nCN = {cn}\n[ext]\nbasicConstraints = {constraints}\n")


def _private(path: Path) -> None:
    os.chmod(path, 0o600)


def _link(target: str | Path, link: Path) -> None:
    """`link` -> `target` (a relative path), replacing what was there."""
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _ec_key_args() -> list[str]:
    # DDS Security 9.3.1: ECDSA on prime256v1, SHA-256
    return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-sha256"]


def create_ca(root: Path, days: int) -> None:
    """public/ca.cert.pem and private/ca.key.pem, self-signed; identity and permissions CA link to it."""
    (root / "public").mkdir(parents=True, exist_ok=True)
    (root / "private").mkdir(parents=True, exist_ok=True)
    os.chmod(root / "private", 0o700)
    key, cert = root / "private" / "ca.key.pem", root / "public" / "ca.cert.pem"
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "ca.cnf"
        cfg.write_text(_req_config(CA_SUBJECT, ca=True))
        openssl("req", "-x509", "-new", *_ec_key_args(), "-days", str(days), "-config", str(cfg),
                "-keyout", str(key), "-out", str(cert))
    _private(key)
    for role in ("identity_ca", "permissions_ca"):
        _link("ca.cert.pem", root / "public" / f"{role}.cert.pem")
        _link("ca.key.pem", root / "private" / f"{role}.key.pem")


def create_identity(root: Path, enclave: str, days: int) -> None:
    """enclaves/<enclave>/key.pem and cert.pem (subject CN=<enclave>), signed by the identity CA."""
    d = enclave_dir(root, enclave)
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cfg, csr = Path(tmp) / "req.cnf", Path(tmp) / "req.csr"
        cfg.write_text(_req_config(enclave, ca=False))
        openssl("req", "-new", *_ec_key_args(), "-config", str(cfg), "-keyout", str(d / "key.pem"), "-out", str(csr))
        openssl("x509", "-req", "-in", str(csr), "-CA", str(root / "public" / "identity_ca.cert.pem"),
                "-CAkey", str(root / "private" / "identity_ca.key.pem"), "-set_serial", f"0x{secrets.token_hex(16)}",
                "-days", str(days), "-sha256", "-extfile", str(cfg), "-extensions", "ext", "-out", str(d / "cert.pem"))
    _private(d / "key.pem")


def sign(root: Path, document: Path, signed: Path) -> None:
    """`signed`: `document` as clear-signed S/MIME (text/plain) by the permissions CA, as DDS Security reads it."""
    openssl("smime", "-sign", "-text", "-md", "sha256", "-in", str(document), "-out", str(signed),
            "-signer", str(root / "public" / "permissions_ca.cert.pem"),
            "-inkey", str(root / "private" / "permissions_ca.key.pem"))


def verify(root: Path, signed: Path) -> str:
    """The document `signed` holds, once its signature checks against the permissions CA."""
    text = openssl("smime", "-verify", "-text", "-in", str(signed), "-CAfile",
                   str(root / "public" / "permissions_ca.cert.pem"))
    return text.replace("\r\n", "\n")


def enclave_dir(root: Path, enclave: str) -> Path:
    return root / "enclaves" / enclave.lstrip("/")


def graph_node_names(config_dir: Path | None = None) -> list[str]:
    """Every node any robot's graph may run (all modes), in first-seen order."""
    seen: dict[str, None] = {}
    for r in robots(config_dir):
        seen.update((s.name, None) for s in all_nodes(r, config_dir))
    return list(seen)


def create_keystore(root: Path, node_names: Iterable[str], domain_id: int, days: int = DEFAULT_DAYS,
                    rotate: bool = False, now: datetime | None = None) -> dict[str, tuple[str, ...]]:
    """Create or refresh the keystore at `root` for `node_names`; {enclave: nodes it holds}."""
    root = Path(root)
    now = now or datetime.now(UTC) - timedelta(days=1)  # a day back: clocks differ between hosts
    if not (root / "private" / "ca.key.pem").is_file():
        create_ca(root, days)
    gov = root / "enclaves" / "governance.xml"
    gov.parent.mkdir(parents=True, exist_ok=True)
    gov.write_text(governance_xml(domain_id))
    sign(root, gov, root / "enclaves" / "governance.p7s")
    made = enclaves(node_names)
    for enclave, nodes in made.items():
        d = enclave_dir(root, enclave)
        if rotate or not (d / "key.pem").is_file() or not (d / "cert.pem").is_file():
            create_identity(root, enclave, days)
        for name in ("identity_ca.cert.pem", "permissions_ca.cert.pem"):
            _link(os.path.relpath(root / "public" / name, d), d / name)
        _link(os.path.relpath(root / "enclaves" / "governance.p7s", d), d / "governance.p7s")
        (d / "permissions.xml").write_text(permissions_xml(grant_for(enclave, nodes), domain_id, now, days))
        sign(root, d / "permissions.xml", d / "permissions.p7s")
    return made


def certificate_subject(cert: Path) -> str:
    """`CN=...` of a certificate, as openssl prints it (RFC 2253)."""
    out = openssl("x509", "-in", str(cert), "-noout", "-subject", "-nameopt", "RFC2253")
    return out.strip().removeprefix("subject=")


def check_identity(root: Path, enclave: str) -> None:
    """KeystoreError unless the enclave's certificate chains to the identity CA and names the enclave."""
    d = enclave_dir(root, enclave)
    openssl("verify", "-CAfile", str(root / "public" / "identity_ca.cert.pem"), str(d / "cert.pem"))
    if certificate_subject(d / "cert.pem") != subject_name(enclave):
        raise KeystoreError(f"{d / 'cert.pem'} does not name {subject_name(enclave)}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="monologue-keystore", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("keystore", type=Path, help="keystore directory (created if missing)")
    ap.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "0") or 0),
                    help="ROS domain the governance and permissions cover (default: ROS_DOMAIN_ID or 0)")
    ap.add_argument("--days", type=int, default=DEFAULT_DAYS, help="validity of certificates and permissions (days)")
    ap.add_argument("--rotate", action="store_true", help="new keys and certificates for every enclave (same CA)")
    ap.add_argument("--config-dir", type=Path, default=None, help="config directory whose robot table lists the nodes")
    ns = ap.parse_args(argv)
    try:
        made = create_keystore(ns.keystore, graph_node_names(ns.config_dir), ns.domain, ns.days, ns.rotate)
    except (KeystoreError, ValueError) as e:
        print(f"monologue-keystore: {e}", file=sys.stderr)
        return 1
    print(f"keystore {ns.keystore.resolve()}: domain {ns.domain}, {len(made)} enclaves "
          f"({', '.join(sorted(made))}); valid {ns.days} days")
    print(f"run the graph with: monologue-up secure:=true keystore:={ns.keystore.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
