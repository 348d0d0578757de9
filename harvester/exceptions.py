"""Drop reasons: one DropItem subclass each, so CoreStats counts ``item_dropped_reasons_count/<Class>``."""

from __future__ import annotations

from scrapy.exceptions import DropItem, IgnoreRequest


class DuplicatePage(DropItem):
    """The page's canonical URL or normalised content was already stored in this crawl."""


class NearDuplicatePage(DropItem):
    """The page nearly repeats a page already stored (``HARVESTER_NEAR_DUPLICATE_MODE=drop``)."""


class AggregatePage(DropItem):
    """The page repeats the content of several pages already stored (``harvester.dedup.aggregate``)."""


class NoChunks(DropItem):
    """Chunking left nothing to embed (the page's Markdown was whitespace or markup only)."""


class InvalidSettings(ValueError):
    """A setting has a value Harvester cannot run with (``harvester.config.checks``)."""


class InvalidStartUrl(ValueError):
    """The ``start`` spider argument cannot be crawled (bad syntax, non-HTTP(S) scheme...)."""


class RequestRefused(IgnoreRequest):
    """The SSRF guard refused to connect to the request's host (``harvester/guard/middleware.py``)."""

    def __init__(self, url: str, host: str, reason: str) -> None:
        super().__init__(f"Refused by the SSRF guard ({reason}): {url}")
        self.host = host
        self.reason = reason


class CollectionMismatch(RuntimeError):
    """The existing collection cannot hold this model's vectors."""


class StoreUnavailable(RuntimeError):
    """The store cannot be opened (locked past the wait, unreachable server, wrong format)."""
