"""Measure the per-unit sizes docs/scaling.md multiplies out to 10 million pages, in one run:

* Redis memory per queued request (the cluster frontier's sorted set, as scrapy-redis encodes a
  Harvester page request) and per seen-set fingerprint, from ``INFO memory`` of a throwaway
  ``redis-server`` filled with ``--requests`` of each;
* chunks per page, payload bytes per chunk (the JSON Harvester stores with each point) and the
  number of BM25 sparse-vector terms per chunk, from a crawl of Debian's Flask docs without
  embedding.

    .venv/bin/python -m bench.bench_scale [--requests 200000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.crawl import NO_EMBEDDING
from tests.crawl import cli_crawl as crawl
from tests.servers.redisrv import RedisServer
from tests.servers.sitesrv import SiteServer

FLASK_DOCS = Path("/usr/share/doc/python-flask-doc/html")


def redis_sizes(count: int, workdir: Path) -> dict[str, float]:
    import scrapy
    from scrapy_redis.dupefilter import RFPDupeFilter
    from scrapy_redis.queue import PriorityQueue

    from harvester.spiders.docs import DocsSpider

    spider = DocsSpider(start="https://docs.example.org/en/stable/index.html")
    server = RedisServer(workdir)
    try:
        client = server.client()
        queue = PriorityQueue(client, spider, "bench:%(spider)s:requests")
        seen = RFPDupeFilter(client, "bench:dupefilter")
        baseline = client.info("memory")["used_memory"]
        pipe = client.pipeline(transaction=False)
        for number in range(count):
            request = scrapy.Request(
                f"https://docs.example.org/en/stable/section-{number % 97}/page-{number}.html",
                callback=spider.parse, errback=spider.page_failed, priority=number % 3 - 1,
            )
            pipe.zadd(queue.key, {queue._encode_request(request): -request.priority})
            if number % 1000 == 999:
                pipe.execute()
        pipe.execute()
        queued = client.info("memory")["used_memory"]
        for number in range(count):
            seen.request_seen(scrapy.Request(f"https://docs.example.org/en/stable/section-{number % 97}/page-{number}.html"))
        filled = client.info("memory")["used_memory"]
        sample = client.zrange(queue.key, 0, 0)[0]
        return {
            "bytes_per_queued_request": (queued - baseline) / count,
            "encoded_request_bytes": len(sample),
            "bytes_per_fingerprint": (filled - queued) / count,
        }
    finally:
        server.stop()


def payload_sizes(workdir: Path) -> dict[str, float]:
    from harvester.index.lexical import document_vector
    from harvester.index.store import page_payloads
    from harvester.items import EXPORTED_FIELDS

    # The feed also carries the fields the index keeps but feeds leave out (links, heading anchors).
    fields = ",".join([*EXPORTED_FIELDS, "links", "anchors"])
    with SiteServer(root=FLASK_DOCS) as site:
        result = crawl("docs", site.url, workdir, settings={**NO_EMBEDDING, "FEED_EXPORT_FIELDS": fields})
    payloads, terms, texts = [], [], []
    for item in result.items:
        page = SimpleNamespace(**item)
        payloads += [len(json.dumps(p).encode()) for p in page_payloads(page, "2026-11-30T00:00:00Z")]
        for chunk in item["chunks"]:
            terms.append(len(document_vector(chunk["text"])[0]))
            texts.append(len(chunk["text"]))
    return {
        "pages": len(result.items),
        "chunks": len(payloads),
        "chunks_per_page": len(payloads) / max(1, len(result.items)),
        "payload_bytes_mean": statistics.mean(payloads),
        "chunk_text_chars_mean": statistics.mean(texts),
        "sparse_terms_mean": statistics.mean(terms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "redis").mkdir()
        results = {"redis": redis_sizes(args.requests, work / "redis")}
        if FLASK_DOCS.is_dir():
            results["qdrant_payload"] = payload_sizes(work / "crawl")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
