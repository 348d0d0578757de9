"""Split each page's Markdown into chunks the embedding model reads whole."""

from __future__ import annotations

import copy
import logging
import os
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from harvester.chunking.chunker import (
    TextChunk,
    TokenCounter,
    TokenIndexer,
    chunk_markdown,
    tokenizer_counter,
)
from harvester.chunking.context import context_line, embedding_text, heading_paths
from harvester.embedding.folder import is_local_model
from harvester.embedding.models import backend_options, load_backend
from harvester.embedding.tokenizer import load_model_tokenizer
from harvester.exceptions import NoChunks
from harvester.index.ids import chunk_point_id
from harvester.report.cpu import stat_key, timed_call
from harvester.threads import Worker

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from harvester.items import PageItem

logger = logging.getLogger(__name__)


class ChunkingPipeline:
    """Fill ``item.chunks`` from ``item.markdown``, bounded by the embedding model's own tokenizer.

    Each chunk also gets its ``context`` line (page title > heading path), which is embedded in
    front of its text; the limit holds for context and text together.

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
        self._backend = backend_options(settings)
        self._max_tokens_setting = settings.getint("HARVESTER_CHUNK_MAX_TOKENS")
        self._overlap = settings.getint("HARVESTER_CHUNK_OVERLAP_TOKENS")
        if self._max_tokens_setting < 0 or self._overlap < 0:
            raise NotConfigured("HARVESTER_CHUNK_MAX_TOKENS and _OVERLAP_TOKENS must be >= 0")
        self._count: TokenCounter | None = None
        # With a tokenizer whose counts add up over whitespace: a page is tokenized once.
        self._token_index: TokenIndexer | None = None
        self._worker = Worker("harvester-chunking", settings.getint("HARVESTER_OFFLOAD_MIN_SIZE"))
        # The tokenizer's thread pool (rayon) spreads a batch over every core and its threads spin
        # while they wait: 36,000 thread preemptions in a crawl of the Python docs, for batches of
        # a few runs of text. Set before its first use; a value in the environment wins.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self._max_tokens = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def open_spider(self) -> None:
        if not is_local_model(self._model_name):
            await self._worker.run(self._load)
        # A local model loads with the first page to chunk: a re-crawl of an unchanged site has none.

    def _load(self) -> None:
        light = load_model_tokenizer(self._model_name)
        if light is not None:
            # The model's tokenizer without the model: chunking need not wait for it to load.
            self._count = light.count
            self._token_index = light.token_index if light.additive else None
            limit = light.max_tokens
        else:
            embedder = load_backend(self._model_name, **self._backend)
            # Its own copy: the model's tokenizer is reconfigured by every encode() in another thread.
            self._count = tokenizer_counter(copy.deepcopy(embedder.tokenizer))
            limit = embedder.max_tokens
        self._max_tokens = min(self._max_tokens_setting or limit, limit)
        self._overlap = min(self._overlap, self._max_tokens // 2)
        self._stats.set_value("harvester/chunking/max_tokens", self._max_tokens)
        logger.info("Chunks hold at most %d tokens of %s", self._max_tokens, self._model_name)

    async def process_item(self, item: PageItem) -> PageItem:
        if getattr(item, "duplicate_of", None):
            return item  # an alias's feed line (HARVESTER_DEDUP_FEED_DUPLICATES): nothing to store
        # A tokenizer not loaded yet loads in the worker with this page, never on the reactor.
        size = len(item.markdown) if self._count is not None else sys.maxsize
        chunks, cpu_ms = await self._worker.run_sized(size, timed_call, self._chunk, item)
        self._stats.inc_value(stat_key("chunking"), cpu_ms)
        if not chunks:
            raise NoChunks(f"nothing to chunk on {item.url}", log_level="INFO")
        item.chunks = chunks
        self._stats.inc_value("harvester/chunking/chunks", len(chunks))
        return item

    def _chunk(self, item: PageItem) -> list[dict[str, Any]]:
        """Chunks whose embedded text (context line + text) stays within the model's limit."""
        if self._count is None:
            self._load()
        assert self._count is not None
        contexts = [context_line(item.title, path) for path in heading_paths(item.headings) or [()]]
        # Room for the longest context line of the page (+2 for the blank line after it), at most
        # a third of the budget: a page with absurd headings gets shorter context lines instead.
        reserve = min(max(self._count(contexts)) + 2, self._max_tokens // 3)
        pieces = chunk_markdown(
            item.markdown, self._count, max_tokens=self._max_tokens - reserve, overlap_tokens=self._overlap,
            token_index=self._token_index,
        )
        contexts = self._fit_contexts(item.title, pieces)
        occurrences: Counter[str] = Counter()
        chunks = []
        for index, (piece, context) in enumerate(zip(pieces, contexts, strict=True)):
            embedded = embedding_text(context, piece.text)
            chunks.append({
                "id": chunk_point_id(item.url, embedded, occurrences[embedded]),
                "index": index,
                "text": piece.text,
                "heading_path": list(piece.heading_path),
                "context": context,
                "token_count": piece.token_count,
            })
            occurrences[embedded] += 1
        return chunks

    def _fit_contexts(self, title: str, pieces: list[TextChunk]) -> list[str]:
        """Each piece's context line, shortened (title only, then none) where the whole is over."""
        assert self._count is not None
        contexts = [context_line(title, piece.heading_path) for piece in pieces]
        over = list(range(len(pieces)))
        for fallback in (context_line(title, ()), ""):
            totals = self._totals([(contexts[i], pieces[i]) for i in over])
            over = [i for i, total in zip(over, totals, strict=True) if total > self._max_tokens]
            for i in over:
                contexts[i] = fallback
        return contexts

    def _totals(self, embedded: list[tuple[str, TextChunk]]) -> list[int]:
        """Tokens of each context line and chunk text as embedded; with an additive tokenizer the
        chunk's own count plus its context line's (joined by a blank line), each context counted once."""
        assert self._count is not None
        if self._token_index is None:
            return self._count([embedding_text(context, piece.text) for context, piece in embedded])
        lines = list(dict.fromkeys(context for context, _ in embedded if context))
        sizes = dict(zip(lines, self._count(lines), strict=True))
        return [sizes.get(context, 0) + piece.token_count for context, piece in embedded]

    def close_spider(self) -> None:
        self._worker.close()
