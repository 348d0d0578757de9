"""The item contract: one PageItem per stored page (and one JSONL line in the feed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PageItem:
    """A content page, as extracted, then chunked, embedded and indexed by the pipelines.

    ``chunks`` holds plain dicts (``id``, ``index``, ``text``, ``heading_path``, ``token_count``)
    so that the feed shows them as they are stored. ``vectors`` is filled by the embedding
    pipeline for the index pipeline and is left out of feeds (``FEED_EXPORT_FIELDS``).
    """

    url: str
    title: str
    markdown: str
    lang: str | None = None
    description: str | None = None
    headings: list[dict[str, Any]] = field(default_factory=list)
    breadcrumbs: list[str] = field(default_factory=list)
    section: str = ""
    content_hash: str = ""
    etag: str | None = None
    last_modified: str | None = None
    fetched_at: str = ""
    status: int = 200
    rendered: bool = False
    quality: float = 0.0
    degraded: bool = False
    source_type: str = "web"
    domain: str = ""
    requested_url: str = ""
    # Dedup: other URLs of this page; the page this one repeats (exact, or near: MinHash).
    aliases: list[str] = field(default_factory=list)
    duplicate_of: str | None = None
    near_duplicate_of: str | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    vectors: list[Any] | None = None
    # The wanted links found on the page (canonical URLs), stored with it so that a re-crawl that
    # gets a 304 for the page can still follow them.
    links: list[str] = field(default_factory=list)
    # What the page classifier made of the response (harvester/extract/classify.py): content,
    # app_shell, empty or error_page (blocked pages, login walls, search pages and listings are not stored).
    page_type: str = "content"
    # The article's author(s) ("A, B") and its published and modified dates in ISO 8601 (UTC when the
    # page gives a zone, a bare date as a date), as the page states them; None when it does not.
    author: str | None = None
    published: str | None = None
    modified: str | None = None
    # ``[heading text, id]`` of the headings a URL fragment can point at: each chunk's link to its
    # heading (``url#id``) in the index. Left out of feeds, as the links.
    anchors: list[list[str]] = field(default_factory=list)
    # On a crawl with re-crawl bookkeeping, the page against the collection: new, changed or
    # unchanged (same content hash); PageChange lines say unchanged (304) and removed.
    change: str | None = None
    # The docs version the page belongs to (harvester.versions.detect), and every version whose copy
    # of the page is this text (exact copies of other versions are stored once, under this page).
    version: str | None = None
    versions: list[str] = field(default_factory=list)
    # A file beside the page that says which version an alias (``stable``) serves; read once.
    version_file: str | None = None


@dataclass
class PageChange:
    """A feed line for a stored page that no PageItem stands for in this crawl: ``unchanged``
    (it answered 304, so nothing was extracted or stored again) or ``removed`` (it answered 404 or
    410, or was pruned: its points were deleted). ``status`` is the HTTP status, None when pruned.
    The fields are PageItem's, so a feed's field list (``FEED_EXPORT_FIELDS``) keeps them."""

    url: str
    change: str
    status: int | None = None
    title: str = ""
    content_hash: str = ""
    etag: str | None = None
    last_modified: str | None = None


EXPORTED_FIELDS = [name for name in PageItem.__dataclass_fields__
                   if name not in ("vectors", "links", "anchors", "version_file")]
