"""Scrapy's request fingerprints over Harvester's canonical URLs."""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy.utils.request import fingerprint

from harvester.urls.rules import UrlRules

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler


class CanonicalRequestFingerprinter:
    """Scrapy's default fingerprint (method, canonicalised URL, body), taken of the URL without the
    tracking and session parameters ``HARVESTER_URL_STRIP_PARAMS`` names and without a default
    port, so the dupefilter, the HTTP cache and JOBDIR agree with the spiders on what one URL is.

    ``/a/`` and ``/a/index.html`` keep distinct fingerprints: a site redirecting one to the other
    must not have the redirect's target filtered as a duplicate. The spiders' page keys fold them.
    Requests with ``meta["verbatim_url"]`` are fingerprinted as Scrapy does.
    """

    def __init__(self, crawler: Crawler | None = None) -> None:
        self._rules = UrlRules.from_crawler(crawler) if crawler is not None else UrlRules()
        self._cache: WeakKeyDictionary[Request, bytes] = WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def fingerprint(self, request: Request) -> bytes:
        cached = self._cache.get(request)
        if cached is None:
            url = request.url if request.meta.get("verbatim_url") else self._rules.canonical(request.url)
            cached = fingerprint(request if url == request.url else request.replace(url=url))
            self._cache[request] = cached
        return cached
