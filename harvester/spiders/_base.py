"""What every Harvester spider shares: its arguments, its crawl scope, its page budget, its start.

Spiders only decide what to fetch; the extraction middleware turns responses into items.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import scrapy
from parsel.selector import create_root_node
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, TextResponse
from scrapy.selector import Selector
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.response import get_base_url

from harvester.dedup.detect import VersionRule
from harvester.extract.parser import HtmlTreeParser
from harvester.meta import LINKS, RENDER_HTTP_ITEM
from harvester.report.failures import describe_failure
from harvester.sites import RENDER_MODES, SiteProfiles
from harvester.urls.canonical import ServedForms
from harvester.urls.hosts import host_name
from harvester.urls.links import (
    BoundedCache,
    LinkTarget,
    join_key,
    relative_to_page,
    without_fragment,
)
from harvester.urls.rules import (
    UrlRules,
    check_css,
    compile_patterns,
    is_pdf_url,
    request_form,
    url_allowed,
    validate_start_url,
)

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


def page_selector(response: TextResponse) -> Selector:
    """``response.selector``, parsed the first time with Harvester's HTML parser
    (``harvester.extract.parser``: the same tree as parsel's, its element classes looked up in C).
    Link extraction and then page extraction read this one tree."""
    if getattr(response, "_cached_selector", None) is None and isinstance(response, HtmlResponse):
        # As parsel parses a response's text (create_root_node), with another parser class.
        root = create_root_node(response.text, HtmlTreeParser, base_url=get_base_url(response))
        selector = Selector(root=root, type="html")
        selector.response = response
        response._cached_selector = selector  # what TextResponse.selector caches and returns
    return response.selector


def parse_max_pages(value: Any) -> int | None:
    """``max_pages`` as a positive int, or None for no limit."""
    if value in (None, "", "0", 0):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if number < 0:
        raise ValueError(f"max_pages must be a positive integer, got {value!r}")
    return number


class HarvesterSpider(scrapy.Spider):
    """Base of the Harvester spiders.

    Arguments (``-a``): ``start`` (required URL), ``allow`` and ``deny`` (comma-separated URL
    regexes), ``max_pages`` (sets ``HARVESTER_MAX_PAGES``), ``collection`` (sets
    ``HARVESTER_QDRANT_COLLECTION``), ``content_selector`` (CSS of the main content; sets
    ``HARVESTER_CONTENT_SELECTOR``), ``render`` (``never``, ``always`` or ``auto``; sets
    ``HARVESTER_RENDER``), ``version`` (the docs version of every page crawled); all at spider priority. ``allow``, ``deny``, ``content_selector`` and
    ``render`` override the site profiles' (``harvester.sites``). Settings:
    ``HARVESTER_SKIP_URL_PATTERNS`` (URL regexes of non-content pages, in addition to ``deny``),
    ``HARVESTER_PDF_ENABLED`` (follow links to ``.pdf`` files),
    ``HARVESTER_URL_STRIP_PARAMS`` (query parameters removed before scheduling),
    ``HARVESTER_VERSION_PATTERN`` / ``HARVESTER_VERSION_KEEP`` (crawl one version of versioned docs).
    Every URL is requested in its canonical form (see ``harvester.urls.canonical``) and claimed
    by its page key, so ``/a/``, ``/a`` and ``/a/index.html`` are fetched once.
    Stats: ``harvester/urls/served_forms_learned``, ``harvester/dedup/other_version``.
    """

    def __init__(
        self,
        start: str | None = None,
        allow: str | None = None,
        deny: str | None = None,
        max_pages: str | int | None = None,
        collection: str | None = None,
        content_selector: str | None = None,
        render: str | None = None,
        version: str | None = None,
        **kwargs: Any,
    ) -> None:
        # `start` is taken here: Spider.__init__ would copy it onto the `start()` method's name.
        super().__init__(**kwargs)
        self.start_url = validate_start_url(start)
        self.allow = compile_patterns(allow)
        self.deny = compile_patterns(deny)
        self.max_pages = parse_max_pages(max_pages)
        self.collection = collection
        self.content_selector = content_selector
        if content_selector:
            check_css(content_selector)
        if render not in (None, "") and render not in RENDER_MODES:
            raise ValueError(f"render must be one of {', '.join(RENDER_MODES)}, got {render!r}")
        self.render = render or None
        # The docs version every page of this crawl belongs to (else each page's own: harvester.versions).
        self.version = version or None
        # Profile keys these arguments override (read by SiteProfiles.from_crawler).
        self.profile_overrides: dict[str, tuple[str, ...]] = {
            key: tuple(p.pattern for p in patterns)
            for key, patterns in (("allow", self.allow), ("deny", self.deny)) if patterns
        }
        self._profile_patterns: dict[tuple[str, ...], list[re.Pattern[str]]] = {}
        # OffsiteMiddleware compares host names without ports.
        self.allowed_domains = [host_name(self.start_url)]
        self._seen: set[str] = set()
        self.served_forms = ServedForms()
        # Each distinct link is worked out once per crawl (harvester.urls.links).
        self._targets: BoundedCache[str, LinkTarget | None] = BoundedCache(self._target)
        self._joined: BoundedCache[tuple[str, str], str] = BoundedCache(_join)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.collection:
            crawler.settings.set("HARVESTER_QDRANT_COLLECTION", spider.collection, "spider")
        if spider.content_selector:
            crawler.settings.set("HARVESTER_CONTENT_SELECTOR", spider.content_selector, "spider")
        if spider.max_pages is not None:
            crawler.settings.set("HARVESTER_MAX_PAGES", spider.max_pages, "spider")
        if spider.render:
            crawler.settings.set("HARVESTER_RENDER", spider.render, "spider")
        return spider

    async def start(self) -> AsyncIterator[Any]:
        self._seen.add(self.url_rules.page_key(self.start_url))
        yield scrapy.Request(
            self.request_url(self.start_url),
            callback=self.parse,
            errback=self.start_failed,
            meta={"harvester_start": True},
        )

    def start_failed(self, failure: Failure) -> None:
        """The start page could not be fetched: nothing else can be found, so stop with a reason."""
        logger.error("Cannot crawl the start URL %s: %s", self.start_url, describe_failure(failure))
        # Not raising CloseSpider: Scrapy logs a traceback for an errback that raises, and this
        # failure is fully told by the line above. Not awaited: closing waits for this errback.
        deferred_from_coro(self.crawler.engine.close_spider_async(reason="start_url_failed"))

    def page_failed(self, failure: Failure) -> Any:
        """One page could not be fetched: one log line (FailureRecorderMiddleware counts it).

        A page the browser failed on after plain HTTP got it keeps the HTTP result."""
        request = getattr(failure, "request", None)
        kept = request.meta.get(RENDER_HTTP_ITEM) if request is not None else None
        if failure.check(IgnoreRequest) and not failure.check(HttpError):
            logger.debug("Not fetched: %s", failure.value)
        else:
            url = request.url if request is not None else "?"
            logger.warning("Cannot fetch %s: %s", url, describe_failure(failure))
        return [kept] if kept is not None else None

    def wants(self, url: str) -> bool:
        """Whether ``url`` is a page of this crawl: in scope, allowed, not a non-content URL."""
        if not self.url_rules.in_scope(url, self.start_url):
            return False
        skip = self._skip_patterns()
        # The site profile's allow/deny, or the spider arguments' when given.
        profile = SiteProfiles.from_crawler(self.crawler).for_url(url)
        allow, deny = self._patterns(profile.allow), self._patterns(profile.deny)
        if not (url_allowed(url, allow, deny) and url_allowed(url, [], skip)):
            return False
        if not self._pdf_enabled and is_pdf_url(url):
            return False
        if not self.version_rule.allows(url):
            self.crawler.stats.inc_value("harvester/dedup/other_version")
            return False
        return True

    def claim(self, url: str) -> bool:
        """Reserve a page request for ``url``: False if its page (``page_key``) was claimed before."""
        key = self.url_rules.page_key(url)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def request_url(self, url: str) -> str:
        """The URL to request for ``url``: canonical, in the directory form its host serves."""
        return self.served_forms.preferred(self.url_rules.canonical(url))

    def learn_served(self, response: scrapy.http.Response) -> None:
        """A redirected response: its final URL is claimed (a link to it is not fetched again), and
        a redirect between directory spellings teaches the host's form."""
        redirects = response.meta.get("redirect_urls")
        if not redirects:
            return
        self.claim(response.url)
        if self.served_forms.learn(redirects[0], response.url):
            self.crawler.stats.inc_value("harvester/urls/served_forms_learned")
            logger.debug("Learned the served URL form: %s -> %s", redirects[0], response.url)

    def link_target(self, url: str) -> LinkTarget | None:
        """What ``url`` (without a fragment) is to this crawl: None when it is not wanted, else the
        URL it is stored under and its page key; worked out once per crawl."""
        return self._targets(url)

    def _target(self, url: str) -> LinkTarget | None:
        if not self.wants(url):
            return None
        rules = self.url_rules
        return LinkTarget(rules.canonical(url), rules.page_key(url))

    def link_url(self, response: scrapy.http.Response, href: str) -> str:
        """``response.urljoin(href)`` as a request carries it (``""`` if w3lib refuses it), without
        the fragment, remembered per page directory."""
        base = get_base_url(response)
        return self._joined((base if relative_to_page(href) else join_key(base), href))

    def new_page(self, url: str, source: scrapy.http.Response | None = None) -> LinkTarget | None:
        """The target of a link to ``url`` when it is wanted and its page not claimed yet (it is
        not claimed here). With ``source`` (the page the link is on), a wanted link is remembered
        with that page, so a re-crawl that gets a 304 for it can still follow it."""
        target = self.link_target(without_fragment(url))
        if target is None:
            return None
        if source is not None:
            _remember(source, target.canonical)
        return None if target.key in self._seen else target

    def page_request(
        self, url: str, callback: Callable[..., Any], source: scrapy.http.Response | None = None
    ) -> scrapy.Request | None:
        """A request for a content page, or None when ``url`` is out of scope or seen before.

        With ``source`` (the page the link is on), the link is remembered with that page, so a
        re-crawl that gets a 304 for it can still follow it.
        """
        target = self.new_page(url, source)
        if target is None:
            return None
        self._seen.add(target.key)
        return scrapy.Request(self.served_forms.preferred(target.canonical), callback=callback,
                              errback=self.page_failed)

    def remember_link(self, source: scrapy.http.Response, url: str) -> None:
        """Note a wanted link of ``source``; the extraction middleware stores them with its page."""
        _remember(source, self.url_rules.canonical(url))

    def follow_stored_links(self, response: scrapy.http.Response, urls: list[str]) -> Iterator[scrapy.Request]:
        """Requests for the links stored with a page that answered 304 (it has no body to parse)."""
        for url in urls:
            request = self.page_request(url, self.parse, source=response)
            if request is not None:
                yield request

    def parse(self, response: scrapy.http.Response, **kwargs: Any) -> Any:
        return ()

    # Read on first use: the add-on's defaults are applied after the spider is built.
    @property
    def url_rules(self) -> UrlRules:
        """The crawl's URL rules: canonical URLs, page keys, scope (``harvester.urls.rules``)."""
        if not hasattr(self, "_url_rules"):
            self._url_rules = UrlRules.from_crawler(self.crawler)
        return self._url_rules

    @property
    def version_rule(self) -> VersionRule:
        if not hasattr(self, "_version_rule"):
            self._version_rule = VersionRule(
                self.settings.get("HARVESTER_VERSION_PATTERN"), self.settings.get("HARVESTER_VERSION_KEEP")
            )
            self._version_rule.allows(self.start_url)  # under "first", the start URL's version wins
        return self._version_rule

    def _patterns(self, patterns: tuple[str, ...]) -> list[re.Pattern[str]]:
        compiled = self._profile_patterns.get(patterns)
        if compiled is None:
            compiled = self._profile_patterns[patterns] = compile_patterns(patterns)
        return compiled

    @property
    def _pdf_enabled(self) -> bool:
        if not hasattr(self, "_pdf"):
            self._pdf = self.settings.getbool("HARVESTER_PDF_ENABLED")
        return self._pdf

    def _skip_patterns(self) -> list[Any]:
        if not hasattr(self, "_skip"):
            self._skip = compile_patterns(self.settings.getlist("HARVESTER_SKIP_URL_PATTERNS"))
        return self._skip


def _join(key: tuple[str, str]) -> str:
    base, href = key
    # In the form its request will carry (as LinkExtractor gives the site spider's links): an
    # href written in raw UTF-8 must meet scope, patterns and page keys escaped.
    return without_fragment(request_form(urljoin(base, href)) or "")


def _remember(source: scrapy.http.Response, canonical: str) -> None:
    # A dict, so a page with hundreds of links checks each in constant time; read as a list of keys.
    source.meta.setdefault(LINKS, {})[canonical] = None
