r"""The shared frontier: scrapy-redis's scheduler, queue and seen-set, plus leases and an idle close.

scrapy-redis pops a request off the Redis queue and forgets it: a worker that dies loses every
request it had popped and not finished, and the shared seen-set keeps any other worker from
finding those pages again. So a pop here *moves* the request into its worker's in-flight hash (one
Lua script, atomic), and the worker deletes it once the page is done: its callback ran (the
requests it found are in the queue), its item went through the pipelines (the feed line is
written) and, with the index on, its points are in Qdrant. Each worker refreshes an ``alive`` key; when one expires, any other worker puts that
worker's in-flight requests back on the queue. That makes delivery at-least-once: after a crash
the pages the dead worker had in flight are fetched again, never lost.

scrapy-redis's own idle close (``SCHEDULER_IDLE_BEFORE_CLOSE``) blocks the reactor in a Redis pop
and ends a worker whenever the queue is momentarily empty. Here a worker stays open while the queue
holds requests or another live worker is busy (it may still find pages), and closes when the whole
crawl is done.

Redis keys, under ``harvester:<HARVESTER_CLUSTER_CRAWL>:<spider>``: ``requests`` (sorted set,
scrapy-redis), ``dupefilter`` (set, scrapy-redis), ``workers`` (set of worker ids),
``alive:<id>`` (``busy``/``idle``, expires after ``HARVESTER_CLUSTER_LEASE``), ``inflight:<id>``
(hash lease id -> ``<score>\n<request>``), ``lease-seq`` (counter).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
import weakref
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from itemadapter import is_item
from redis.exceptions import RedisError
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import create_looping_call
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from harvester.cluster import check_cluster_settings
from harvester.meta import LEASE
from harvester.signals import pages_indexed

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# Pops the best request and files it under a new lease in the worker's in-flight hash.
POP_SCRIPT = """
local item = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #item == 0 then return false end
redis.call('ZREM', KEYS[1], item[1])
local lease = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[2], lease, item[2] .. '\\n' .. item[1])
return {lease, item[1]}
"""

# Puts a worker's in-flight requests back on the queue, unless the worker is alive (or ARGV[2]=1:
# the worker itself hands them back as it shuts down).
REQUEUE_SCRIPT = """
if ARGV[2] ~= '1' and redis.call('EXISTS', KEYS[3]) == 1 then return -1 end
local entries = redis.call('HVALS', KEYS[4])
for _, value in ipairs(entries) do
  local sep = string.find(value, '\\n', 1, true)
  redis.call('ZADD', KEYS[2], string.sub(value, 1, sep - 1), string.sub(value, sep + 1))
