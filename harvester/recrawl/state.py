"""What a re-crawl knows about each stored page, read back from the Qdrant collection itself.

The collection is the single source of truth: every chunk's payload carries its page's URL, ETag,
Last-Modified, content hash and harvest time, so the state of every stored page is rebuilt from
it at the start of each crawl (scrolling payloads only, no vectors) and no other cache can drift
from it. Scrapy-free, so it can be tested alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

# The payload keys a re-crawl reads; page_content and the heading metadata are not needed.
STATE_KEYS = [
    "metadata.source_url",
    "metadata.title",
    "metadata.etag",
    "metadata.last_modified",
    "metadata.content_hash",
    "metadata.harvested_at",
    "metadata.chunk_index",
    "metadata.versions",
    "metadata.total_chunks",
    "links",
    # LlamaIndex's node fields (``doc_id`` came with the node's document and neighbours): a page
    # whose points lack them (or have them) against HARVESTER_QDRANT_LLAMAINDEX_NODES is rewritten.
    "doc_id",
]


@dataclass
class StoredPage:
    """One page as the collection holds it.

    ``consistent`` is False when its points disagree (a crawl was killed between writing a page's
    new chunks and deleting its old ones, or in the middle of a batch): such a page is fetched
    and indexed again without conditional headers, which repairs it.
    """

    url: str
    title: str = ""
    etag: str | None = None
    last_modified: str | None = None
    content_hash: str = ""
    harvested_at: str = ""
    chunk_ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    consistent: bool = True
    node_fields: bool = True
    # Set when the payloads must be rewritten although the page did not change (the index pipeline
    # decides): the page is fetched without validators so that it reaches the pipeline.
    refresh_payload: bool = False
    # The docs versions whose copy of the page this is (``PageItem.versions``).
    versions: set[str] = field(default_factory=set)

    @property
    def validators(self) -> dict[str, str]:
        """The conditional request headers for this page (none if it must be fetched again)."""
        if not self.consistent or self.refresh_payload:
            return {}
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


def pages_from_points(points: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, StoredPage]:
    """Group ``(point id, payload)`` pairs into pages by ``metadata.source_url``."""
    pages: dict[str, StoredPage] = {}
    seen: dict[str, tuple[set[Any], set[int], set[int]]] = {}
    for point_id, payload in points:
        meta = payload.get("metadata") or {}
        url = meta.get("source_url")
        if not url:
            continue
        page = pages.get(url)
        if page is None:
            page = pages[url] = StoredPage(
                url=url,
                title=meta.get("title") or "",
                etag=meta.get("etag"),
                last_modified=meta.get("last_modified"),
                content_hash=meta.get("content_hash") or "",
                harvested_at=meta.get("harvested_at") or "",
            )
            seen[url] = (set(), set(), set())
        versions, indexes, totals = seen[url]
        versions.add((meta.get("content_hash"), meta.get("etag"), meta.get("last_modified")))
        indexes.add(meta.get("chunk_index", -1))
        totals.add(meta.get("total_chunks", -1))
        page.chunk_ids.add(str(point_id))
        page.versions.update(meta.get("versions") or ())
        page.node_fields = page.node_fields and "doc_id" in payload
        page.harvested_at = min(page.harvested_at, meta.get("harvested_at") or "") or page.harvested_at
        if "links" in payload:
            page.links = list(payload.get("links") or [])
    for url, page in pages.items():
        versions, indexes, totals = seen[url]
        total = next(iter(totals)) if len(totals) == 1 else -1
        page.consistent = (
            len(versions) == 1 and total == len(page.chunk_ids) and indexes == set(range(total))
        )
    return pages


def page_change(stored: StoredPage | None, content_hash: str) -> str:
    """What a crawl's page is against the stored one: ``new``, ``unchanged`` (the same extracted
    content) or ``changed``."""
    if stored is None:
        return "new"
    return "unchanged" if stored.content_hash == content_hash else "changed"


def scroll_state(store: Any, collection: str, batch: int = 1024) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every point's id and re-crawl payload keys (no vectors), from a store
    (``harvester.index.store.Store``)."""
    for record in store.scroll(collection, keys=STATE_KEYS, batch=batch):
        yield record.id, record.payload


def load_stored_pages(store: Any, collection: str) -> dict[str, StoredPage]:
    """The state of every page stored in ``collection``."""
    return pages_from_points(scroll_state(store, collection))


def parse_lastmod(value: str | None) -> tuple[datetime, bool] | None:
    """A sitemap ``lastmod`` (W3C datetime) as an aware datetime, and whether it was a bare date;
    None when it is missing or unreadable."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    bare_date = "T" not in text
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed, bare_date


def unchanged_since(lastmod: str | None, harvested_at: str) -> bool:
    """Whether a page whose sitemap says ``lastmod`` has not changed since it was harvested.

    A bare date covers the whole day (the page may have changed after the harvest that day), so it
    counts as unchanged only when harvested on a later day. Unknown dates never count.
    """
    parsed = parse_lastmod(lastmod)
    if parsed is None or not harvested_at:
        return False
    modified, bare_date = parsed
    try:
        harvested = datetime.fromisoformat(harvested_at)
    except ValueError:
        return False
    if harvested.tzinfo is None:
        harvested = harvested.replace(tzinfo=UTC)
    if bare_date:
        modified += timedelta(days=1)
    return modified <= harvested


def prune_candidates(stored: Iterable[str], reached: set[str], wanted: Any) -> list[str]:
    """Stored URLs the crawl wanted (``wanted(url)``: in its scope) but did not reach, sorted."""
    return sorted(url for url in stored if url not in reached and wanted(url))
