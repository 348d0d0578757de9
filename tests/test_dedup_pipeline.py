"""DedupPipeline on small stand-in items."""

import pytest
from scrapy.utils.misc import build_from_crawler

from harvester.dedup.pipeline import DedupPipeline
from harvester.exceptions import DuplicatePage
from tests.components import crawler_with, page


def test_dedup_drops_same_url_and_same_content():
    import asyncio

    pipeline = build_from_crawler(DedupPipeline, crawler_with())
    asyncio.run(pipeline.process_item(page()))
    with pytest.raises(DuplicatePage, match="URL already stored"):
        asyncio.run(pipeline.process_item(page(content_hash="other")))
    with pytest.raises(DuplicatePage, match=r"same content as http://h/a\.html"):
        asyncio.run(pipeline.process_item(page(url="http://h/index.html")))
    stored = asyncio.run(pipeline.process_item(page(url="http://h/b.html", content_hash="h2", markdown="# B\n\nother")))
    assert stored.url == "http://h/b.html"
