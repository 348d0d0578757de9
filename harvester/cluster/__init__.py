"""Cluster mode: one crawl spread over many Scrapy processes on many machines.

The engines are off the shelf: scrapy-redis holds the shared frontier (request queue and seen-set)
in Redis, and a Qdrant server holds the index. Harvester adds only what they lack:

- ``frontier``: leases on popped requests, so a worker killed mid-crawl loses no page, and an idle
  close, so every worker ends when the whole crawl's frontier is empty;
- ``politeness``: the per-host delay and robots.txt ``Crawl-delay`` taken cluster-wide in Redis;
- ``feeds``: feed files written through, so what a killed worker acknowledged is on disk.

Turned on by ``HARVESTER_CLUSTER`` (env ``HARVESTER_CLUSTER=1``, ``-s``, Scrapyd ``setting=``, or the
``settings.cluster`` overlay). This module imports neither redis nor scrapy-redis (the ``cluster``
extra): the add-on reads it on every crawl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.config.components import setdefault_component
from harvester.exceptions import InvalidSettings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings



def key_prefix(crawl: str) -> str:
    """The Redis key prefix of one crawl; ``%(spider)s`` is filled in by scrapy-redis."""
    return f"harvester:{crawl}:%(spider)s"


def check_cluster_settings(settings: BaseSettings) -> None:
    """Raise InvalidSettings when a crawl cannot run in cluster mode (called through
    ``harvester.config.checks.check_settings``; the spec checks each setting's own range)."""
    if settings.getbool("HARVESTER_INDEX_ENABLED") and not settings.get("QDRANT_URL"):
        raise InvalidSettings(
            "cluster mode needs a Qdrant server: set QDRANT_URL (the embedded store at "
            "HARVESTER_QDRANT_PATH lives on one machine and is written by one process at a time), "
            "or turn HARVESTER_INDEX_ENABLED off"
        )
    if not settings.get("REDIS_URL"):
        raise InvalidSettings("cluster mode needs REDIS_URL (the shared frontier), e.g. redis://host:6379/0")


def apply_cluster_settings(settings: BaseSettings) -> None:
    """Switch a crawl to the shared Redis frontier, at add-on priority so that users can still
    override any of it."""
    crawl = settings.get("HARVESTER_CLUSTER_CRAWL")
    prefix = key_prefix(crawl)
    for name, value in {
        "SCHEDULER": "harvester.cluster.frontier.LeasedScheduler",
        "SCHEDULER_QUEUE_CLASS": "harvester.cluster.frontier.LeasedPriorityQueue",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_QUEUE_KEY": f"{prefix}:requests",
        "SCHEDULER_DUPEFILTER_KEY": f"{prefix}:dupefilter",
        # The frontier outlives every worker: a restarted worker resumes it.
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_FLUSH_ON_START": False,
        # Never block the reactor in a Redis pop; the frontier's idle handler waits instead.
        "SCHEDULER_IDLE_BEFORE_CLOSE": 0,
        "FEED_STORAGES": {
            "": "harvester.cluster.feeds.WriteThroughFileFeedStorage",
            "file": "harvester.cluster.feeds.WriteThroughFileFeedStorage",
        },
    }.items():
        settings.set(name, value, "addon")
    setdefault_component(
        settings, "DOWNLOADER_MIDDLEWARES", "harvester.cluster.politeness.ClusterPolitenessMiddleware", 950
    )
    # Next to the engine: it sees a callback's output after every other spider middleware.
    setdefault_component(settings, "SPIDER_MIDDLEWARES", "harvester.cluster.frontier.LeaseAckMiddleware", 1)
