"""Real proxy servers on loopback for tests: proxy.py (HTTP, with CONNECT) and pproxy (SOCKS5).

Both run as subprocesses of the test and log every connection they relay, so a test can tell
which targets went through the proxy.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    # pproxy cannot listen on port 0 and report it; a just-freed port is the usual stand-in.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ProxyServer:
    """``ProxyServer("http", workdir)`` (proxy.py) or ``ProxyServer("socks5", workdir)`` (pproxy);
    a context manager. ``auth="user:pass"`` makes it demand credentials."""

    def __init__(self, kind: str, workdir: Path, auth: str | None = None) -> None:
        self.kind = kind
        self.workdir = workdir
        self.auth = auth
        self.port = 0
        self.log_path = workdir / f"{kind}-proxy-{id(self)}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        credentials = f"{self.auth}@" if self.auth else ""
        return f"{self.kind}://{credentials}127.0.0.1:{self.port}"

    def __enter__(self) -> ProxyServer:
        log = self.log_path.open("wb")
        if self.kind == "http":
            port_file = self.workdir / f"proxy-port-{id(self)}"
            command = [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0",
                       "--port-file", str(port_file), "--num-workers", "1", "--num-acceptors", "1",
                       "--log-level", "INFO"]
            if self.auth:
                command += ["--basic-auth", self.auth]
        elif self.kind == "socks5":
            self.port = free_port()
            credentials = f"#{self.auth}" if self.auth else ""
            command = [sys.executable, "-m", "pproxy", "-l", f"socks5://127.0.0.1:{self.port}{credentials}", "-v"]
        else:
            raise ValueError(self.kind)
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} proxy exited: {self.log()}")
            if self.kind == "http" and not self.port and port_file.exists():
                text = port_file.read_text().strip()
                self.port = int(text) if text.isdigit() else 0
            if self.port and _accepts(self.port):
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


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