end
redis.call('DEL', KEYS[4])
redis.call('SREM', KEYS[1], ARGV[1])
return #entries
"""

_frontiers: weakref.WeakKeyDictionary[Any, Frontier] = weakref.WeakKeyDictionary()


def worker_id() -> str:
    """Unique per process, readable in ``redis-cli``: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class Frontier:
    """This worker's view of the crawl's leases and of the other workers."""

    def __init__(self, server: Any, prefix: str, lease_seconds: float) -> None:
        self.server = server
        self.prefix = prefix
        self.worker = worker_id()
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self._pop = server.register_script(POP_SCRIPT)
        self._requeue = server.register_script(REQUEUE_SCRIPT)

    def key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    def pop(self, queue_key: str) -> tuple[str, bytes] | None:
        found = self._pop(keys=[queue_key, self.key(f"inflight:{self.worker}"), self.key("lease-seq")])
        if not found:
            return None
        lease, data = found
        return str(lease), data

    def release(self, lease: str) -> None:
        self.server.hdel(self.key(f"inflight:{self.worker}"), lease)

    def heartbeat(self, busy: bool) -> None:
        pipe = self.server.pipeline()
        pipe.sadd(self.key("workers"), self.worker)
        pipe.set(self.key(f"alive:{self.worker}"), "busy" if busy else "idle", px=self.lease_ms)
        pipe.execute()

    def requeue(self, queue_key: str, worker: str, *, own: bool = False) -> int:
        """Put ``worker``'s in-flight requests back on the queue: -1 if it is alive."""
        return int(self._requeue(
            keys=[self.key("workers"), queue_key, self.key(f"alive:{worker}"), self.key(f"inflight:{worker}")],
            args=[worker, "1" if own else "0"],
        ))

    def reclaim_dead(self, queue_key: str) -> int:
        """Requeue the in-flight requests of every worker whose ``alive`` key expired."""
        reclaimed = 0
        for member in self.server.smembers(self.key("workers")):
            worker = member.decode() if isinstance(member, bytes) else member
            if worker == self.worker:
                continue
            count = self.requeue(queue_key, worker)
            if count > 0:
                logger.warning(
                    "Worker %s stopped without finishing: %d of its requests are back on the queue",
                    worker, count,
                )
                reclaimed += count
            elif count == 0:
                logger.info("Worker %s stopped while holding no request", worker)
        return reclaimed

    def others_busy(self) -> bool:
        for member in self.server.smembers(self.key("workers")):
            worker = member.decode() if isinstance(member, bytes) else member
            if worker != self.worker and _text(self.server.get(self.key(f"alive:{worker}"))) == "busy":
                return True
        return False

    def leave(self, queue_key: str, finished: bool) -> None:
        """Deregister; a worker stopped early (Ctrl-C, max_pages...) hands its leases back."""
        if finished:
            self.server.delete(self.key(f"inflight:{self.worker}"))
            self.server.srem(self.key("workers"), self.worker)
        else:
            count = self.requeue(queue_key, self.worker, own=True)
            if count:
                logger.info("Handed %d unfinished requests back to the shared queue", count)
        self.server.delete(self.key(f"alive:{self.worker}"))


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def frontier_for(crawler: Crawler) -> Frontier | None:
    return _frontiers.get(crawler)


class LeasedPriorityQueue(PriorityQueue):
    """scrapy-redis's priority queue whose pop leases the request instead of forgetting it."""

    frontier: Frontier | None = None

    def pop(self, timeout: int = 0) -> Request | None:
        assert self.frontier is not None, "LeasedPriorityQueue needs the LeasedScheduler"
        found = self.frontier.pop(self.key)
        if found is None:
            return None
        lease, data = found
        request = self._decode_request(data)
        request.meta[LEASE] = lease
        return request


