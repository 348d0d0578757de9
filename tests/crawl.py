"""Crawls for tests, with isolated storage: ``crawl`` runs one in the test process (tests/inprocess.py),
exactly as ``scrapy crawl`` would; ``cli_crawl`` and ``run_scrapy`` run the real ``scrapy`` command in a
subprocess, for what only a process shows (exit codes of the command line, signals, memory, Scrapyd)."""

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


def scrapy_command(args: list[str], workdir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``run_scrapy`` for commands that start no crawler (``search``), run in this process."""
    from tests.inprocess import run_command

    returncode, stdout, stderr = run_command(args, scrapy_env(workdir, **env))
    return subprocess.CompletedProcess(["scrapy", *args], returncode, stdout, stderr)


def _command(spider: str, start: str, workdir: Path, settings: dict[str, Any] | None,
             args: dict[str, Any] | None, feed: str) -> tuple[dict[str, Any], dict[str, Any], Path]:
    spargs = {"start": start, **{name: str(value) for name, value in (args or {}).items()}}
    return spargs, {name: str(value) for name, value in (settings or {}).items()}, workdir / feed


def _result(spider: str, workdir: Path, feed_path: Path, returncode: int, output: str) -> CrawlResult:
    items = [json.loads(line) for line in feed_path.read_text().splitlines()] if feed_path.exists() else []
    reports = sorted((workdir / "reports").glob(f"{spider}-*.json"))
    report = json.loads(reports[-1].read_text()) if reports else None
    return CrawlResult(returncode, output, items, report)


def crawl(spider: str, start: str, workdir: Path, *, settings: dict[str, Any] | None = None,
          args: dict[str, Any] | None = None, feed: str = "pages.jsonl", timeout: float = 600) -> CrawlResult:
    """``scrapy crawl SPIDER -a start=START -O workdir/feed`` with ``-s`` settings and ``-a`` args,
    run in this process: its exit status, log and ``harvester: error:`` line, feed and run report."""
    from tests.inprocess import run_crawl

    spargs, options, feed_path = _command(spider, start, workdir, settings, args, feed)
    returncode, output = run_crawl(spider, scrapy_env(workdir), options, spargs, [str(feed_path)], timeout)
    return _result(spider, workdir, feed_path, returncode, output)


def cli_crawl(spider: str, start: str, workdir: Path, *, settings: dict[str, Any] | None = None,
              args: dict[str, Any] | None = None, feed: str = "pages.jsonl", timeout: float = 600) -> CrawlResult:
    """``crawl``, run as the real ``scrapy crawl`` command in a subprocess."""
    spargs, options, feed_path = _command(spider, start, workdir, settings, args, feed)
    command = ["crawl", spider, "-O", str(feed_path)]
    for name, value in spargs.items():
        command += ["-a", f"{name}={value}"]
    for name, value in options.items():
        command += ["-s", f"{name}={value}"]
    process = run_scrapy(command, workdir, timeout=timeout)
    return _result(spider, workdir, feed_path, process.returncode, process.stdout + process.stderr)


NO_EMBEDDING = {"HARVESTER_EMBEDDING_ENABLED": "0", "HARVESTER_INDEX_ENABLED": "0"}
