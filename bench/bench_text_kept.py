"""Nothing lost: the share of every fetched page's text that the index holds after dedup.

Each site is crawled twice by the `docs` spider (`site` for the sentence-bank site): once with dedup
and the index off, for every page's Markdown, and once with the defaults into a fresh local store.
`harvester.dedup.coverage.text_kept` then gives, per page, the share of its sentences (8 words or
more) some stored point holds. Reported: pages, pages under 1.000 (and which), the lowest share, the mean.

Sites: `bank` (tests/servers/bank_site.py: pages written from a shared paragraph bank, a section
index, a copy group and a print view) and the public corpora of bench/bench_pipeline.py.

    .venv/bin/python bench/bench_text_kept.py [--sites bank,flask] [--model PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_pipeline import ROOTS
from harvester.dedup.coverage import text_kept
from tests.conftest import qdrant_points
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.bank_site import bank_site
from tests.servers.sitesrv import SiteServer

ALL_TEXT = {**NO_EMBEDDING, "HARVESTER_DEDUP_ENABLED": "0", "HARVESTER_AGGREGATE_SHARE": "0",
            "HARVESTER_BOILERPLATE_MODE": "off"}


def measure(spider: str, server: SiteServer, start: str, model: str | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as work:
        every = crawl(spider, server.url + start, Path(work) / "all", settings=ALL_TEXT)
        settings = {"HARVESTER_EMBEDDING_MODEL": model} if model else {}
        stored = crawl(spider, server.url + start, Path(work) / "kept", settings=settings)
        assert every.returncode == 0 and stored.returncode == 0, stored.output[-2000:]
        points = [p.payload["page_content"] for p in qdrant_points(Path(work) / "kept" / "qdrant")]
    pages = {item["url"]: item["markdown"] for item in every.items}
    shares = text_kept(pages, points)
    values = sorted(shares.values())
    return {"pages": len(values), "under_1": sum(v < 1.0 for v in values),
            "lowest": round(values[0], 3), "mean": round(sum(values) / len(values), 4),
            "pages_under_1": {url: round(v, 3) for url, v in sorted(shares.items(), key=lambda kv: kv[1]) if v < 1.0}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", default="bank")
    parser.add_argument("--model", default=None, help="embedding model folder (default: the project's)")
    options = parser.parse_args()
    for site in options.sites.split(","):
        if site == "bank":
            routes, _, start = bank_site()
            with SiteServer(routes=routes) as server:
                figures = measure("site", server, start.lstrip("/"), options.model)
        else:
            with SiteServer(root=Path(ROOTS[site])) as server:
                figures = measure("docs", server, "index.html", options.model)
        print(json.dumps({"site": site, **figures}))


if __name__ == "__main__":
    main()
