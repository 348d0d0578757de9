"""Real proxy servers on loopback for tests: proxy.py (HTTP with CONNECT, also over TLS) and pproxy (SOCKS5).

Both run as subprocesses of the test and log every connection they relay, so a test can tell
which targets went through the proxy.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Self


def free_port(host: str = "127.0.0.1") -> int:
    # pproxy cannot listen on port 0 and report it; a just-freed port is the usual stand-in.
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def self_signed(workdir: Path, address: str) -> tuple[Path, Path]:
    """A self-signed certificate for an IP address, and its key (PEM files): trust the certificate
    with ``SSL_CERT_FILE``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = workdir / f"{address}.crt", workdir / f"{address}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


class ProxyServer:
    """``ProxyServer("http", workdir)`` (proxy.py), ``ProxyServer("https", workdir)`` (proxy.py over
    TLS, its certificate in ``cert_file``) or ``ProxyServer("socks5", workdir)`` (pproxy); a context manager. ``auth="user:pass"`` makes it demand credentials; ``host`` is the loopback
    address it listens on."""

    def __init__(self, kind: str, workdir: Path, auth: str | None = None, host: str = "127.0.0.1") -> None:
        self.kind = kind
        self.host = host
        self.workdir = workdir
        self.auth = auth
        self.port = 0
        self.log_path = workdir / f"{kind}-proxy-{id(self)}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.cert_file: Path | None = None

    @property
    def url(self) -> str:
        credentials = f"{self.auth}@" if self.auth else ""
        return f"{self.kind}://{credentials}{self.host}:{self.port}"

    def __enter__(self) -> Self:
        log = self.log_path.open("wb")
        if self.kind in ("http", "https"):
            port_file = self.workdir / f"proxy-port-{id(self)}"
            command = [sys.executable, "-m", "proxy", "--hostname", self.host, "--port", "0",
                       "--port-file", str(port_file), "--num-workers", "1", "--num-acceptors", "1",
                       "--log-level", "INFO"]
            if self.auth:
                command += ["--basic-auth", self.auth]
            if self.kind == "https":
                self.cert_file, key_file = self_signed(self.workdir, self.host)
                command += ["--cert-file", str(self.cert_file), "--key-file", str(key_file)]
        elif self.kind == "socks5":
            self.port = free_port(self.host)
            credentials = f"#{self.auth}" if self.auth else ""
            command = [sys.executable, "-m", "pproxy", "-l", f"socks5://{self.host}:{self.port}{credentials}", "-v"]
        else:
            raise ValueError(self.kind)
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} proxy exited: {self.log()}")
            if self.kind != "socks5" and not self.port and port_file.exists():
                text = port_file.read_text().strip()
                self.port = int(text) if text.isdigit() else 0
            if self.port and _accepts(self.host, self.port):
                return self
            time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"{self.kind} proxy did not start: {self.log()}")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False