class LeasedScheduler(Scheduler):
    """scrapy-redis's scheduler with leases, worker heartbeats and the cluster-wide idle close.

    Settings: scrapy-redis's (``REDIS_URL``, ``SCHEDULER_*``, set by cluster mode),
    ``HARVESTER_CLUSTER_LEASE`` (seconds a silent worker keeps its requests).
    Stats: ``harvester/cluster/reclaimed`` (requests taken back from dead workers),
    ``harvester/cluster/idle_waits``.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # Also refused here for crawls started without the `crawl` command (CrawlerProcess).
        check_cluster_settings(crawler.settings)
        scheduler = super().from_crawler(crawler)
        scheduler.crawler = crawler
        lease = crawler.settings.getfloat("HARVESTER_CLUSTER_LEASE")
        prefix = crawler.settings.get("SCHEDULER_QUEUE_KEY").rsplit(":", 1)[0]
        scheduler.lease_seconds = lease
        scheduler.frontier_prefix = prefix
        scheduler.frontier = None
        crawler.signals.connect(scheduler._spider_idle, signal=signals.spider_idle)
        return scheduler

    def open(self, spider: Spider) -> None:
        super().open(spider)
        self.frontier = Frontier(self.server, self.frontier_prefix % {"spider": spider.name}, self.lease_seconds)
        _frontiers[self.crawler] = self.frontier
        self.queue.frontier = self.frontier
        self.frontier.heartbeat(busy=True)
        # A crawl resumed after every worker stopped: take back what the dead ones held.
        self._reclaim()
        self._beat = create_looping_call(self._heartbeat)
        # Often enough that the busy flag others read is at most a second old.
        self._beat.start(min(1.0, self.lease_seconds / 3), now=False)
        logger.info("Cluster worker %s on the shared frontier %s", self.frontier.worker, self.queue.key)

    def close(self, reason: str) -> None:
        if getattr(self, "_beat", None) is not None and self._beat.running:
            self._beat.stop()
        if self.frontier is not None:
            self.frontier.leave(self.queue.key, finished=reason == "finished")
        super().close(reason)

    # enqueue_request and next_request are scrapy-redis's, without the `spider` argument to the
    # stats that Scrapy 2.19 warns about on every request.
    def enqueue_request(self, request: Request) -> bool:
        # A leased request coming back (a retry, a redirect): the copy is queued before the lease
        # is released, so a crash in between costs a second fetch, never the page.
        lease = request.meta.pop(LEASE, None)
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            queued = False
        else:
            self.stats.inc_value("scheduler/enqueued/redis")
            self.queue.push(request)
            queued = True
        if lease is not None and self.frontier is not None:
            self.frontier.release(lease)
        return queued

    def next_request(self) -> Request | None:
        request = self.queue.pop()
        if request is not None:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def _heartbeat(self) -> None:
        try:
            busy = not self.crawler.engine.spider_is_idle()
        except RuntimeError:  # the engine is closing
            busy = False
        try:
            self.frontier.heartbeat(busy=busy)
            self._reclaim()
        except RedisError as exc:  # Redis briefly away: the next beat tries again
            logger.warning("Cluster heartbeat failed: %s", exc)

    def _reclaim(self) -> None:
        reclaimed = self.frontier.reclaim_dead(self.queue.key)
        if reclaimed:
            self.stats.inc_value("harvester/cluster/reclaimed", reclaimed)

    def _spider_idle(self, spider: Spider) -> None:
        if self.frontier is None:
            return
        self._reclaim()
        if len(self.queue) or self.frontier.others_busy():
            self.stats.inc_value("harvester/cluster/idle_waits")
            # The engine looks at an idle spider again only every 5 s; look sooner, since a busy
            # worker may push requests any moment. (The engine has no public hook for this.)
            slot = getattr(self.crawler.engine, "_slot", None)
            if slot is not None:
                slot.nextcall.schedule(0.5)
            raise DontCloseSpider


class LeaseAckMiddleware:
    """Releases a request's lease once its page is done: the callback's output is consumed (its
    requests are queued), each of its items left the pipelines (scraped, dropped or failed) and,
    with the index on, its points are written (``pages_indexed``: the index pipeline batches
    pages, and a killed worker's unwritten batch must be crawled again)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        settings = crawler.settings
        self._awaits_index = settings.getbool("HARVESTER_INDEX_ENABLED") and settings.getbool(
            "HARVESTER_EMBEDDING_ENABLED"
        )
        self._open: dict[str, int] = {}
        self._unindexed: dict[int, str] = {}
        # Connected after the feed exporter's item_scraped handler, so the line is written first.
        crawler.signals.connect(self._item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._item_lost, signal=signals.item_dropped)
        crawler.signals.connect(self._item_lost, signal=signals.item_error)
        crawler.signals.connect(self._pages_indexed, signal=pages_indexed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        lease = response.meta.get(LEASE)
        if lease is not None:
            self._open[lease] = self._open.get(lease, 0) + 1
        async for element in result:
            if lease is not None and is_item(element):
                self._open[lease] += 1
                if self._awaits_index:
                    self._open[lease] += 1
                    self._unindexed[id(element)] = lease
            yield element
        self._done(lease)

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        self._done(response.meta.get(LEASE))

    def _item_scraped(self, item: Any, response: Response | None = None, **kwargs: Any) -> None:
        if response is not None:
            self._done(response.meta.get(LEASE))

    def _item_lost(self, item: Any, response: Response | None = None, **kwargs: Any) -> None:
        if response is not None:
            self._done(response.meta.get(LEASE))
        # Dropped or failed in a pipeline: it will never be indexed.
        self._done(self._unindexed.pop(id(item), None))

    def _pages_indexed(self, items: list[Any], **kwargs: Any) -> None:
        for item in items:
            self._done(self._unindexed.pop(id(item), None))

    def _done(self, lease: str | None) -> None:
        if lease is None or lease not in self._open:
            return
        self._open[lease] -= 1
        if self._open[lease] <= 0:
            del self._open[lease]
            frontier = frontier_for(self.crawler)
            if frontier is not None:
                frontier.release(lease)
