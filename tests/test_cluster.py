"""Cluster mode's parts against a real redis-server: settings, leases, the politeness gate."""

from __future__ import annotations

import itertools

import pytest
from scrapy.settings import Settings

from harvester.addon import HarvesterAddon
from harvester.config.checks import InvalidSettings, check_settings
from tests.conftest import import_prerequisite
from tests.servers.redisrv import redis_server  # noqa: F401 (fixture)

import_prerequisite("scrapy_redis", reason="the cluster extra is not installed")


def cluster_settings(**values: object) -> Settings:
    settings = Settings({"HARVESTER_CLUSTER": True, "REDIS_URL": "redis://127.0.0.1:6379/0",
                         "QDRANT_URL": "http://qdrant:6333", **values}, priority="project")
    HarvesterAddon().update_settings(settings)
    return settings


def test_cluster_mode_puts_the_frontier_in_redis() -> None:
    settings = cluster_settings(HARVESTER_CLUSTER_CRAWL="docs-2026")
    assert settings["SCHEDULER"] == "harvester.cluster.frontier.LeasedScheduler"
    assert settings["DUPEFILTER_CLASS"] == "scrapy_redis.dupefilter.RFPDupeFilter"
    assert settings.getbool("SCHEDULER_PERSIST")
    assert settings["SCHEDULER_QUEUE_KEY"] == "harvester:docs-2026:%(spider)s:requests"
    assert "harvester.cluster.politeness.ClusterPolitenessMiddleware" in settings.getdict("DOWNLOADER_MIDDLEWARES")
    # Off by default: the normal scheduler and no Redis.
    plain = Settings()
    HarvesterAddon().update_settings(plain)
    assert "scrapy_redis" not in str(plain["SCHEDULER"]) and "harvester.cluster" not in str(plain["SCHEDULER"])


@pytest.mark.parametrize(("values", "message"), [
    ({"QDRANT_URL": None}, "cluster mode needs a Qdrant server"),
    ({"REDIS_URL": None}, "cluster mode needs REDIS_URL"),
    ({"HARVESTER_CLUSTER_CRAWL": "a b"}, "HARVESTER_CLUSTER_CRAWL='a b'"),
    ({"HARVESTER_CLUSTER_LEASE": 0}, "HARVESTER_CLUSTER_LEASE"),
])
def test_cluster_mode_refuses_what_it_cannot_run_with(values: dict, message: str) -> None:
    settings = cluster_settings(**values)  # `scrapy search` reads these settings too: no error yet
    with pytest.raises(InvalidSettings, match=message):
        check_settings(settings)


def test_without_an_index_no_qdrant_server_is_needed() -> None:
    check_settings(cluster_settings(QDRANT_URL=None, HARVESTER_INDEX_ENABLED=False, HARVESTER_EMBEDDING_ENABLED=False))
    check_settings(cluster_settings())
    with pytest.raises(InvalidSettings, match="HARVESTER_CLUSTER='maybe' must be true or false"):
        check_settings(cluster_settings(HARVESTER_CLUSTER="maybe"))


def test_politeness_reservations_queue_up_one_interval_apart(redis_server) -> None:  # noqa: F811
    from harvester.cluster.politeness import RESERVE_SCRIPT

    reserve = redis_server.client().register_script(RESERVE_SCRIPT)
    waits = [int(reserve(keys=["harvester:politeness:example.org"], args=[500])) for _ in range(4)]
    # Back to back: each caller waits one more interval (give or take the ms the calls took).
    assert waits[0] == 0
    for earlier, later in itertools.pairwise(waits):
        assert 490 <= later - earlier <= 500
    other_host = int(reserve(keys=["harvester:politeness:example.com"], args=[500]))
    assert other_host == 0


def test_leases_survive_their_worker_and_come_back_with_their_priority(redis_server) -> None:  # noqa: F811
    from harvester.cluster.frontier import Frontier

    client = redis_server.client()
    queue = "harvester:t:docs:requests"
    client.zadd(queue, {b"first": -5, b"second": 0})
    dead, alive = Frontier(client, "harvester:t:docs", 30), Frontier(client, "harvester:t:docs", 30)
    dead.heartbeat(busy=True)
    lease, data = dead.pop(queue)
    assert data == b"first" and client.zcard(queue) == 1
    assert alive.reclaim_dead(queue) == 0  # its owner is alive: not touched
    client.delete(f"harvester:t:docs:alive:{dead.worker}")  # the lease ran out
    assert alive.reclaim_dead(queue) == 1
    assert client.zrange(queue, 0, -1, withscores=True) == [(b"first", -5.0), (b"second", 0.0)]
    assert not client.exists(f"harvester:t:docs:inflight:{dead.worker}")
    assert not client.sismember("harvester:t:docs:workers", dead.worker)
    # A released lease is gone for good.
    alive.heartbeat(busy=True)
    lease, _ = alive.pop(queue)
    alive.release(lease)
    assert client.hlen(f"harvester:t:docs:inflight:{alive.worker}") == 0


