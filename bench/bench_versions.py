"""Many versions of one docs site: what a crawl of 20 near-identical copies costs against one copy.

A generated site on loopback serves Debian's Django docs (``python-django-doc``, 534 pages) under
``/en/<version>/`` for each of ``--copies`` versions (1.0, 1.1, ...). In every version but the
first, 70% of the pages carry one more paragraph naming the version (near duplicates of the other
versions' pages); the rest are the same bytes (their Markdown still differs: its links point
into each version's folder). A root page links each version's index. Harvester's ``site`` spider crawls it as
``bench_crawl.py`` does (crawl + extract + dedup + chunk; embedding and the index off), once with
one copy and once with all (AutoThrottle off in both, for speed; ``HARVESTER_VERSIONS_APART`` on),
each in a child process: CPU (user + sys, ``os.wait4``) per fetched
page and peak RSS. Targets: CPU per page within 1.2x of one copy's, peak RSS within 1.5x.

    .venv/bin/python bench/bench_versions.py [--copies 20] --json-out bench/results/versions.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_crawl import NO_EMBEDDING, compile_bytecode, crawl_harvester

ROOT = "/usr/share/doc/python-django-doc/html"
CPU_TARGET, RSS_TARGET = 1.2, 1.5
# The same for both crawls: no AutoThrottle delays, so that 10,000 loopback pages take minutes.
FAST = {**NO_EMBEDDING, "AUTOTHROTTLE_ENABLED": "0", "HARVESTER_VERSIONS_APART": "1"}
SERVE = """
import hashlib, sys, time
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from tests.servers.sitesrv import Route, SiteServer

COPIES = int(sys.argv[2])
VERSIONS = [f"{1 + i // 10}.{i % 10}" for i in range(COPIES)]


class Versions(SiteServer):
    def resolve(self, path, full_path=None):
        if path in ("/", "/index.html"):
            links = "".join(f'<li><a href="/en/{v}/index.html">Django docs {v}</a></li>' for v in VERSIONS)
            return Route(f"<html><head><title>Versions</title></head><body><h1>Versions</h1><ul>{links}</ul>"
                         "</body></html>", headers={"Content-Type": "text/html; charset=utf-8"})
        parts = path.split("/", 3)
        if len(parts) < 4 or parts[1] != "en" or parts[2] not in VERSIONS:
            return super().resolve("/missing")
        version, rest = parts[2], "/" + parts[3]
        route = super().resolve(rest)
        body = route.body if isinstance(route.body, bytes) else route.body.encode()
        changed = hashlib.sha1(f"{version}{rest}".encode()).digest()[0] < 179  # 70%
        if version != VERSIONS[0] and changed and route.status == 200 and rest.endswith(".html"):
            # Under the page's own title (its second h1: the first is the site's header), where a
            # release changes a page.
            at = body.find(b"</h1>", body.find(b"</h1>") + 1)
            if at >= 0:
                note = f"<p>Changed in version {version}: this page was revised for release {version}.</p>"
                body = body[:at + 5] + note.encode() + body[at + 5:]
            return Route(body, route.status, route.headers)
        return route


with Versions(root=Path(sys.argv[1])) as server:
    print(server.url, flush=True)
    while True:
        time.sleep(3600)
"""


def serve(copies: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", SERVE, ROOT, str(copies), str(REPO)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def run(copies: int, work: Path, timeout: float) -> dict[str, Any]:
    process, url = serve(copies)
    try:
        result = crawl_harvester(url + "index.html", work / f"copies-{copies}", timeout, FAST)
    finally:
        process.terminate()
        process.wait()
    probe = json.loads((work / f"copies-{copies}" / "probe.json").read_text())
    stats = probe["stats"]
    result["stored"] = result["pages"]
    result["pages"] = result["responses"]
    result["cpu_ms_per_fetched_page"] = round(result["cpu_s"] * 1000 / max(1, result["responses"]), 1)
    result["shared_with_version"] = int(stats.get("harvester/dedup/shared_with_version", 0))
    result["near_duplicates"] = int(stats.get("harvester/dedup/near_duplicates", 0))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--json-out", type=Path)
    opts = parser.parse_args()
    if not Path(ROOT).is_dir():
        sys.exit(f"{ROOT} is missing: apt-get install python-django-doc")
    compile_bytecode()
    # The tree measured: the commit when the crawls start.
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as tmp:
        one = run(1, Path(tmp), opts.timeout)
        many = run(opts.copies, Path(tmp), opts.timeout)
    for result in (one, many):
        result.pop("feed", None)
    cpu_ratio = round(many["cpu_ms_per_fetched_page"] / one["cpu_ms_per_fetched_page"], 2)
    rss_ratio = round(many["peak_rss_mib"] / one["peak_rss_mib"], 2)
    results = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit,
        "cpus": os.cpu_count(), "copies": opts.copies, "one_copy": one, "many_copies": many,
        "cpu_per_page_ratio": cpu_ratio, "peak_rss_ratio": rss_ratio,
        "targets": {"cpu_per_page_ratio": CPU_TARGET, "peak_rss_ratio": RSS_TARGET},
        "targets_met": cpu_ratio <= CPU_TARGET and rss_ratio <= RSS_TARGET,
    }
    print(json.dumps({key: results[key] for key in ("copies", "cpu_per_page_ratio", "peak_rss_ratio", "targets_met")}))
    for name in ("one_copy", "many_copies"):
        r = results[name]
        print(f"{name}: {r['pages']} pages fetched, {r['stored']} stored, {r['cpu_ms_per_fetched_page']} CPU ms/page, "
              f"peak RSS {r['peak_rss_mib']} MiB, wall {r['wall_s']} s, stages {r['stage_ms_per_page']}")
    if opts.json_out:
        opts.json_out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
