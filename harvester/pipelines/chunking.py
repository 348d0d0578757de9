"""Split each page's Markdown into chunks the embedding model reads whole."""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from harvester.content.chunking import TokenCounter, chunk_markdown, tokenizer_counter
from harvester.embedding import load_embedder
from harvester.exceptions import NoChunks
from harvester.store import point_id
from harvester.threads import Worker

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from harvester.items import PageItem

logger = logging.getLogger(__name__)


class ChunkingPipeline:
    """Fill ``item.chunks`` from ``item.markdown``, bounded by the embedding model's own tokenizer.

    Settings: ``HARVESTER_CHUNKING_ENABLED``, ``HARVESTER_CHUNK_MAX_TOKENS`` (0 = the model's
    ``max_seq_length`` less its special tokens; larger values are capped there),
    ``HARVESTER_CHUNK_OVERLAP_TOKENS``, ``HARVESTER_EMBEDDING_MODEL`` (whose tokenizer counts).
    Stats: ``harvester/chunking/chunks``, ``harvester/chunking/max_tokens``.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("HARVESTER_CHUNKING_ENABLED"):
            raise NotConfigured
        self._stats = crawler.stats
        self._model_name = settings.get("HARVESTER_EMBEDDING_MODEL")
        self._device = settings.get("HARVESTER_EMBEDDING_DEVICE")
        self._max_tokens_setting = settings.getint("HARVESTER_CHUNK_MAX_TOKENS")
        self._overlap = settings.getint("HARVESTER_CHUNK_OVERLAP_TOKENS")
        if self._max_tokens_setting < 0 or self._overlap < 0:
            raise NotConfigured("HARVESTER_CHUNK_MAX_TOKENS and _OVERLAP_TOKENS must be >= 0")
        self._count: TokenCounter | None = None
        self._worker = Worker("harvester-chunking")
        self._max_tokens = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def open_spider(self) -> None:
        embedder = await self._worker.run(load_embedder, self._model_name, self._device)
        # Its own copy: the model's tokenizer is reconfigured by every encode() in another thread.
        self._count = tokenizer_counter(copy.deepcopy(embedder.tokenizer))
        limit = embedder.max_tokens
        self._max_tokens = min(self._max_tokens_setting or limit, limit)
        self._overlap = min(self._overlap, self._max_tokens // 2)
        self._stats.set_value("harvester/chunking/max_tokens", self._max_tokens)
        logger.info("Chunks hold at most %d tokens of %s", self._max_tokens, self._model_name)

    async def process_item(self, item: PageItem) -> PageItem:
        assert self._count is not None
        chunks = await self._worker.run(
            chunk_markdown, item.markdown, self._count,
            max_tokens=self._max_tokens, overlap_tokens=self._overlap,
        )
        if not chunks:
            raise NoChunks(f"nothing to chunk on {item.url}", log_level="INFO")
        item.chunks = [
            {
                "id": point_id(item.url, index),
                "index": index,
                "text": chunk.text,
                "heading_path": list(chunk.heading_path),
                "token_count": chunk.token_count,
            }
            for index, chunk in enumerate(chunks)
        ]
        self._stats.inc_value("harvester/chunking/chunks", len(chunks))
        return item

    def close_spider(self) -> None:
        self._worker.close()
