"""``sitemap``: crawl the pages a site's sitemaps list."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import scrapy
from scrapy.spiders import SitemapSpider as ScrapySitemapSpider
from scrapy.spiders.sitemap import iterloc
from scrapy.utils.sitemap import Sitemap

from harvester.meta import DONT_EXTRACT, PROBE
from harvester.recrawl.extension import Recrawl
from harvester.recrawl.state import unchanged_since
from harvester.signals import page_failed
from harvester.spiders._base import HarvesterSpider
from harvester.urls.rules import scope_prefix

if TYPE_CHECKING:
    from scrapy.http import Response

logger = logging.getLogger(__name__)

SITEMAP_SUFFIXES = (".xml", ".xml.gz", "/robots.txt")


def sitemap_sources(start: str) -> list[str]:
    """Where to look for sitemaps: the start URL itself when it is one, else robots.txt's
    ``Sitemap:`` lines and ``sitemap.xml`` under the path prefix (and at the root)."""
    parts = urlsplit(start)
    if parts.path.endswith(SITEMAP_SUFFIXES):
        return [start]
    root = urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
    sources = [root + "robots.txt", root.rstrip("/") + scope_prefix(start) + "sitemap.xml"]
    if scope_prefix(start) != "/":
        sources.append(root + "sitemap.xml")
    return sources


class SitemapSpider(HarvesterSpider, ScrapySitemapSpider):
    """Scrapy's SitemapSpider (robots.txt ``Sitemap:`` lines, sitemap indexes, gzipped sitemaps)
    limited to the start URL's host and path prefix and to ``allow``/``deny``/``max_pages``.

    Stats: ``harvester/sitemap/invalid``, ``harvester/sitemap/out_of_scope``,
    ``harvester/recrawl/sitemap_lastmod_skipped`` (stored pages whose ``lastmod`` is not newer
    than their harvest: not fetched, still reached; ``HARVESTER_SITEMAP_LASTMOD_SKIP``).
    """

    name = "sitemap"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sitemap_urls = sitemap_sources(self.start_url)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.sitemap_urls:
            # A missing robots.txt or sitemap.xml at one of the probed places is normal.
            yield scrapy.Request(
                url,
                callback=self._parse_sitemap,
                meta={DONT_EXTRACT: True, PROBE: True},
            )

    def sitemap_filter(self, entries: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        is_index = getattr(entries, "type", "") == "sitemapindex"
        host_key = self.url_rules.host_key
        for entry in entries:
            loc = entry.get("loc", "")
            # Child sitemaps may live outside the path prefix, never on another host.
            if (host_key(loc) == host_key(self.start_url)) if is_index else self._wants_page(loc):
                if is_index or not self._unchanged_since_harvest(loc, entry.get("lastmod")):
                    yield entry
            else:
                self.crawler.stats.inc_value("harvester/sitemap/out_of_scope")

    def _unchanged_since_harvest(self, url: str, lastmod: str | None) -> bool:
        """Whether the sitemap's ``lastmod`` says the stored copy of ``url`` is current
        (``HARVESTER_SITEMAP_LASTMOD_SKIP``); such a page is not fetched but counts as reached."""
        if not lastmod or not self.settings.getbool("HARVESTER_SITEMAP_LASTMOD_SKIP"):
            return False
        recrawl = self.crawler.get_extension(Recrawl)
        page = recrawl.stored(url) if recrawl is not None else None
        if (page is None or not page.consistent or page.refresh_payload
                or not unchanged_since(lastmod, page.harvested_at)):
            return False
        recrawl.mark_unchanged(url)
        recrawl.count("sitemap_lastmod_skipped")
        return True

    def follow_stored_links(self, response: Response, urls: list[str]) -> Iterable[scrapy.Request]:
        """Pages come from the sitemaps only, also when one answers 304."""
        return ()

    def _wants_page(self, url: str) -> bool:
        return self.wants(url) and self.claim(url)

    def _parse_sitemap(self, response: Response) -> Iterable[scrapy.Request]:
        if response.url.endswith("/robots.txt"):
            for request in super()._parse_sitemap(response):
                request.meta[DONT_EXTRACT] = True
                yield request
            return
        sitemap = self._read_sitemap(response)
        if sitemap is None:
            self._invalid(response.url)
            return
        locations = iterloc(self.sitemap_filter(sitemap), self.sitemap_alternate_links)
        if sitemap.type == "sitemapindex":
            for loc in locations:
                yield scrapy.Request(loc, callback=self._parse_sitemap, meta={DONT_EXTRACT: True})
            return
        found = 0
        for loc in locations:
            found += 1
            yield scrapy.Request(self.request_url(loc), callback=self.parse, errback=self.page_failed)
        if not found:
            logger.warning("Sitemap %s lists no new page in scope", response.url)

    def _read_sitemap(self, response: Response) -> Sitemap | None:
        body = self._get_sitemap_body(response)
        if not body:
            return None
        try:
            sitemap = Sitemap(body)
        except Exception:  # lxml raises several types on hostile bodies
            return None
        return sitemap if sitemap.type in ("urlset", "sitemapindex") else None

    def _invalid(self, url: str) -> None:
        self.crawler.stats.inc_value("harvester/sitemap/invalid")
        logger.error("Invalid sitemap (not a sitemap XML document): %s", url)
        self.crawler.signals.send_catch_log(page_failed, url=url, reason="invalid_sitemap")
