"""ChunkingPipeline: context lines within the limit, the tokenizers' thread pool."""

from scrapy.utils.misc import build_from_crawler

from harvester.chunking.pipeline import ChunkingPipeline
from tests.components import crawler_with


def test_context_lines_shrink_when_they_would_break_the_limit():
    from harvester.chunking.chunker import TextChunk, whitespace_counter

    pipeline = build_from_crawler(ChunkingPipeline, crawler_with())
    pipeline._count, pipeline._max_tokens = whitespace_counter, 10
    pieces = [TextChunk("one two three", ("Short",), 3), TextChunk("w " * 7, ("A long section heading",), 7),
              TextChunk("w " * 10, ("H",), 10)]
    assert pipeline._fit_contexts("Title", pieces) == ["Title > Short", "Title", ""]


def test_chunking_turns_the_tokenizers_thread_pool_off_unless_the_environment_says(monkeypatch):
    import os

    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    build_from_crawler(ChunkingPipeline, crawler_with())
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    build_from_crawler(ChunkingPipeline, crawler_with())
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"
