"""Benchmark: what a re-crawl costs when little or nothing changed.

In one run, on a copy of a Debian doc site served on loopback with ETags (default: the Flask docs):
  1. a first crawl into a fresh local Qdrant (every chunk embedded);
  2. a second crawl of the unchanged site (conditional requests: every page answers 304);
  3. a third crawl after one paragraph of three pages was edited.
Each crawl is a real ``scrapy crawl`` process; its wall time and CPU time (user + system, from
``getrusage`` of the children) are measured from outside, start-up included. Prints the ratios of
crawl 2 to crawl 1, the chunks embedded by crawls 2 and 3, and the chunks that crawl 3 had to
embed (point ids in the index after it that were not there before).

    .venv/bin/python bench/bench_recrawl.py [--corpus flask] [--spider docs] [--json-out F]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_pipeline import ROOTS
from tests.conftest import qdrant_points
from tests.crawl import cli_crawl as crawl
from tests.servers.sitesrv import SiteServer


def timed_crawl(spider: str, url: str, work: Path) -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = crawl(spider, url, work)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode == 0, result.output[-3000:]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    recrawl = result.report["recrawl"]
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "pages_stored": result.report["pages_stored"],
            "chunks_embedded": recrawl["chunks_embedded"], "chunks_reused": recrawl["chunks_reused"],
            **{k: recrawl[k] for k in ("new", "updated", "unchanged_304", "unchanged_hash", "deleted", "pruned")}}


def edit_pages(root: Path, count: int) -> list[str]:
    """Append a sentence to the first paragraph of the ``count`` largest content pages."""
    pages = sorted((p for p in root.rglob("*.html") if "_modules" not in p.parts and "genindex" not in p.name),
                   key=lambda p: p.stat().st_size, reverse=True)
    edited = []
    for page in pages:
        html = page.read_text(encoding="utf-8")
        changed, n = re.subn(r"(<p>)", r"\1Edited for the re-crawl benchmark. ", html, count=1)
        if n:
            page.write_text(changed, encoding="utf-8")
            edited.append(str(page.relative_to(root)))
        if len(edited) == count:
            return edited
    return edited


def point_ids(work: Path) -> set[str]:
    return {str(p.id) for p in qdrant_points(work / "qdrant")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="flask", choices=sorted(ROOTS))
    parser.add_argument("--spider", default="docs", choices=["docs", "site", "sitemap"])
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results: dict[str, object] = {"corpus": args.corpus, "spider": args.spider, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "site"
        shutil.copytree(ROOTS[args.corpus], root)
        work = Path(tmp) / "work"
        with SiteServer(root=root, validators=True) as server:
            results["first"] = first = timed_crawl(args.spider, server.url, work)
            results["second_unchanged"] = second = timed_crawl(args.spider, server.url, work)
            before = point_ids(work)
            results["edited_pages"] = edit_pages(root, 3)
            results["third_three_edited"] = third = timed_crawl(args.spider, server.url, work)
            after = point_ids(work)
    results["ratio_wall_second_over_first"] = round(second["wall_s"] / first["wall_s"], 3)
    results["ratio_cpu_second_over_first"] = round(second["cpu_s"] / first["cpu_s"], 3)
    results["third_new_point_ids"] = len(after - before)
    results["third_removed_point_ids"] = len(before - after)
    print(json.dumps(results, indent=1))
    ok = (results["ratio_wall_second_over_first"] <= 0.10 and results["ratio_cpu_second_over_first"] <= 0.10
          and second["chunks_embedded"] == 0 and third["chunks_embedded"] == len(after - before))
    print("targets met" if ok else "targets NOT met")
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
