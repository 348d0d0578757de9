"""A throwaway ``redis-server`` on loopback for the cluster tests: no persistence, a free port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import missing_prerequisite


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            missing_prerequisite("redis-server is missing: apt-get install redis-server (scripts/bootstrap.sh --test)")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(workdir), "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=10)


@pytest.fixture
def redis_server(tmp_path: Path):
    server = RedisServer(tmp_path)
    try:
        yield server
    finally:
        server.stop()
