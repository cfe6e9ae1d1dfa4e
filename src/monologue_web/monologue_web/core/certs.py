"""monologue-web-cert: a self-signed TLS certificate and key for the web console.

    monologue-web-cert [--out DIR] [--name NAME ...] [--days N] [--backend auto|cryptography|openssl]

Writes DIR/web_cert.pem and DIR/web_key.pem (the key readable by its owner only; an ECDSA P-256 key)
for the names given (default: localhost, 127.0.0.1, ::1 and this machine's host name), then prints the
parameters that serve the console over https. It uses the Python package `cryptography` when it is
installed, else the `openssl` command; it says which. A browser does not trust a self-signed
certificate: accept it once, or import web_cert.pem as trusted (docs/web.md). No rclpy here."""
from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

BACKENDS = ("auto", "cryptography", "openssl")
CERT_NAME, KEY_NAME = "web_cert.pem", "web_key.pem"


def default_names() -> list[str]:
    names = ["localhost", "127.0.0.1", "::1"]
    host = socket.gethostname()
    if host and host not in names:
        names.append(host)
    return names


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def have_cryptography() -> bool:
    try:
        import cryptography  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def _with_cryptography(cert: Path, key: Path, names: Sequence[str], days: int) -> None:
    # optional (not in the lock file): typed when installed, absent otherwise
    from cryptography import x509  # type: ignore[import-not-found, unused-ignore]
    from cryptography.hazmat.primitives import hashes, serialization  # type: ignore[import-not-found, unused-ignore]
    from cryptography.hazmat.primitives.asymmetric import ec  # type: ignore[import-not-found, unused-ignore]
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # type: ignore[import-not-found, unused-ignore]

    private = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    alt: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(n)) if _is_ip(n) else x509.DNSName(n)
                                   for n in names]
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                   .public_key(private.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=days))
                   .add_extension(x509.SubjectAlternativeName(alt), critical=False)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                   .sign(private, hashes.SHA256()))
    _write_private(key, private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def _with_openssl(cert: Path, key: Path, names: Sequence[str], days: int) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("neither the Python package cryptography nor the openssl command is installed")
    alt = ",".join(("IP:" if _is_ip(n) else "DNS:") + n for n in names)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_key = Path(tmp) / KEY_NAME
        subprocess.run([exe, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-sha256", "-days", str(days), "-subj", f"/CN={names[0]}", "-keyout", str(tmp_key),
                        "-out", str(cert), "-addext", f"subjectAltName={alt}",
                        "-addext", "basicConstraints=critical,CA:FALSE",
                        "-addext", "extendedKeyUsage=serverAuth"],
                       check=True, capture_output=True, text=True, timeout=60)
        _write_private(key, tmp_key.read_bytes())


def _write_private(path: Path, data: bytes) -> None:
    """Write `data` to a file only its owner can read (created so; never world-readable in between)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def make_certificate(out: Path, names: Sequence[str] | None = None, days: int = 365,
                     backend: str = "auto") -> tuple[Path, Path, str]:
    """Write a self-signed certificate and key into `out`; (cert, key, backend used)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if days < 1:
        raise ValueError("days must be at least 1")
    names = list(names or default_names())
    used = ("cryptography" if have_cryptography() else "openssl") if backend == "auto" else backend
    out.mkdir(parents=True, exist_ok=True)
    cert, key = out / CERT_NAME, out / KEY_NAME
    (_with_cryptography if used == "cryptography" else _with_openssl)(cert, key, names, days)
    check_tls(cert, key)
    return cert, key, used


def check_tls(cert: Path, key: Path) -> None:
    """ValueError unless `cert` and `key` are a matching PEM pair a TLS server can load."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"cannot serve TLS with {cert} and {key}: {e}") from e


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="monologue-web-cert", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("~/.ros/monologue/web_tls").expanduser(),
                        help="directory for web_cert.pem and web_key.pem (default: %(default)s)")
    parser.add_argument("--name", action="append", default=[],
                        help=f"a DNS name or IP address of the robot PC (repeat; default: "
                             f"{', '.join(default_names())})")
    parser.add_argument("--days", type=int, default=365, help="validity in days (default: %(default)s)")
    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="cryptography (the Python package) or openssl (the command); auto: the package if "
                             "installed")
    args = parser.parse_args(argv)
    cert, key, used = make_certificate(args.out, args.name or None, args.days, args.backend)
    print(f"wrote {cert} and {key} (made with {used}; self-signed, valid {args.days} days, "
          f"names: {', '.join(args.name or default_names())})")
    print("serve the console over https with:")
    print(f"  monologue-up web:=true --param web:tls_cert={cert} --param web:tls_key={key}")
    print(f"or in config/monologue.yaml, section web: tls_cert: {cert}  tls_key: {key}")


if __name__ == "__main__":
    main()
