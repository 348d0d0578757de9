"""Deploy to a real Scrapyd on loopback with scrapyd-deploy, schedule crawls, read what they wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest

from tests.conftest import qdrant_points, requires
from tests.crawl import REPO
from tests.servers.redisrv import free_port
from tests.servers.sites import chain_site
from tests.servers.sitesrv import SiteServer

BIN = Path(sys.executable).parent
# Imports harvester the way a Scrapyd job does: the runner activates the deployed egg first.
PROBE = """
from scrapyd.runner import project_environment
with project_environment("harvester"):
    import harvester.settings
    print(harvester.__file__)
"""
pytestmark = [pytest.mark.cli, requires(
    (BIN / "scrapyd").exists() and (BIN / "scrapyd-deploy").exists(),
    reason="scrapyd and scrapyd-client are not installed (the dev extra)",
)]


def build_egg(tmp_path: Path) -> Path:
    egg = tmp_path / "harvester.egg"
    # scrapyd-deploy --build-egg leaves its build folder behind: keep it under tmp_path.
    subprocess.run([BIN / "scrapyd-deploy", "--build-egg", str(egg)], cwd=REPO, check=True,
                   capture_output=True, timeout=300, env=dict(os.environ, TMPDIR=str(tmp_path)))
    return egg


def test_the_egg_holds_the_harvester_package_only(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_egg(tmp_path)) as egg:
        names = egg.namelist()
        entry_points = egg.read("EGG-INFO/entry_points.txt").decode()
    assert {name.split("/")[0] for name in names} == {"harvester", "EGG-INFO"}
    assert "harvester/extract/profiles/sphinx.py" in names
    assert "harvester/sites/readthedocs.toml" in names  # the shipped site profiles (package data)
    assert "[scrapy]\nsettings = harvester.settings" in entry_points


class Scrapyd:
    """A real Scrapyd in a temporary directory, configured by settings/scrapyd.conf on a free port."""

    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        conf = (REPO / "settings" / "scrapyd.conf").read_text().replace("http_port = 6800", f"http_port = {self.port}")
        assert f"http_port = {self.port}" in conf and "bind_address = 127.0.0.1" in conf
        (home / "scrapyd.conf").write_text(conf.replace("poll_interval = 5.0", "poll_interval = 0.5"))
        self.log = (home / "scrapyd.out").open("w")
        self.process = subprocess.Popen([BIN / "scrapyd"], cwd=home, env=dict(os.environ, HF_HUB_OFFLINE="1"),
                                        stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.get("daemonstatus.json")["status"] == "ok":
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("scrapyd did not start:\n" + self.output())

    def get(self, path: str, **params: str) -> dict[str, Any]:
        with urlopen(self.url + path + ("?" + urlencode(params) if params else ""), timeout=120) as reply:
            return json.load(reply)

    def schedule(self, fields: list[tuple[str, str]]) -> str:
        with urlopen(self.url + "schedule.json", data=urlencode(fields).encode(), timeout=120) as reply:
            answer = json.load(reply)
        assert answer["status"] == "ok", answer
        return answer["jobid"]

    def wait(self, job: str, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for entry in self.get("listjobs.json", project="harvester")["finished"]:
                if entry["id"] == job:
                    return entry
            time.sleep(0.5)
        raise AssertionError(f"job {job} did not finish:\n{self.output()}")

    def job_log(self, job: str) -> str:
        return (self.home / "logs" / "harvester" / "docs" / f"{job}.log").read_text()

    def output(self) -> str:
        self.log.flush()
        return (self.home / "scrapyd.out").read_text()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def scrapyd(tmp_path: Path):
    server = Scrapyd(tmp_path / "scrapyd")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.e2e
def test_deploy_schedule_and_read_a_crawl_on_scrapyd(tmp_path: Path, scrapyd: Scrapyd) -> None:
    deploy = subprocess.run(
        [BIN / "scrapyd-deploy", "env", "-p", "harvester", "-v", "e2e"], cwd=REPO, capture_output=True,
        text=True, timeout=300, env=dict(os.environ, SCRAPYD_URL=scrapyd.url), check=False,
    )
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    assert scrapyd.get("listspiders.json", project="harvester")["spiders"] == ["docs", "site", "sitemap"]
    # The job runs the egg's harvester, not a checkout (the runner activates the egg first).
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=scrapyd.home, env=dict(os.environ, SCRAPY_PROJECT="harvester"),
        capture_output=True, text=True, check=False,
    )
    assert ".egg" in probe.stdout, probe.stdout + probe.stderr

    qdrant, reports = tmp_path / "qdrant", tmp_path / "reports"
    with SiteServer(routes=chain_site()) as site:
        job = scrapyd.schedule([
            ("project", "harvester"), ("spider", "docs"),
            ("start", site.url + "docs/p1.html"), ("collection", "scrapyd_docs"),
            ("setting", f"HARVESTER_QDRANT_PATH={qdrant}"), ("setting", f"HARVESTER_REPORT_DIR={reports}"),
            ("setting", "HARVESTER_ALLOWED_HOSTS=127.0.0.1"),
            # The model's own process must start under Scrapyd's job runner too.
            ("setting", "HARVESTER_EMBEDDING_PROCESS=1"),
        ])
        bad = scrapyd.schedule([("project", "harvester"), ("spider", "docs"), ("start", "not-a-url")])
        finished = scrapyd.wait(job)
        scrapyd.wait(bad)

    log = scrapyd.job_log(job)
    assert "'finish_reason': 'finished'" in log, log[-3000:]
    assert "in a child process" in log
    items_path = scrapyd.home / "items" / "harvester" / "docs" / f"{job}.jl"
    assert finished["items_url"].endswith(f"{job}.jl")
    items = [json.loads(line) for line in items_path.read_text().splitlines()]
    expected = [f"{site.url}docs/p{i}.html" for i in range(1, 7)]
    assert sorted(item["url"] for item in items) == expected
    points = qdrant_points(qdrant, "scrapyd_docs")
    assert {point.payload["metadata"]["source_url"] for point in points} == set(expected)
    assert {point.payload["page_content"] for point in points} == {
        chunk["text"] for item in items for chunk in item["chunks"]
    }
    assert list(reports.glob("docs-*.json"))

    bad_log = scrapyd.job_log(bad)
    assert "harvester: error: invalid arguments for spider 'docs'" in bad_log
    assert "not-a-url" in bad_log
    assert "exitstatus=2" in scrapyd.output()
