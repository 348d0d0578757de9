"""Run the real ``scrapy`` commands in a subprocess, as a user would, with isolated storage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


@dataclass
class CrawlResult:
    returncode: int
    output: str
    items: list[dict[str, Any]]
    report: dict[str, Any] | None

    def stat(self, key: str) -> Any:
        return (self.report or {}).get(key)


def scrapy_env(workdir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HARVESTER_QDRANT_PATH=str(workdir / "qdrant"),
        HARVESTER_REPORT_DIR=str(workdir / "reports"),
        PYTHONUNBUFFERED="1",
        # The SSRF guard refuses loopback; the test sites are on 127.0.0.1 only (the canary server
        # on 127.0.0.2 must stay refused).
        HARVESTER_ALLOWED_HOSTS="127.0.0.1",
        # Any crawl may start Chromium (render mode auto): it must not resolve names of its own.
        HARVESTER_BROWSER_ARGS=json.dumps(["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]),
        **extra,
    )
    return env


def run_scrapy(args: list[str], workdir: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=REPO, env=scrapy_env(workdir, **env), capture_output=True, text=True, timeout=timeout,
    )


def crawl(spider: str, start: str, workdir: Path, *, settings: dict[str, Any] | None = None,
          args: dict[str, Any] | None = None, feed: str = "pages.jsonl", timeout: float = 600) -> CrawlResult:
    """``scrapy crawl SPIDER -a start=START -O workdir/feed`` with ``-s`` settings and ``-a`` args."""
    command = ["crawl", spider, "-a", f"start={start}", "-O", str(workdir / feed)]
    for name, value in (args or {}).items():
        command += ["-a", f"{name}={value}"]
    for name, value in (settings or {}).items():
        command += ["-s", f"{name}={value}"]
    process = run_scrapy(command, workdir, timeout=timeout)
    feed_path = workdir / feed
    items = [json.loads(line) for line in feed_path.read_text().splitlines()] if feed_path.exists() else []
    reports = sorted((workdir / "reports").glob(f"{spider}-*.json"))
    report = json.loads(reports[-1].read_text()) if reports else None
    return CrawlResult(process.returncode, process.stdout + process.stderr, items, report)


NO_EMBEDDING = {"HARVESTER_EMBEDDING_ENABLED": "0", "HARVESTER_INDEX_ENABLED": "0"}
