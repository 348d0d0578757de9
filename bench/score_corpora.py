"""Crawl the public corpora with each spider (embedding off) and score the feeds with ../shared/eval.

    .venv/bin/python bench/score_corpora.py [--corpora flask,requests,scrapy] [--spiders docs,site,sitemap]

Prints one Markdown table row per corpus and spider; also trafilatura's own baseline when
--baseline is given (the scorer's baseline.py, no crawler).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_pipeline import EVAL, ROOTS
from tests.crawl import NO_EMBEDDING
from tests.crawl import cli_crawl as crawl
from tests.servers.sites import sitemap_index
from tests.servers.sitesrv import SiteServer

COLUMNS = ("coverage", "recall_med", "recall_p10", "precision_med", "code", "headings", "tables", "leakage",
           "junk", "pages_s")


def score(corpus: str, feed: Path) -> dict:
    process = subprocess.run([sys.executable, str(EVAL / "score.py"), corpus, str(feed)],
                             capture_output=True, text=True, check=True)
    return json.loads([line for line in process.stdout.splitlines() if line.startswith("{")][-1])


def row(corpus: str, spider: str, figures: dict, pages_s: float) -> str:
    values = {
        "coverage": figures["coverage"], "recall_med": figures["content"]["recall_med"],
        "recall_p10": figures["content"]["recall_p10"], "precision_med": figures["content"]["precision_med"],
        "code": figures["code"]["fidelity"], "headings": figures["headings"]["fidelity"],
        "tables": figures["tables"]["fidelity"], "leakage": figures["leakage"], "junk": figures["junk"],
        "pages_s": pages_s,
    }
    cells = [f"{values[c]:.3f}" if isinstance(values[c], float) else str(values[c]) for c in COLUMNS]
    return f"| {corpus} | {spider} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="flask,requests,scrapy")
    parser.add_argument("--spiders", default="docs,site,sitemap")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print("| corpus | spider | " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * (len(COLUMNS) + 2))
    for corpus in args.corpora.split(","):
        pages = [json.loads(line)["url"] for line in (EVAL / "truth" / f"{corpus}.jsonl").read_text().splitlines()]
        for spider in args.spiders.split(","):
            with tempfile.TemporaryDirectory() as tmp, SiteServer(root=Path(ROOTS[corpus])) as server:
                urls = [server.url + p.lstrip("/") for p in pages]
                server.routes.update(sitemap_index(server.url, urls[: len(urls) // 2], urls[len(urls) // 2:]))
                result = crawl(spider, server.url, Path(tmp), settings=NO_EMBEDDING)
                figures = score(corpus, Path(tmp) / "pages.jsonl")
                rate = result.report["pages_stored"] / max(result.report["elapsed_seconds"], 1e-9)
                print(row(corpus, spider, figures, round(rate, 1)), flush=True)


if __name__ == "__main__":
    main()
