"""First of the item pipelines: a page served under an alias (``/en/stable/``, mike's ``latest``)
gets the version the alias serves, read once per file from what the generator writes beside the
pages (Sphinx's ``documentation_options.js``, mike's ``versions.json``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from harvester.meta import DONT_EXTRACT, PROBE
from harvester.versions.detect import mike_aliases, options_js_version

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from harvester.items import PageItem

logger = logging.getLogger(__name__)


class VersionPipeline:
    """Resolves aliases to versions. A file is fetched once per crawl (then remembered, as is a
    failure); pages that arrive while it is fetched wait for it. Stats:
    ``harvester/versions/files_read``, ``harvester/versions/aliases_resolved``."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._files: dict[str, str | None] = {}
        self._waiting: dict[str, list[Deferred[None]]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_item(self, item: PageItem) -> PageItem:
        alias, where = item.version, item.version_file
        if not alias or not where:
            return item
        if where not in self._files:
            await self._read(where)
        text = self._files.get(where)
        resolved = None
        if text is not None:
            resolved = mike_aliases(text).get(alias) if where.endswith(".json") else options_js_version(text)
        if resolved and resolved != alias:
            self.crawler.stats.inc_value("harvester/versions/aliases_resolved")
            item.version, item.versions = resolved, [resolved]
        return item

    async def _read(self, url: str) -> None:
        if url in self._waiting:
            waiter: Deferred[None] = Deferred()
            self._waiting[url].append(waiter)
            await maybe_deferred_to_future(waiter)
            return
        self._waiting[url] = []
        text = None
        try:
            assert self.crawler.engine is not None
            response = await self.crawler.engine.download_async(Request(url, priority=100, dont_filter=True,
                                                                               meta={PROBE: True, DONT_EXTRACT: True}))
            if response.status == 200:
                text = response.body.decode("utf-8", "replace")
                self.crawler.stats.inc_value("harvester/versions/files_read")
        except Exception as exc:
            logger.debug("Cannot read %s: %s", url, exc)
        self._files[url] = text
        for waiter in self._waiting.pop(url):
            waiter.callback(None)
