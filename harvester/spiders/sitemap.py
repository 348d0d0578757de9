"""``sitemap``: crawl the pages a site's sitemaps and feeds list."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import HtmlResponse, TextResponse
from scrapy.spiders import SitemapSpider as ScrapySitemapSpider
from scrapy.spiders.sitemap import iterloc
from scrapy.utils.response import get_base_url
from scrapy.utils.sitemap import Sitemap

from harvester.meta import DONT_EXTRACT, PROBE
from harvester.recrawl.extension import Recrawl
from harvester.recrawl.state import unchanged_since
from harvester.signals import page_failed
from harvester.site_markdown.llms import LlmsIndex, is_llms_url, llms_sources, parse_llms
from harvester.spiders._base import HarvesterSpider, page_selector
from harvester.state import crawl_state
from harvester.urls.feeds import (
    Feed,
    FeedTooLarge,
    declared_feeds,
    feed_kind,
    guessed_feeds,
    parse_feed,
)
from harvester.urls.rules import request_form, scope_prefix

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

SITEMAP_SUFFIXES = (".xml", ".xml.gz", "/robots.txt")
# Which page of a paginated feed a request is for (the first is 1).
FEED_PAGE = "harvester_feed_page"


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

    Feeds (``HARVESTER_FEEDS_ENABLED``): once the sitemaps are read, the RSS and Atom feeds the
    start page declares (else, when no sitemap listed a page, the conventional feed paths under the
    prefix) are read like sitemaps, each entry's date as its ``lastmod``, and a paginated feed is
    followed up to ``HARVESTER_FEED_MAX_PAGES`` pages. Any response whose root element is a feed
    is read as one, whatever its URL or content type.

    ``llms.txt`` (``HARVESTER_SITE_MARKDOWN_ENABLED``): the one under the path prefix (and at the
    root) is read like a sitemap, as is a start URL that is an ``llms.txt`` or ``llms-full.txt``;
    the pages it lists are crawled, and what it says of each (its Markdown twin, its description)
    goes to ``harvester.site_markdown.middleware.SiteMarkdownMiddleware``.

    Stats: ``harvester/sitemap/invalid``, ``harvester/sitemap/invalid_urls`` (sitemap, feed and
    llms.txt entries no request can be made of), ``harvester/sitemap/out_of_scope``,
    ``harvester/feeds/read``, ``harvester/feeds/entries``, ``harvester/feeds/invalid``,
    ``harvester/feeds/too_large``,
    ``harvester/site_markdown/llms_files``, ``harvester/site_markdown/llms_entries``,
    ``harvester/recrawl/sitemap_lastmod_skipped`` (stored pages whose ``lastmod`` is not newer
    than their harvest: not fetched, still reached; ``HARVESTER_SITEMAP_LASTMOD_SKIP``).
    """

    name = "sitemap"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sitemap_urls = [] if is_llms_url(self.start_url) else sitemap_sources(self.start_url)
        # Feeds are looked for once the sitemaps are read, unless the start URL is a file to read.
        self._feeds_looked_for = self.sitemap_urls in ([self.start_url], [])
        self._start_feeds: list[str] | None = None  # the feeds the start page declares, once read
        self._feeds_read: set[str] = set()
        self._sitemap_pages = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._spider_idle, signal=signals.spider_idle)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        if self.settings.getbool("HARVESTER_SITE_MARKDOWN_ENABLED") or is_llms_url(self.start_url):
            for url in llms_sources(self.start_url):
                # A missing llms.txt is normal; a start URL that names one is not a guess.
                yield scrapy.Request(url, callback=self._parse_llms,
                                     meta={DONT_EXTRACT: True, PROBE: url != self.start_url})
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
            loc = request_form(entry.get("loc", ""))
            if loc is None:
                self.crawler.stats.inc_value("harvester/sitemap/invalid_urls")
                continue
            entry["loc"] = loc
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
        """Pages come from the sitemaps and feeds only, also when one answers 304."""
        return ()

    def parse(self, response: Response, **kwargs: Any) -> Any:
        # A 304 has no body to read the feeds from: the start page is then fetched for them.
        if self._start_feeds is None and response.status == 200 and self._is_start(response.url):
            self._start_feeds = self._declared_feeds(response)
        return ()

    def _wants_page(self, url: str) -> bool:
        return self.wants(url) and self.claim(url)

    def _parse_sitemap(self, response: Response) -> Iterable[scrapy.Request]:
        if response.url.endswith("/robots.txt"):
            for request in super()._parse_sitemap(response):
                request.meta[DONT_EXTRACT] = True
                yield request
            return
        body = self._get_sitemap_body(response)
        if body is None and feed_kind(response.body):
            body = response.body  # a feed served as HTML or plain text
        if body and feed_kind(body):
            yield from self._parse_feed(response, body)
            return
        sitemap = self._read_sitemap(body)
        if sitemap is None:
            if response.meta.get(FEED_PAGE) and response.meta.get(PROBE):
                logger.debug("Not a feed: %s", response.url)  # a guessed location
            elif response.meta.get(FEED_PAGE):
                self.crawler.stats.inc_value("harvester/feeds/invalid")
                logger.warning("Invalid feed (not an RSS or Atom document): %s", response.url)
            else:
                self._invalid(response.url)
            return
        locations = iterloc(self.sitemap_filter(sitemap), self.sitemap_alternate_links)
        if sitemap.type == "sitemapindex":
            for loc in locations:
                yield scrapy.Request(loc, callback=self._parse_sitemap, meta={DONT_EXTRACT: True})
            return
        found = 0
        claimed_before = len(self._seen)  # with the pages skipped by their lastmod
        for loc in locations:
            found += 1
            yield scrapy.Request(self.request_url(loc), callback=self.parse, errback=self.page_failed)
        self._sitemap_pages += len(self._seen) - claimed_before
        if not found:
            logger.warning("Sitemap %s lists no new page in scope", response.url)

    def _parse_llms(self, response: Response) -> Iterable[scrapy.Request]:
        """An ``llms.txt``'s pages as page requests (scope, ``allow``/``deny`` and the page budget
        as a sitemap's), and what it says of them kept for the site-Markdown middleware."""
        if not isinstance(response, TextResponse) or isinstance(response, HtmlResponse):
            return  # a soft 404: a page where the file should be
        entries = parse_llms(response.text, response.url)
        stats = self.crawler.stats
        stats.inc_value("harvester/site_markdown/llms_files")
        stats.inc_value("harvester/site_markdown/llms_entries", len(entries))
        state = crawl_state(self.crawler)
        if state.llms_index is None:
            state.llms_index = LlmsIndex()
        claimed_before = len(self._seen)
        for entry in entries:
            url = request_form(entry.url)
            if url is None:
                stats.inc_value("harvester/sitemap/invalid_urls")
                continue
            if not self.wants(url):
                stats.inc_value("harvester/sitemap/out_of_scope")
                continue
            entry = replace(entry, url=url)
            state.llms_index.add(self.url_rules.page_key(entry.url), entry)
            if self.claim(entry.url):
                yield scrapy.Request(self.request_url(entry.url), callback=self.parse, errback=self.page_failed)
        self._sitemap_pages += len(self._seen) - claimed_before
        logger.info("%s lists %d pages, %d new in scope", response.url, len(entries), len(self._seen) - claimed_before)

    def _read_sitemap(self, body: bytes | None) -> Sitemap | None:
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

    # Feeds.

    def _parse_feed(self, response: Response, body: bytes) -> Iterable[scrapy.Request]:
        """A feed's entries as page requests, through the sitemap entries' scope and lastmod
        checks; then its next page while this one brought a page not seen before."""
        key = self.url_rules.page_key(response.url)
        if key in self._feeds_read:
            return
        self._feeds_read.add(key)
        feed = self._read_feed(response.url, body)
        if feed is None:
            return
        stats = self.crawler.stats
        stats.inc_value("harvester/feeds/read")
        stats.inc_value("harvester/feeds/entries", len(feed.entries))
        claimed_before = len(self._seen)
        entries = [{"loc": entry.url, "lastmod": entry.lastmod} for entry in feed.entries]
        for entry in self.sitemap_filter(entries):
            yield scrapy.Request(self.request_url(entry["loc"]), callback=self.parse, errback=self.page_failed)
        page = response.meta.get(FEED_PAGE, 1)
        new_pages = len(self._seen) - claimed_before
        logger.info("Feed %s (page %d): %d entries, %d new pages", response.url, page, len(feed.entries),
                    new_pages)
        if feed.next_url is None or not new_pages:
            return
        if page >= self.settings.getint("HARVESTER_FEED_MAX_PAGES"):
            logger.info("Feed %s: not following it past page %d (HARVESTER_FEED_MAX_PAGES)", response.url, page)
        elif self._same_host(feed.next_url):
            meta = {DONT_EXTRACT: True, FEED_PAGE: page + 1}
            if feed.next_guessed:
                meta[PROBE] = True  # past its last page, WordPress answers 404
            yield scrapy.Request(feed.next_url, callback=self._parse_sitemap, meta=meta)

    def _read_feed(self, url: str, body: bytes) -> Feed | None:
        try:
            feed = parse_feed(body, url)
        except FeedTooLarge as exc:
            self.crawler.stats.inc_value("harvester/feeds/too_large")
            logger.warning("Feed %s not read: %s", url, exc)
            return None
        if feed is not None and feed.truncated:
            logger.warning("Feed %s: only its first %d entries read", url, len(feed.entries))
        return feed

    def _spider_idle(self) -> None:
        """The sitemaps are read: look for the feeds once, from the start page."""
        if self._feeds_looked_for:
            return
        self._feeds_looked_for = True
        if not self.settings.getbool("HARVESTER_FEEDS_ENABLED"):
            return
        if self._start_feeds is not None:
            requests = list(self._feed_requests(self._start_feeds))
        else:
            # A probe: not extracted, and its failure is no page's. Not filtered: the start page may
            # have been requested as a page and answered 304 or failed.
            requests = [scrapy.Request(self.start_url, callback=self._parse_start, errback=self._start_unreadable,
                                       meta={DONT_EXTRACT: True, PROBE: True}, dont_filter=True)]
        if not requests:
            return
        for request in requests:
            self.crawler.engine.crawl(request)
        raise DontCloseSpider

    def _parse_start(self, response: Response) -> Iterable[scrapy.Request]:
        if feed_kind(response.body):  # the start URL is a feed itself
            return self._parse_sitemap(response)
        self._start_feeds = self._declared_feeds(response)
        return self._feed_requests(self._start_feeds)

    def _start_unreadable(self, failure: Failure) -> Iterable[scrapy.Request]:
        logger.debug("Start page not read for its feeds: %s", failure.value)
        return self._feed_requests([])

    def _feed_requests(self, declared: list[str]) -> Iterable[scrapy.Request]:
        """Requests for the declared feeds on the start's host; without one, and when no sitemap
        listed a page, for the conventional feed paths (probes: most are missing)."""
        for url in declared:
            if self._same_host(url):
                yield scrapy.Request(url, callback=self._parse_sitemap, meta={DONT_EXTRACT: True, FEED_PAGE: 1})
        if declared or self._sitemap_pages:
            return
        for url in guessed_feeds(self.start_url):
            yield scrapy.Request(url, callback=self._parse_sitemap,
                                 meta={DONT_EXTRACT: True, PROBE: True, FEED_PAGE: 1})

    def _declared_feeds(self, response: Response) -> list[str]:
        if not isinstance(response, HtmlResponse):
            return []
        links = [(link.attrib.get("rel", ""), link.attrib.get("type", ""), link.attrib.get("href", ""))
                 for link in page_selector(response).css("link[href]")]
        return declared_feeds(links, get_base_url(response))

    def _is_start(self, url: str) -> bool:
        return self.url_rules.page_key(url) == self.url_rules.page_key(self.start_url)

    def _same_host(self, url: str) -> bool:
        return self.url_rules.host_key(url) == self.url_rules.host_key(self.start_url)
