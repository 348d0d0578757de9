"""Store chunks and their vectors in Qdrant: embedded local mode by default, a server by URL."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from qdrant_client import models
from scrapy.exceptions import CloseSpider, NotConfigured

from harvester.content.context import embedding_text
from harvester.embedding import ModelUnavailable, backend_options, load_backend
from harvester.signals import pages_indexed
from harvester.store import (
    CollectionMismatch,
    chunk_payload,
    chunk_vectors,
    ensure_collection,
    open_client,
    stale_chunks_filter,
)
from harvester.threads import Worker

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from harvester.items import PageItem

logger = logging.getLogger(__name__)


class IndexPipeline:
    """Upsert one point per chunk (deterministic ids; the model's dense vector and a BM25 sparse
    vector), in batches across pages; after a page's points are written, delete its points from an
    earlier crawl that no longer exist.

    Settings: ``HARVESTER_INDEX_ENABLED``, ``HARVESTER_QDRANT_PATH`` (local mode),
    ``QDRANT_URL`` / ``QDRANT_API_KEY`` (server), ``HARVESTER_QDRANT_COLLECTION``,
    ``HARVESTER_QDRANT_BATCH_SIZE`` (points per upsert), ``HARVESTER_EMBEDDING_MODEL``.
    Stats: ``harvester/index/points``, ``harvester/index/upserts``, ``harvester/index/pages``.
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
        self._collection = settings.get("HARVESTER_QDRANT_COLLECTION")
        self._batch_size = settings.getint("HARVESTER_QDRANT_BATCH_SIZE")
        self._model_name = settings.get("HARVESTER_EMBEDDING_MODEL")
        self._backend = backend_options(settings)
        self._worker = Worker("harvester-index")
        self._client: QdrantClient | None = None
        self._vector = ""
        self._pending: list[PageItem] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def open_spider(self) -> None:
        where = self._url or self._path
        try:
            embedder = await self._worker.run(load_backend, self._model_name, **self._backend)
            self._vector = embedder.vector_name
            self._client = await self._worker.run(open_client, self._url, self._api_key, self._path)
            created = await self._worker.run(
                ensure_collection, self._client, self._collection, self._vector, embedder.dimension,
                server=bool(self._url),
            )
        except (CollectionMismatch, ModelUnavailable) as exc:
            logger.error("Cannot index into Qdrant at %s: %s", where, exc)
            raise CloseSpider("index_unavailable") from exc
        except Exception as exc:  # connection refused, locked local store, bad URL...
            logger.error("Cannot open Qdrant at %s: %s", where, exc)
            raise CloseSpider("index_unavailable") from exc
        logger.info(
            "%s Qdrant collection %r at %s", "Created" if created else "Using", self._collection, where
        )

    async def process_item(self, item: PageItem) -> PageItem:
        self._pending.append(item)
        if sum(len(page.chunks) for page in self._pending) >= self._batch_size:
            await self._flush()
        return item

    async def _flush(self) -> None:
        pages, self._pending = self._pending, []
        if pages:
            await self._worker.run(self._write, pages)
            self._stats.inc_value("harvester/index/upserts")
            self._stats.inc_value("harvester/index/pages", len(pages))
            self._stats.inc_value("harvester/index/points", sum(len(p.chunks) for p in pages))
            self._signals.send_catch_log(pages_indexed, items=pages)

    def _write(self, pages: list[PageItem]) -> None:
        assert self._client is not None
        harvested_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        points = [
            models.PointStruct(
                id=chunk["id"],
                vector=chunk_vectors(
                    self._vector, vector, embedding_text(chunk.get("context", ""), chunk["text"])
                ),
                payload=chunk_payload(page, chunk, harvested_at),
            )
            for page in pages
            for chunk, vector in zip(page.chunks, page.vectors or (), strict=True)
        ]
        self._client.upsert(self._collection, points=points, wait=True)
        for page in pages:
            keep = [chunk["id"] for chunk in page.chunks]
            self._client.delete(
                self._collection,
                points_selector=models.FilterSelector(filter=stale_chunks_filter(page.url, keep)),
                wait=True,
            )

    async def close_spider(self) -> None:
        try:
            await self._flush()
        finally:
            if self._client is not None:
                await self._worker.run(self._client.close)
            self._worker.close()


