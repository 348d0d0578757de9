"""URL rules: what a URL is to a crawl (``UrlRules``, one per crawler), start URL validation,
crawl scope and non-content URLs.

Scrapy-free so they can be unit-tested and reused by every component.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from w3lib.url import safe_url_string

from harvester.exceptions import InvalidStartUrl
from harvester.urls.canonical import (
    DEFAULT_STRIP_PARAMS,
    canonical_url,
    compile_strip_params,
    page_key,
)
from harvester.urls.hosts import host_key

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

# URLs that cannot be content whatever their page says: generated indexes, source listings, static
# files, feeds, error pages, and query strings of searches, sharing and printing. Words in a path
# ("/auth/", "/search.html", "/accounts/", "/tags/") decide nothing: a documentation page about
# authentication or search is content, and a real login form or search page is recognised by the
# page classifier (``harvester.extract.classify``: ``login_wall``, ``search_page``,
# ``navigation_only``). Assets are already refused by LinkExtractor's IGNORED_EXTENSIONS.
DEFAULT_SKIP_PATTERNS: tuple[str, ...] = (
    r"[?&](q|query|search|s|searchterm|keywords)=",
    r"/(genindex|py-modindex|modindex)(-[a-z]+)?\.html?(?:[?#]|$)",
    r"/(searchindex\.js|404\.html?)(?:[?#]|$)",
    r"/_(modules|sources|static|images)/",
    # Sphinx's downloadable files: scripts and archives, and PDFs, which are documents.
    r"/_downloads/(?![^?#]*\.pdf(?:[?#]|$))",
    r"/(feed|rss|atom)(/|\.xml(?:[?#]|$)|$)",
    r"[?&](replytocom|share|print|login|logout|redirect_to|return_to)=",
    r"[?&]action=(login|logout|register|edit|history|raw)\b",
)


def validate_start_url(url: str | None) -> str:
    """Return ``url`` as a Scrapy request holds it (``safe_url_string``: IDNA host, IPv4 host in
    dotted form, escaped path) if it can start a crawl, else raise InvalidStartUrl saying why."""
    if not url or not url.strip():
        raise InvalidStartUrl("no start URL given: pass -a start=https://example.com/docs/")
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidStartUrl(f"invalid start URL {url!r}: {exc}") from exc
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidStartUrl(
            f"unsupported start URL {url!r}: only http:// and https:// URLs can be crawled"
        )
    if not parts.hostname or any(ch.isspace() for ch in url) or port == 0:
        raise InvalidStartUrl(f"invalid start URL {url!r}: it has no valid host")
    # The crawl's scope, allowed_domains and page keys must name the host the request will carry:
    # from `bücher.example` or `0x7f.0.0.1` as typed, OffsiteMiddleware drops the start request.
    try:
        return safe_url_string(url)
    except ValueError as exc:
        raise InvalidStartUrl(f"invalid start URL {url!r}: {exc}") from exc


def request_form(url: str) -> str | None:
    """``url`` as a Scrapy request holds it (``safe_url_string``), or None where w3lib refuses it:
    what a sitemap or llms.txt lists raw must be compared with the crawl's URLs in this form."""
    try:
        return safe_url_string(url)
    except ValueError:
        return None


def scope_prefix(url: str) -> str:
    """The path prefix a crawl from ``url`` stays in: the start page's directory."""
    path = urlsplit(url).path or "/"
    if path.endswith("/"):
        return path
    return posixpath.dirname(path).rstrip("/") + "/"


def in_scope(url: str, start: str) -> bool:
    """Whether ``url`` is on the start URL's host (and port) and under its path prefix."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or host_key(url) != host_key(start):
        return False
    return (parts.path or "/").startswith(scope_prefix(start))


def compile_patterns(patterns: Iterable[str] | str | None) -> list[re.Pattern[str]]:
    """Compile URL regexes given as a list or a comma-separated string (as ``-a`` arguments are)."""
    if not patterns:
        return []
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    try:
        return [re.compile(p.strip()) for p in patterns]
    except re.error as exc:
        raise ValueError(f"invalid URL pattern: {exc}") from exc


def url_allowed(
    url: str, allow: Sequence[re.Pattern[str]], deny: Sequence[re.Pattern[str]]
) -> bool:
    """``allow`` (if any) must match and no ``deny`` pattern may match."""
    if allow and not any(p.search(url) for p in allow):
        return False
    return not any(p.search(url) for p in deny)


def is_pdf_url(url: str) -> bool:
    """Whether ``url``'s path names a PDF file (``.pdf``, any case)."""
    return urlsplit(url).path.lower().endswith(".pdf")


def check_css(selector: str) -> str:
    """``selector`` if it is valid CSS, else ValueError saying why."""
    from cssselect import GenericTranslator, SelectorError

    try:
        GenericTranslator().css_to_xpath(selector)
    except SelectorError as exc:
        raise ValueError(f"invalid CSS selector {selector!r}: {exc}") from exc
    return selector


def content_hash(markdown: str) -> str:
    """SHA-256 of the Markdown with whitespace collapsed and case folded."""
    normalised = " ".join(markdown.split()).casefold()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


class UrlRules:
    """What a URL is to one crawl: its canonical form (without the query parameters
    ``HARVESTER_URL_STRIP_PARAMS`` names), the key of its page, its site and whether it is in a
    crawl's scope. One per crawler (``UrlRules.from_crawler``), asked by every component, so the
    spider, the fingerprinter, extraction and the re-crawl state agree on what one page is."""

    def __init__(self, strip_params: Iterable[str] = DEFAULT_STRIP_PARAMS) -> None:
        self.strip_params = tuple(strip_params)
        self.strip = compile_strip_params(self.strip_params)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> UrlRules:
        return cls(settings.getlist("HARVESTER_URL_STRIP_PARAMS"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlRules:
        """The crawler's rules, built on first use."""
        rules = _CRAWLER_RULES.get(crawler)
        strip_params = tuple(crawler.settings.getlist("HARVESTER_URL_STRIP_PARAMS"))
        # Built again if asked before the add-ons set the crawl's list (before the settings froze).
        if rules is None or rules.strip_params != strip_params:
            rules = _CRAWLER_RULES[crawler] = cls(strip_params)
        return rules

    def canonical(self, url: str) -> str:
        """The URL ``url``'s page is requested and stored under (``harvester.urls.canonical``)."""
        return canonical_url(url, self.strip)

    def page_key(self, url: str) -> str:
        """The key that names one page under all its spellings (``/a/``, ``/a``, ``/a/index.html``)."""
        return page_key(url, self.strip)

    @staticmethod
    def host_key(url: str) -> str:
        """The site of ``url`` (``harvester.urls.hosts.host_key``)."""
        return host_key(url)

    @staticmethod
    def in_scope(url: str, start: str) -> bool:
        """Whether ``url`` belongs to a crawl started at ``start`` (``in_scope``)."""
        return in_scope(url, start)


_CRAWLER_RULES: WeakKeyDictionary[Crawler, UrlRules] = WeakKeyDictionary()
