"""A page's own Markdown, fetched and used where it holds what its HTML shows, and its ``llms.txt``
description: the extraction middleware's other helper (requests, the engine, stats)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import scrapy
from scrapy.http import HtmlResponse, TextResponse

from harvester.extract.page_item import header
from harvester.meta import DONT_EXTRACT, PROBE
from harvester.report.cpu import stat_key, timed_call
from harvester.site_markdown.llms import (
    MARKDOWN_TYPES,
    announced_twin,
    html_url_of,
    linked_twin,
    negotiates,
)
from harvester.site_markdown.verify import check_twin, twin_markdown
from harvester.state import crawl_state
from harvester.urls.rules import UrlRules, content_hash

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from harvester.items import PageItem

logger = logging.getLogger(__name__)

ACCEPT = "text/markdown, text/x-markdown;q=0.9, text/plain;q=0.5"
# Many sites vary on Accept without serving Markdown: a host that answered this many asks with
# something else, and never with Markdown, is not asked again.
NEGOTIATION_TRIES = 3


class SiteMarkdown:
    """A page's Markdown twin replaces its HTML conversion when it holds what the HTML shows
    (``harvester.site_markdown.verify``); the twin's URL becomes an alias of the page, never a
    page of its own. The extraction middleware asks it about each page it stores.

    A twin is found from the ``llms.txt`` the ``sitemap`` spider read (a listed ``page.md``), the
    page's ``<link rel="alternate" type="text/markdown">`` or ``Link`` header, or a ``Vary: Accept``
    on the page (the same URL asked for with ``Accept: text/markdown``; a host that answers
    ``NEGOTIATION_TRIES`` such asks without Markdown is not asked again). It is fetched through the
    downloader middlewares (robots.txt, the SSRF guard, retries), on the page's host only.
    The ``llms.txt`` description of a page becomes its ``description``.
    Settings: ``HARVESTER_SITE_MARKDOWN_ENABLED``, ``HARVESTER_SITE_MARKDOWN_MIN_COVERAGE``.
    Stats: ``harvester/site_markdown/used``, ``harvester/site_markdown/rejected`` and
    ``.../rejected/<reason>`` (``code``, ``table``, ``passage``, ``coverage``, ``empty``),
    ``harvester/site_markdown/unavailable`` (no Markdown came back), ``harvester/site_markdown/descriptions``,
    ``harvester/cpu_ms/site_markdown``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._min_coverage = crawler.settings.getfloat("HARVESTER_SITE_MARKDOWN_MIN_COVERAGE")
        self._rules = UrlRules.from_crawler(crawler)
        self._negotiation_misses: dict[str, int] = {}  # by host; -1 once a host served Markdown

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | None:
        """None when ``HARVESTER_SITE_MARKDOWN_ENABLED`` is off."""
        return cls(crawler) if crawler.settings.getbool("HARVESTER_SITE_MARKDOWN_ENABLED") else None

    async def use_twin(self, item: PageItem, response: Response) -> None:
        """Give ``item`` (extracted from ``response``) its ``llms.txt`` description, and its twin's
        Markdown when the twin holds what the HTML shows."""
        stats = self.crawler.stats
        key = self._rules.page_key(item.url)
        index = crawl_state(self.crawler).llms_index
        listed = index.get(key) if index is not None else None
        if listed is not None and listed.description:
            item.description = listed.description
            stats.inc_value("harvester/site_markdown/descriptions")
        twin, negotiated = self._announced(response)
        if (twin is None or negotiated) and listed is not None and listed.twin is not None:
            twin, negotiated = listed.twin, False  # a named twin before asking the page's URL
        host = self._rules.host_key(item.url)
        if twin is None or self._rules.host_key(twin) != host:
            return
        if negotiated and self._negotiation_misses.get(host, 0) >= NEGOTIATION_TRIES:
            return
        text = await self._fetch(twin)
        if negotiated and self._negotiation_misses.get(host, 0) >= 0:
            self._negotiation_misses[host] = -1 if text is not None else self._negotiation_misses.get(host, 0) + 1
        if text is None:
            stats.inc_value("harvester/site_markdown/unavailable")
            return
        markdown = twin_markdown(text)
        check, cpu_ms = timed_call(check_twin, item.markdown, markdown, min_coverage=self._min_coverage)
        stats.inc_value(stat_key("site_markdown"), cpu_ms)
        if not check.accepted:
            stats.inc_value("harvester/site_markdown/rejected")
            stats.inc_value(f"harvester/site_markdown/rejected/{check.reason}")
            logger.info("Markdown twin %s of %s not used (%s: coverage %.2f, %d code blocks and %d tables "
                        "missing, longest missing run %d words)", twin, item.url, check.reason, check.coverage,
                        check.missing_code, check.missing_tables, check.missing_run)
            return
        stats.inc_value("harvester/site_markdown/used")
        item.markdown = markdown
        item.content_hash = content_hash(markdown)
        if twin != item.url and twin not in item.aliases:
            item.aliases.append(twin)

    async def _fetch(self, url: str) -> str | None:
        """The twin's text, or None when it is not Markdown (an HTML page, an error, refused)."""
        request = scrapy.Request(url, headers={"Accept": ACCEPT}, meta={DONT_EXTRACT: True, PROBE: True},
                                 dont_filter=True)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as exc:  # refused by robots.txt or the guard, or a failed download
            logger.debug("Markdown twin %s not fetched: %s", url, exc)
            return None
        kind = (header(response, b"Content-Type") or "").split(";")[0].strip().lower()
        if response.status != 200 or isinstance(response, HtmlResponse):
            return None
        if isinstance(response, TextResponse) and kind in (*MARKDOWN_TYPES, "text/plain"):
            return response.text
        if html_url_of(response.url) is not None and kind in ("", "application/octet-stream"):
            # Object stores serve a .md file as bytes.
            try:
                return response.body.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return None

    @staticmethod
    def _announced(response: Response) -> tuple[str | None, bool]:
        """The twin the page announces, and whether it is the page's own URL asked for Markdown."""
        twin = announced_twin(response.body, response.url) or linked_twin(header(response, b"Link"), response.url)
        if twin is None and negotiates(header(response, b"Vary")):
            return response.url, True
        return twin, False
