"""Nothing lost: the share of every fetched page's text that the index holds after dedup.

Each site is crawled twice by the `docs` spider (`site` for the sentence-bank site): once with dedup
and the index off, for every page's Markdown, and once with the defaults into a fresh local store.
`harvester.dedup.coverage.text_kept` then gives, per page, the share of its sentences (8 words or
more) some stored point holds (its context line and text, as embedded and indexed). Reported: pages, pages under 1.000 (and which), the lowest share, the mean.

Sites: `bank` (tests/servers/bank_site.py: pages written from a shared paragraph bank, a section
index, a copy group and a print view) and Debian's docs packages that bench/bench_pipeline.py and
bench/bench_crawl.py know (flask, requests, scrapy, python, django). The index is embedded with the
tiny test embedder (tests/tinymodel.py: the real model's tokenizer, so the same chunks) unless
`--model` names another: vectors do not matter here.

    .venv/bin/python bench/bench_text_kept.py [--sites bank,flask] [--model PATH] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_crawl import SITES
from bench.bench_pipeline import ROOTS
from harvester.dedup.coverage import point_text, text_kept
from tests.conftest import qdrant_points
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.bank_site import bank_site
from tests.servers.sitesrv import SiteServer
from tests.tinymodel import build_tiny_model

ALL_TEXT = {**NO_EMBEDDING, "HARVESTER_DEDUP_ENABLED": "0", "HARVESTER_AGGREGATE_SHARE": "0",
            "HARVESTER_BOILERPLATE_MODE": "off"}
DOCS = {**ROOTS, **{name: site["root"] for name, site in SITES.items()}}


def measure(spider: str, server: SiteServer, start: str, model: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as work:
        every = crawl(spider, server.url + start, Path(work) / "all", settings=ALL_TEXT)
        stored = crawl(spider, server.url + start, Path(work) / "kept", settings={"HARVESTER_EMBEDDING_MODEL": model})
        assert every.returncode == 0 and stored.returncode == 0, stored.output[-2000:]
        points = [point_text(p.payload) for p in qdrant_points(Path(work) / "kept" / "qdrant")]
    pages = {item["url"]: item["markdown"] for item in every.items}
    shares = text_kept(pages, points)
    values = sorted(shares.values())
    # Paths, not URLs: the server's port changes from run to run.
    under = {url.removeprefix(server.url): round(v, 3)
             for url, v in sorted(shares.items(), key=lambda kv: kv[1]) if v < 1.0}
    return {"pages_fetched": len(pages), "pages": len(values), "points": len(points), "under_1": len(under),
            "lowest": round(values[0], 3), "mean": round(sum(values) / len(values), 4), "pages_under_1": under}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", default="bank", help=f"comma-separated: bank, {', '.join(sorted(DOCS))}")
    parser.add_argument("--model", default=None, help="embedding model folder (default: the tiny test embedder)")
    parser.add_argument("--json-out", type=Path, help="write the figures of every site here")
    options = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as models:
        model = options.model or str(build_tiny_model(Path(models) / "tiny"))
        for site in options.sites.split(","):
            if site == "bank":
                routes, _, start = bank_site()
                with SiteServer(routes=routes) as server:
                    figures = measure("site", server, start.lstrip("/"), model)
            else:
                with SiteServer(root=Path(DOCS[site])) as server:
                    figures = measure("docs", server, "index.html", model)
            results.append({"site": site, **figures})
            print(json.dumps(results[-1]), flush=True)
    if options.json_out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, check=True,
                                text=True).stdout.strip()
        options.json_out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "commit": commit,
                                                "model": options.model or "tiny", "sites": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
