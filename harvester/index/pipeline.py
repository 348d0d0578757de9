"""Store chunks and their vectors: the embedded engine by default, a Qdrant server by URL."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import CloseSpider, NotConfigured

from harvester.chunking.context import embedding_text
from harvester.embedding.folder import ModelUnavailable, model_dimension, vector_name
from harvester.embedding.models import backend_options, load_backend
from harvester.index.engines import legacy_collections, legacy_message, open_store
from harvester.index.engines.edge import EdgeStore
from harvester.index.export import mirror_collection
from harvester.index.store import (
    CollectionMismatch,
    Point,
    Scope,
    StoreUnavailable,
    chunk_point,
    page_payloads,
)
from harvester.recrawl.extension import Recrawl
from harvester.recrawl.state import load_stored_pages, page_change
from harvester.signals import (
    chunks_superseded,
    page_aggregate,
    page_aliased,
    page_versioned,
    pages_indexed,
)
from harvester.threads import Worker

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy.crawler import Crawler

    from harvester.index.store import Store
    from harvester.items import PageItem

logger = logging.getLogger(__name__)

# Points per upsert: one page can hold thousands of chunks, whose vectors as Python lists and the
# store's copies, written at once, would raise the crawl's peak several times over a slice's.
WRITE_BATCH = 256


class IndexPipeline:
    """Upsert one point per chunk (deterministic ids; the model's dense vector and a BM25 sparse
    vector), in batches across pages; after a page's points are written, delete its points from an
    earlier crawl that no longer exist.

    Settings: ``HARVESTER_INDEX_ENABLED``, ``HARVESTER_QDRANT_PATH`` and ``HARVESTER_QDRANT_ENGINE``
    (embedded), ``QDRANT_URL`` / ``QDRANT_API_KEY`` (server), ``HARVESTER_QDRANT_COLLECTION``,
    ``HARVESTER_QDRANT_BATCH_SIZE`` (points per upsert), ``HARVESTER_EMBEDDING_MODEL``.
    Stats: ``harvester/index/points``, ``harvester/index/upserts``, ``harvester/index/pages``,
    ``harvester/index/idle_writes`` (batches written while the engine idled: a cluster worker waits),
    ``harvester/index/superseded_deleted``, ``harvester/index/aggregates_deleted``,
    ``harvester/index/aggregate_chunks_kept``. When the crawl closes, chunk copies that boilerplate
    now covers and pages found to be aggregates after they were written are deleted (all but an
    aggregate's chunks of its own text), and aliases found after a page was written are added to
    its points. Last, the embedded store is compacted when ``HARVESTER_QDRANT_COMPACT_SHARE`` of
    its writes are dead (stats ``harvester/index/compaction/bytes_before``, ``.../bytes_after``,
    ``.../seconds``). With ``HARVESTER_EXPORT_PATH``, the collection is then mirrored into that
    local-mode folder (stats ``harvester/index/export/{points,deleted,seconds,failed}``); a
    failed export is logged and leaves the crawl's outcome alone.
    Re-crawls (with the Recrawl extension): loads every stored page's state from the collection
    when it opens; a page with the stored content hash and chunks is not written again (unless
    its ETag, Last-Modified or links changed); chunks without a vector (already stored) get their
    payload rewritten, not their vector; pages gone (404/410) and pruned pages are deleted.
    Closes the spider (before any page is fetched) when Qdrant cannot be opened or the collection
    does not fit the model.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_INDEX_ENABLED"):
            raise NotConfigured
        if not settings.getbool("HARVESTER_EMBEDDING_ENABLED"):
            raise NotConfigured("the index needs vectors: HARVESTER_EMBEDDING_ENABLED is off")
        self._stats = crawler.stats
        self._signals = crawler.signals
        self._url = settings.get("QDRANT_URL")
        self._api_key = settings.get("QDRANT_API_KEY")
        self._path = settings.get("HARVESTER_QDRANT_PATH")
        self._engine = settings.get("HARVESTER_QDRANT_ENGINE")
        self._wait = settings.getfloat("HARVESTER_QDRANT_WAIT")
        self._nodes = settings.getbool("HARVESTER_QDRANT_LLAMAINDEX_NODES")
        self._collection = settings.get("HARVESTER_QDRANT_COLLECTION")
        self._batch_size = settings.getint("HARVESTER_QDRANT_BATCH_SIZE")
        self._compact_share = settings.getfloat("HARVESTER_QDRANT_COMPACT_SHARE")
        self._export_path = settings.get("HARVESTER_EXPORT_PATH")
        self._model_name = settings.get("HARVESTER_EMBEDDING_MODEL")
        self._backend = backend_options(settings)
        self._worker = Worker("harvester-index")
        self._client: Store | None = None
        self._vector = ""
        self._pending: list[PageItem] = []
        # Dedup learns some things after a page's points were written: applied when the crawl closes.
        self._aliases: dict[str, list[str]] = {}
        self._superseded: list[str] = []
        self._aggregates: list[tuple[str, Callable[[str], bool] | None]] = []
        self._written_aliases: dict[str, frozenset[str]] = {}
        self._versions: dict[str, list[str]] = {}
        self._written_versions: dict[str, list[str]] = {}
        crawler.signals.connect(self._page_aliased, signal=page_aliased)
        crawler.signals.connect(self._page_versioned, signal=page_versioned)
        crawler.signals.connect(self._chunks_superseded, signal=chunks_superseded)
        crawler.signals.connect(self._page_aggregate, signal=page_aggregate)
        self._crawler = crawler
        self._recrawl: Recrawl | None = None
        self._idle_flush: asyncio.Future[None] | None = None
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def open_spider(self) -> None:
        where = self._url or self._path
        try:
            # Read from the model's config when it can be: a re-crawl with nothing to embed then
            # never loads the model.
            dimension = model_dimension(self._model_name)
            if dimension is None:
                embedder = await self._worker.run(load_backend, self._model_name, **self._backend)
                self._vector, dimension = embedder.vector_name, embedder.dimension
            else:
                self._vector = vector_name(self._model_name)
            if not self._url and self._engine == "edge" and self._collection in legacy_collections(self._path):
                raise CollectionMismatch(legacy_message(self._path, self._collection))
            self._client = await self._worker.run(
                open_store, self._url, self._api_key, self._path, self._engine, self._wait)
            created = await self._worker.run(
                self._client.ensure_collection, self._collection, self._vector, dimension)
        except (CollectionMismatch, ModelUnavailable, StoreUnavailable) as exc:
            logger.error("Cannot index into Qdrant at %s: %s", where, exc)
            raise CloseSpider("index_unavailable") from exc
        except Exception as exc:  # connection refused, locked local store, bad URL...
            logger.error("Cannot open Qdrant at %s: %s", where, exc)
            raise CloseSpider("index_unavailable") from exc
        logger.info(
            "%s Qdrant collection %r at %s", "Created" if created else "Using", self._collection, where
        )
        self._recrawl = self._crawler.get_extension(Recrawl)
        if self._recrawl is not None:
            pages = {} if created else await self._worker.run(load_stored_pages, self._client, self._collection)
            for page in pages.values():
                # LlamaIndex's node fields turned on (an older collection) or off: rewrite them.
                page.refresh_payload = page.node_fields != self._nodes
            self._recrawl.load(pages)
            self._recrawl.set_pruner(self._prune)

    def _page_aliased(self, url: str, alias: str, **kwargs: object) -> None:
        self._aliases.setdefault(url, []).append(alias)

    def _page_versioned(self, url: str, version: str, **kwargs: object) -> None:
        self._versions.setdefault(url, []).append(version)

    def _chunks_superseded(self, ids: list[str], **kwargs: object) -> None:
        self._superseded.extend(ids)

    def _page_aggregate(self, url: str, stored: bool = True, keep: Callable[[str], bool] | None = None,
                        **kwargs: object) -> None:
        if stored:
            self._aggregates.append((url, keep))

    async def process_item(self, item: PageItem) -> PageItem:
        if getattr(item, "duplicate_of", None):
            return item  # a feed line for an alias: nothing of it is stored
        if self._recrawl is not None:
            self._recrawl.reach(item.url)
            self._recrawl.indexed.add(item.url)
            item.change = page_change(self._recrawl.pages.get(item.url), item.content_hash)
        self._pending.append(item)
        if sum(len(page.chunks) for page in self._pending) >= self._batch_size:
            await self._flush()
        return item

    async def _flush(self) -> None:
        pages, self._pending = self._pending, []
        gone = self._recrawl.take_gone() if self._recrawl is not None else []
        if gone:
            await self._worker.run(self._delete_pages, gone)
            self._recrawl.count("deleted", len(gone))
        if pages:
            await self._worker.run(self._write, pages)
            self._stats.inc_value("harvester/index/upserts")
            self._stats.inc_value("harvester/index/pages", len(pages))
            self._stats.inc_value("harvester/index/points", sum(len(p.chunks) for p in pages))
            self._signals.send_catch_log(pages_indexed, items=pages)

    def _write(self, pages: list[PageItem]) -> None:
        """New chunks with their vectors, then the payloads of the kept chunks, then the deletion
        of the chunks a page lost: a crawl killed in between leaves points that disagree, which
        the next crawl sees and repairs (``StoredPage.consistent``)."""
        assert self._client is not None
        harvested_at = datetime.now(UTC).isoformat(timespec="seconds")
        for page in pages:
            page.versions = self._all_versions(page.url, page.versions)
        changed = [page for page in pages if self._changed(page)]
        points, payloads = [], []
        for page in changed:
            page_points = page_payloads(page, harvested_at, nodes=self._nodes)
            for chunk, vector, payload in zip(page.chunks, page.vectors or (), page_points, strict=True):
                if vector is None:
                    payloads.append(Point(id=chunk["id"], payload=payload))
                    continue
                text = embedding_text(chunk.get("context", ""), chunk["text"])
                points.append(chunk_point(chunk["id"], self._vector, vector, text, payload))
                if len(points) >= WRITE_BATCH:
                    self._client.upsert(self._collection, points)
                    points = []
        self._client.upsert(self._collection, points)
        self._client.overwrite_payloads(self._collection, payloads)
        self._written_aliases.update((page.url, frozenset(page.aliases)) for page in pages if page.aliases)
        self._written_versions.update((page.url, page.versions) for page in pages if page.versions)
        for page in changed:
            keep = tuple(chunk["id"] for chunk in page.chunks)
            self._client.delete(self._collection, scope=Scope(url=page.url, exclude_ids=keep))

    def _apply_dedup(self) -> None:
        """Delete chunk copies that boilerplate now covers and the pages found to be aggregates
        after they were written; write every page's late aliases."""
        assert self._client is not None
        self._client.delete(self._collection, self._superseded)
        self._stats.inc_value("harvester/index/superseded_deleted", len(self._superseded))
        if self._aggregates:
            for url, keep in self._aggregates:
                self._delete_aggregate(url, keep)
            self._stats.inc_value("harvester/index/aggregates_deleted", len(self._aggregates))
        for url, aliases in self._aliases.items():
            if set(aliases) - self._written_aliases.get(url, frozenset()):
                self._client.set_metadata(self._collection, Scope(url=url), {"aliases": list(aliases)})
        for url, versions in self._versions.items():
            self._client.set_metadata(self._collection, Scope(url=url),
                                      {"versions": self._all_versions(url, versions)})

    def _all_versions(self, url: str, versions: list[str]) -> list[str]:
        """``versions`` with those the collection already lists for the page: a crawl of one
        version keeps the others' claim on a text they share."""
        stored = self._recrawl.pages.get(url) if self._recrawl is not None else None
        found = [*self._written_versions.get(url, ()), *versions, *self._versions.get(url, ())]
        if stored is not None:
            found += sorted(stored.versions)
        return list(dict.fromkeys(found))

    def _delete_aggregate(self, url: str, keep: Callable[[str], bool] | None) -> None:
        """Delete the points of the aggregate page ``url``, but the chunks ``keep`` finds text of its
        own in and a boilerplate text stored once under it (no other page holds a copy)."""
        assert self._client is not None
        if keep is None:
            self._delete_pages([url])
            return
        kept = [record.id for record in self._client.scroll(self._collection, Scope(url=url),
                                                            keys=["page_content", "metadata"])
                if record.payload.get("metadata", {}).get("boilerplate")
                or keep(record.payload.get("page_content") or "")]
        self._client.delete(self._collection, scope=Scope(url=url, exclude_ids=tuple(kept)))
        self._stats.inc_value("harvester/index/aggregate_chunks_kept", len(kept))
        logger.info("Deleted the points of %s but %d chunks of its own text", url, len(kept))

    def _changed(self, page: PageItem) -> bool:
        """Whether ``page`` must be written, counting it as new, updated or unchanged."""
        stored = self._recrawl.pages.get(page.url) if self._recrawl is not None else None
        if self._recrawl is None:
            return True
        if stored is None:
            self._recrawl.count("new")
            return True
        same = (
            stored.consistent
            and stored.content_hash == page.content_hash
            and stored.chunk_ids == {chunk["id"] for chunk in page.chunks}
        )
        if not same:
            self._recrawl.count("updated")
            return True
        self._recrawl.count("unchanged_hash")
        # Same content: rewrite the payloads only when the validators, links or versions changed, or
        # when the LlamaIndex node fields were turned on or off since (rewritten in place, vectors kept).
        return self._nodes != stored.node_fields or (
            stored.etag, stored.last_modified, stored.links, stored.versions
        ) != (page.etag, page.last_modified, list(page.links), set(page.versions))

    def _delete_pages(self, urls: list[str]) -> None:
        assert self._client is not None
        for url in urls:
            self._client.delete(self._collection, scope=Scope(url=url))
            logger.info("Deleted the points of %s", url)

    def _prune(self, urls: list[str]) -> None:
        """Called by the Recrawl extension when the spider closes (the reactor waits for it)."""
        if self._client is not None:
            self._worker.call(self._delete_pages, urls)

    def _spider_idle(self, spider: object) -> None:
        # A cluster worker idles while the others crawl: its batch is written now, so that search
        # finds its pages and their leases are released (LeaseAckMiddleware) rather than held idle.
        if self._pending and self._client is not None and (self._idle_flush is None or self._idle_flush.done()):
            self._stats.inc_value("harvester/index/idle_writes")
            self._idle_flush = asyncio.ensure_future(self._flush())
            self._idle_flush.add_done_callback(_log_failure)

    async def close_spider(self) -> None:
        try:
            if self._idle_flush is not None and not self._idle_flush.done():
                await asyncio.wait([self._idle_flush])
            await self._flush()
            if self._client is not None:
                await self._worker.run(self._apply_dedup)
        finally:
            if self._recrawl is None:
                await self._close_client()

    def _compact(self) -> None:
        """Rebuild the embedded store's shard when re-crawls left too much of it dead."""
        if not isinstance(self._client, EdgeStore) or not self._compact_share:
            return
        try:
            done = self._client.compact(self._collection, self._compact_share)
        except Exception:  # the store is left as it was: still whole, only larger
            logger.exception("Could not compact collection %r", self._collection)
            return
        if done is not None:
            self._stats.set_value("harvester/index/compaction/bytes_before", done.bytes_before)
            self._stats.set_value("harvester/index/compaction/bytes_after", done.bytes_after)
            self._stats.set_value("harvester/index/compaction/seconds", round(done.seconds, 3))

    def _export(self) -> None:
        """Mirror the collection into ``HARVESTER_EXPORT_PATH``, so the frameworks' copy follows
        each crawl."""
        if not self._export_path or self._client is None:
            return
        if not self._url and self._engine == "local" and os.path.abspath(self._export_path) == os.path.abspath(
                self._path):
            logger.error("Not exporting: HARVESTER_EXPORT_PATH is the store itself (%s)", self._path)
            return
        started = time.monotonic()
        try:
            target = open_store(None, None, self._export_path, "local", self._wait)
            try:
                counts = mirror_collection(self._client, self._collection, target)
            finally:
                target.close()
        except Exception:  # a folder another process holds, a full disk: the store itself is fine
            logger.exception("Could not export collection %r to %s", self._collection, self._export_path)
            self._stats.inc_value("harvester/index/export/failed")
            return
        self._stats.set_value("harvester/index/export/points", counts.copied)
        self._stats.set_value("harvester/index/export/deleted", counts.deleted)
        self._stats.set_value("harvester/index/export/seconds", round(time.monotonic() - started, 3))
        logger.info("Exported %d points of %r to %s, deleted %d it no longer holds",
                    counts.copied, self._collection, self._export_path, counts.deleted)

    async def _close_client(self) -> None:
        if self._client is not None:
            await self._worker.run(self._export)
            await self._worker.run(self._compact)
            await self._worker.run(self._client.close)
            self._client = None
        self._worker.close()

    async def _spider_closed(self, spider: object, reason: str) -> None:
        # Connected after the Recrawl extension's handler, which prunes through this client.
        await self._close_client()


def _log_failure(flush: asyncio.Future[None]) -> None:
    if not flush.cancelled() and flush.exception() is not None:
        logger.error("Could not write the index batch to Qdrant while the crawl idled", exc_info=flush.exception())