class RecordingFrontier:
    def __init__(self) -> None:
        self.released: list[str] = []

    def release(self, lease: str) -> None:
        self.released.append(lease)


async def _consume(middleware, response, outputs) -> None:
    async def result():
        for output in outputs:
            yield output

    async for _ in middleware.process_spider_output(response, result()):
        pass


@pytest.mark.parametrize("index", [True, False])
def test_a_lease_is_released_when_the_page_is_stored_and_indexed(index: bool) -> None:
    import asyncio

    from scrapy import Request, signals
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from harvester.cluster.frontier import LeaseAckMiddleware, _frontiers
    from harvester.items import PageItem
    from harvester.meta import LEASE as LEASE_META
    from harvester.signals import pages_indexed

    crawler = get_crawler(settings_dict={"HARVESTER_INDEX_ENABLED": index, "HARVESTER_EMBEDDING_ENABLED": index})
    frontier = RecordingFrontier()
    _frontiers[crawler] = frontier
    middleware = LeaseAckMiddleware(crawler)
    stored, dropped = PageItem(url="https://a.example/1", title="1", markdown="one"), PageItem(url="https://a.example/2", title="2", markdown="two")
    pages = []
    for lease, item in (("1", stored), ("2", dropped)):
        request = Request(item.url, meta={LEASE_META: lease})
        response = HtmlResponse(item.url, body=b"<html></html>", request=request)
        pages.append(response)
        asyncio.run(_consume(middleware, response, [Request("https://a.example/next"), item]))
    assert frontier.released == []  # the items are still in the pipelines
    crawler.signals.send_catch_log(signals.item_dropped, item=dropped, response=pages[1], exception=Exception())
    assert frontier.released == ["2"]  # a dropped page is done: it will never be indexed
    crawler.signals.send_catch_log(signals.item_scraped, item=stored, response=pages[0])
    if index:
        assert frontier.released == ["2"]  # stored in the feed, but its batch is not in Qdrant yet
        crawler.signals.send_catch_log(pages_indexed, items=[stored])
    assert frontier.released == ["2", "1"]


def test_an_idle_worker_writes_its_index_batch_and_its_leases_go_back(tmp_path) -> None:
    """A cluster worker idles while the others crawl: the page batched for the index is written
    then, into the real embedded store, and its lease released, rather than both waiting for the
    crawl's end (search would miss the page, and a worker killed meanwhile held it)."""
    import asyncio

    import numpy as np
    from scrapy import Request, signals
    from scrapy.http import HtmlResponse
    from scrapy.utils.misc import build_from_crawler

    from harvester.cluster.frontier import LeaseAckMiddleware, _frontiers
    from harvester.index.pipeline import IndexPipeline
    from harvester.items import PageItem
    from harvester.meta import LEASE as LEASE_META
    from tests.components import crawler_with

    crawler = crawler_with(HARVESTER_QDRANT_PATH=str(tmp_path / "q"))
    frontier = RecordingFrontier()
    _frontiers[crawler] = frontier
    middleware = LeaseAckMiddleware(crawler)
    pipeline = build_from_crawler(IndexPipeline, crawler)
    item = PageItem(url="https://a.example/guide", title="Guide", markdown="# Guide\n\nText.", content_hash="h")
    item.chunks = [{"id": "8f0f4d44-3c1e-5b0a-9d43-1f2e3a4b5c6d", "text": "Text.", "context": "Guide", "index": 0,
                    "heading_path": ["Guide"], "token_count": 2}]
    item.vectors = [np.full(384, 0.05, dtype=np.float32)]
    request = Request(item.url, meta={LEASE_META: "7"})
    response = HtmlResponse(item.url, body=b"<html></html>", request=request)

    async def scenario() -> tuple[list[str], int, list[str], int]:
        await pipeline.open_spider()
        await _consume(middleware, response, [item])
        await pipeline.process_item(item)
        crawler.signals.send_catch_log(signals.item_scraped, item=item, response=response)
        before = list(frontier.released), pipeline._client.count(pipeline._collection)
        crawler.signals.send_catch_log(signals.spider_idle, spider=None)
        for _ in range(200):
            if frontier.released:
                break
            await asyncio.sleep(0.01)
        after = list(frontier.released), pipeline._client.count(pipeline._collection)
        await pipeline.close_spider()
        await pipeline._spider_closed(None, "finished")
        return (*before, *after)

    released_before, points_before, released_after, points_after = asyncio.run(scenario())
    assert (released_before, points_before) == ([], 0)  # batched: neither written nor released
    assert (released_after, points_after) == (["7"], 1)
    assert crawler.stats.get_value("harvester/index/idle_writes") == 1
