"""Embed every chunk with sentence-transformers, in batches that span pages."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import CloseSpider, NotConfigured

from harvester.chunking.context import embedding_text
from harvester.embedding.folder import ModelUnavailable, is_local_model
from harvester.embedding.models import backend_options, load_backend, settings_backend
from harvester.embedding.process import ProcessEmbedder
from harvester.memory import trim_malloc
from harvester.recrawl.extension import Recrawl
from harvester.threads import Worker

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from harvester.items import PageItem

logger = logging.getLogger(__name__)

# A batch is padded to its longest text: 8 batches' chunks sorted together pad less than a page's.
GROUP_BATCHES = 8

Vector = Any  # one row of float32 (numpy); the index turns it into a list


class EmbeddingPipeline:
    """Set ``item.vectors`` (normalised, one per chunk; None for a chunk whose point the index
    already holds, see ``harvester.recrawl.extension``).

    Pages wait in a queue while the model encodes the previous group in its own thread; the next
    group takes every waiting page (up to ``GROUP_BATCHES`` batches of
    ``HARVESTER_EMBEDDING_BATCH_SIZE`` chunks), so groups grow when the model is the bottleneck and
    downloads go on meanwhile. The queue is bounded by
    Scrapy itself: a page waiting here keeps its response active in the scraper, and past
    ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` the engine stops downloading until the model catches up.
    sentence-transformers sorts a group's chunks by length before cutting it into batches, so
    padding stays small. The device is the
    GPU when torch sees one, unless ``HARVESTER_EMBEDDING_DEVICE`` says otherwise.
    Settings: ``HARVESTER_EMBEDDING_ENABLED``, ``HARVESTER_EMBEDDING_MODEL``,
    ``HARVESTER_EMBEDDING_DEVICE``, ``HARVESTER_EMBEDDING_BACKEND`` (``torch``, ``onnx``,
    ``onnx-int8``), ``HARVESTER_ONNX_CACHE_DIR``, ``HARVESTER_EMBEDDING_BATCH_SIZE``,
    ``HARVESTER_EMBEDDING_CACHE_SIZE`` (texts whose vectors are kept, so a repeated text is
    embedded once per crawl), ``HARVESTER_EMBEDDING_THREADS`` (torch threads; 0 = torch's default),
    ``HARVESTER_EMBEDDING_PROCESS`` (run the model in a child process, so that it never waits for
    the crawler's GIL; see ``harvester/embedding/process.py``).
    Stats: ``harvester/embedding/chunks`` (encoded by the model), ``harvester/embedding/cache_hits``,
    ``harvester/embedding/batches``, ``harvester/embedding/max_batch``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_EMBEDDING_ENABLED"):
            raise NotConfigured
        self._stats = crawler.stats
        self._model_name = settings.get("HARVESTER_EMBEDDING_MODEL")
        self._backend = backend_options(settings)
        # The spec's check (harvester.config.checks) rejects a batch size under 1 before the crawl.
        self._batch_size = settings.getint("HARVESTER_EMBEDDING_BATCH_SIZE")
        self._worker = Worker("harvester-embedding")
        self._waiting: list[tuple[list[str], asyncio.Future[list[Vector]]]] = []
        self._draining: asyncio.Task[None] | None = None
        self._embedder: Any = None  # an Embedder, an OnnxEmbedder or a ProcessEmbedder
        # Repeated texts (boilerplate chunks, the same page under two URLs) are embedded once.
        self._cache: OrderedDict[bytes, Vector] = OrderedDict()
        self._cache_size = settings.getint("HARVESTER_EMBEDDING_CACHE_SIZE")
        self._threads = settings.getint("HARVESTER_EMBEDDING_THREADS")
        self._in_process = settings.getbool("HARVESTER_EMBEDDING_PROCESS")
        self._torch_here = not self._in_process and settings_backend(settings) == "torch"
        # With torch in the crawler the malloc tuning leaves glibc's heap threshold alone (see
        # harvester.memory.tune_malloc): what the model frees after a group goes back to the system here.
        self._trim = settings.getbool("HARVESTER_MALLOC_TUNING") and self._torch_here
        self._crawler = crawler
        self._recrawl: Recrawl | None = None
        self._preloading: asyncio.Future[None] | None = None
        self._closing: asyncio.Future[Any] | None = None
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def open_spider(self) -> None:
        self._recrawl = self._crawler.get_extension(Recrawl)
        if is_local_model(self._model_name):
            return  # loaded with the first chunk to embed: a re-crawl may have none
        try:
            await self._worker.run(self._load)
        except ModelUnavailable as exc:
            logger.error("%s", exc)
            raise CloseSpider("embedding_model_unavailable") from exc

    def _spider_opened(self, spider: Any) -> None:
        self._opened_at = time.monotonic()
        # A first crawl needs the model, so it loads while the first pages download rather than
        # after them; a re-crawl of a stored site (all 304s, perhaps) loads it only if it must.
        if self._embedder is None and (self._recrawl is None or not self._recrawl.chunk_ids):
            self._preloading = asyncio.ensure_future(self._preload())

    async def _preload(self) -> None:
        try:
            await self._worker.run(self._load)
        except ModelUnavailable as exc:
            logger.error("%s", exc)
            # Not awaited: closing waits for this pipeline's close_spider, which waits for us.
            self._closing = asyncio.ensure_future(
                self._crawler.engine.close_spider_async(reason="embedding_model_unavailable"))

    def _load(self) -> Any:
        """The model (an Embedder, an OnnxEmbedder or a ProcessEmbedder), loaded on first use."""
        if self._embedder is None:
            if self._in_process:
                embedder = ProcessEmbedder(self._model_name, self._backend)
                try:
                    embedder.load()
                except BaseException:
                    embedder.close()
                    raise
            else:
                if self._threads and self._torch_here:
                    # torch's pool is process-wide; extraction runs beside it, so on few cores
                    # fewer model threads can be faster.
                    import torch

                    torch.set_num_threads(self._threads)
                embedder = load_backend(self._model_name, **self._backend)
            self._embedder = embedder
            # The benchmark compares the pipeline with the model from this moment on.
            self._stats.set_value("harvester/embedding/model_ready_seconds",
                                  round(time.monotonic() - getattr(self, "_opened_at", time.monotonic()), 2))
            where = "a child process" if self._in_process else "the crawler process"
            logger.info("Embedding with %s on %s, in %s", self._model_name, embedder.device, where)
        return self._embedder

    async def process_item(self, item: PageItem) -> PageItem:
        # A chunk whose point is already stored keeps its vector: its id is derived from the page
        # URL and the embedded text, so the stored vector is the one this text would get.
        stored = self._recrawl.chunk_ids if self._recrawl is not None else set()
        todo = [i for i, chunk in enumerate(item.chunks) if chunk["id"] not in stored]
        if self._recrawl is not None:
            self._recrawl.count("chunks_embedded", len(todo))
            self._recrawl.count("chunks_reused", len(item.chunks) - len(todo))
        texts = [
            embedding_text(item.chunks[i].get("context", ""), item.chunks[i]["text"]) for i in todo
        ]
        if not texts:
            item.vectors = [None] * len(item.chunks)
            return item
        future: asyncio.Future[list[Vector]] = asyncio.get_running_loop().create_future()
        self._waiting.append((texts, future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.ensure_future(self._drain())
        vectors = await future
        item.vectors = [None] * len(item.chunks)
        for i, vector in zip(todo, vectors, strict=True):
            item.vectors[i] = vector
        return item

    async def _drain(self) -> None:
        while self._waiting:
            batch = self._take_batch()
            texts = [text for page_texts, _ in batch for text in page_texts]
            try:
                vectors = await self._vectors(texts)
            except Exception as exc:  # one failing batch must fail its pages, not the crawl
                for _, future in batch:
                    future.set_exception(exc)
                continue
            start = 0
            for page_texts, future in batch:
                future.set_result(vectors[start:start + len(page_texts)])
                start += len(page_texts)

    def _take_batch(self) -> list[tuple[list[str], asyncio.Future[list[Vector]]]]:
        batch, size = [], 0
        limit = self._batch_size * GROUP_BATCHES
        while self._waiting and (not batch or size + len(self._waiting[0][0]) <= limit):
            entry = self._waiting.pop(0)
            batch.append(entry)
            size += len(entry[0])
        return batch

    async def _vectors(self, texts: list[str]) -> list[Vector]:
        """Vectors for ``texts``; texts embedded before in this crawl come from the cache."""
        keys = [hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).digest() for text in texts]
        found = {key: self._cache[key] for key in keys if key in self._cache}
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            encoded = await self._worker.run(self._encode, list(missing.values()))
            self._count(len(missing))
            for key, vector in zip(missing, encoded, strict=True):
                found[key] = vector
                self._remember(key, vector)
        self._stats.inc_value("harvester/embedding/cache_hits", len(texts) - len(missing))
        return [found[key] for key in keys]

    def _remember(self, key: bytes, vector: Vector) -> None:
        self._cache[key] = vector
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _encode(self, texts: list[str]) -> list[Vector]:
        vectors = self._load().encode(texts, batch_size=self._batch_size)
        if self._trim:
            trim_malloc()
        return vectors

    def _count(self, chunks: int) -> None:
        self._stats.inc_value("harvester/embedding/chunks", chunks)
        self._stats.inc_value("harvester/embedding/batches")
        self._stats.max_value("harvester/embedding/max_batch", chunks)

    async def close_spider(self) -> None:
        if self._draining is not None:
            await self._draining
        if self._preloading is not None:
            await asyncio.gather(self._preloading, return_exceptions=True)
        if isinstance(self._embedder, ProcessEmbedder):
            self._embedder.close()
        self._worker.close()
