"""The PageItem of an extracted page: what extraction kept, with the response's status, validators
and URLs. Scrapy-free: a response is only read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from harvester.items import PageItem
from harvester.meta import LINKS
from harvester.urls.hosts import host_name
from harvester.urls.rules import content_hash

if TYPE_CHECKING:
    from scrapy.http import Response

    from harvester.extract.classify import Verdict
    from harvester.extract.page import ExtractedPage


def page_item(response: Response, page: ExtractedPage, verdict: Verdict, url: str, aliases: list[str]) -> PageItem:
    """The item stored for ``page`` under ``url``, its canonical URL; ``aliases`` are the other URLs
    it was reached by."""
    return PageItem(
        url=url,
        title=page.title,
        markdown=page.markdown,
        lang=page.lang,
        description=page.description,
        headings=page.headings,
        breadcrumbs=page.breadcrumbs,
        section=" > ".join(page.breadcrumbs),
        content_hash=content_hash(page.markdown),
        etag=header(response, b"ETag"),
        last_modified=header(response, b"Last-Modified"),
        fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
        status=response.status,
        rendered="playwright" in response.flags,
        quality=page.quality,
        degraded=page.degraded,
        domain=host_name(url),
        requested_url=response.request.url if response.request else response.url,
        aliases=aliases,
        links=list(response.meta.get(LINKS, ())),
        page_type=verdict.type.value,
        author=page.author,
        published=page.published,
        modified=page.modified,
        anchors=[list(pair) for pair in page.anchors],
    )


def header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
