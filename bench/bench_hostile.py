"""Peak memory of a crawl of the hostile loopback site (tests/hostile.py), against a benign site.

Three crawls, each in its own ``scrapy crawl`` process, without embedding:

* benign: the six-page chain site of the tests;
* hostile: the hostile site with Harvester's defaults (DOWNLOAD_MAXSIZE 32 MiB...);
* hostile, no size cap: the same with ``DOWNLOAD_MAXSIZE=0`` (Scrapy's "no limit"), to show what
  the cap saves (``--no-uncapped`` skips it: it needs about 2 GB of memory).

Peak RSS is the crawl process's own ``ru_maxrss`` (Scrapy's ``memusage/max`` stat, sampled every
0.2 s; ``ru_maxrss`` is a high-water mark, so no peak is missed).

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.bench_hostile [--json-out FILE] [--no-uncapped]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.crawl import NO_EMBEDDING, CrawlResult
from tests.crawl import cli_crawl as crawl
from tests.servers.hostile import CASES, hostile_site
from tests.servers.sites import chain_site
from tests.servers.sitesrv import SiteServer

MIB = 1024 * 1024
SETTINGS = {**NO_EMBEDDING, "DOWNLOAD_TIMEOUT": "4", "RETRY_TIMES": "0", "HARVESTER_CRAWL_DELAY_ENABLED": "0",
            "MEMUSAGE_CHECK_INTERVAL_SECONDS": "0.2"}


def stat(result: CrawlResult, name: str) -> int:
    found = re.search(rf"'{re.escape(name)}': (\d+)", result.output)
    return int(found[1]) if found else 0


def measure(name: str, result: CrawlResult, requests: int) -> dict[str, Any]:
    report = result.report or {}
    return {
        "crawl": name,
        "exit": result.returncode,
        "requests_served": requests,
        "pages_stored": report.get("pages_stored"),
        "failed_by_reason": report.get("failed_by_reason"),
        "skipped_by_reason": report.get("skipped_by_reason"),
        "startup_rss_mib": round(stat(result, "memusage/startup") / MIB, 1),
        "peak_rss_mib": round(stat(result, "memusage/max") / MIB, 1),
        "elapsed_s": report.get("elapsed_seconds"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--no-uncapped", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with SiteServer(routes=chain_site()) as server:
            result = crawl("docs", server.url + "docs/p1.html", work / "benign", settings=SETTINGS)
            rows.append(measure("benign (6 pages)", result, len(server.paths())))
        runs = [("hostile, defaults", {})]
        if not args.no_uncapped:
            runs.append(("hostile, no size cap", {"DOWNLOAD_MAXSIZE": "0", "DOWNLOAD_WARNSIZE": "0"}))
        for name, extra in runs:
            routes, dynamic = hostile_site()
            with SiteServer(routes=routes, dynamic=dynamic) as server:
                result = crawl("site", server.url + "docs/", work / name.replace(" ", "_").replace(",", ""),
                               settings={**SETTINGS, **extra})
                rows.append(measure(name, result, len(server.paths())))
    print(f"hostile cases linked from the index: {len(CASES)}")
    print(f"{'crawl':24} {'exit':>4} {'served':>6} {'stored':>6} {'startup MiB':>11} {'peak MiB':>9} {'+MiB':>7}")
    for row in rows:
        growth = row["peak_rss_mib"] - row["startup_rss_mib"]
        print(f"{row['crawl']:24} {row['exit']:>4} {row['requests_served']:>6} {row['pages_stored'] or 0:>6} "
              f"{row['startup_rss_mib']:>11} {row['peak_rss_mib']:>9} {growth:>7.1f}")
    for row in rows[1:]:
        print(f"{row['crawl']}: failed {row['failed_by_reason']}, skipped {row['skipped_by_reason']}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"cases": len(CASES), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
