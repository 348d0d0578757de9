"""What the MCP server (and any other long-lived front end) serves: search, fetch a page, list the
sources. The model and the store are loaded once, when the service is made. Scrapy-free."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harvester.index.search import MODES, RANK_KEYS, SORTS, date_bound, search
from harvester.index.store import MARKDOWN_KEY, Scope, StoreUnavailable
from harvester.urls.canonical import canonical_url, path_form, with_form
from harvester.versions.detect import newest_stable, version_key

if TYPE_CHECKING:
    from harvester.embedding.models import Embedder
    from harvester.index.store import Store

logger = logging.getLogger(__name__)

# Page-level keys returned by fetch (chunk-level keys such as chunk_index are left out).
PAGE_KEYS = ("source_url", "title", "section", "domain", "breadcrumbs", "source_type", "content_hash",
             "etag", "last_modified", "harvested_at", "aliases", "total_chunks", "author", "published", "modified")
MAX_K = 50
# A fetch returns at most this many characters of a page per call (about 5,000 tokens), and the
# rest from ``offset``: assistants refuse tool results much longer than that.
FETCH_CHARS = 20_000
MIN_FETCH_CHARS, MAX_FETCH_CHARS = 1_000, 100_000
LIST_LIMIT, MAX_LIST_LIMIT = 200, 1_000
# The sections a source lists (list_sources) per site, largest first.
MAX_SECTIONS = 100


class ServiceError(ValueError):
    """A request the service cannot answer (unknown collection or page, bad argument)."""


@dataclass
class SearchService:
    """Search, fetch and list over one store with one loaded model."""

    store: Store
    embedder: Embedder
    collection: str
    # Collections whose ranking keys the store holds in memory (``Store.remember``).
    _remembered: set[str] = field(default_factory=set, init=False, repr=False)

    def _collection(self, collection: str | None) -> str:
        name = collection or self.collection
        try:
            exists = self.store.exists(name)
        except ValueError as exc:
            raise ServiceError(str(exc)) from exc
        if not exists:
            raise ServiceError(f"no collection {name!r} in the store at {self.store.where} "
                               f"(have: {', '.join(self.store.collections()) or 'none'})")
        return name

    def search(
        self, query: str, k: int = 5, collection: str | None = None, *, site: str | None = None,
        url_prefix: str | None = None, section: str | None = None, group_by_page: bool = True,
        mode: str = "hybrid", since: str | None = None, until: str | None = None, sort: str = "relevance",
        version: str | None = None,
    ) -> list[dict[str, Any]]:
        """The top ``k`` pages, each with its best chunk and how many of its chunks matched (or,
        without ``group_by_page``, the top chunks) for ``query``; each with the URL, title, heading
        path and text to cite, and the page's author and dates. ``since``/``until``: dates (ISO 8601)
        the page's published (else modified) date falls between; ``sort="date"``: newest first;
        ``version``: a docs version (else each site's newest stable one)."""
        if not query.strip():
            raise ServiceError("the query is empty")
        if not 1 <= k <= MAX_K:
            raise ServiceError(f"k must be between 1 and {MAX_K}")
        if mode not in MODES:
            raise ServiceError(f"mode must be one of {', '.join(MODES)}")
        if sort not in SORTS:
            raise ServiceError(f"sort must be one of {', '.join(SORTS)}")
        try:
            first = date_bound(since) if since else None
            last = date_bound(until, end=True) if until else None
        except ValueError as exc:
            raise ServiceError(str(exc)) from exc
        name = self._collection(collection)
        scope = Scope(domain=site_host(site), url_prefix=(url_prefix or "").strip() or None,
                      section_prefix=(section or "").strip() or None, since=first, until=last,
                      version=(version or "").strip() or None)
        if name not in self._remembered:
            self._remembered.add(name)
            threading.Thread(target=self._remember, args=(name,), name="harvester-remember", daemon=True).start()
        return search(self.store, name, self.embedder, query, k, mode, scope=scope,
                      group_by="page" if group_by_page else None, sort=sort)

    def fetch(self, url: str, collection: str | None = None, offset: int = 0,
              max_chars: int = FETCH_CHARS) -> dict[str, Any]:
        """The page at ``url`` (any spelling of it: fragment, ``index.html``, trailing slash, case of
        scheme and host): its Markdown as extracted, ``max_chars`` of it from ``offset`` (cut at a
        line end), ``next_offset`` for the rest, and its metadata."""
        if not url or not url.strip():
            raise ServiceError("the URL is empty: give a page's URL (from search or list_pages)")
        if offset < 0:
            raise ServiceError("offset must be 0 or more")
        if not MIN_FETCH_CHARS <= max_chars <= MAX_FETCH_CHARS:
            raise ServiceError(f"max_chars must be between {MIN_FETCH_CHARS} and {MAX_FETCH_CHARS}")
        name = self._collection(collection)
        found, records = None, []
        for candidate in url_forms(url.strip()):
            records = list(self.store.scroll(name, Scope(url=candidate),
                                             keys=["page_content", "metadata", MARKDOWN_KEY]))
            if records:
                found = candidate
                break
        if found is None:
            raise ServiceError(f"no page {url!r} in collection {name!r} (search or list_pages gives the "
                               "URLs it holds)")
        records.sort(key=lambda r: (r.payload.get("metadata") or {}).get("chunk_index", 0))
        first = records[0].payload.get("metadata") or {}
        markdown = records[0].payload.get(MARKDOWN_KEY)
        if not isinstance(markdown, str):  # a page indexed before pages kept their Markdown
            markdown = "\n\n".join(r.payload.get("page_content", "") for r in records)
        if offset and offset >= len(markdown):
            raise ServiceError(f"offset {offset} is past the page's end ({len(markdown)} characters)")
        end = cut(markdown, offset, max_chars)
        remaining = len(markdown) - end
        out = {
            "url": found,
            "title": first.get("title"),
            "metadata": {key: first.get(key) for key in PAGE_KEYS},
            "chunks": len(records),
            "markdown": markdown[offset:end],
            "offset": offset,
            "total_chars": len(markdown),
            "next_offset": end if remaining else None,
        }
        out["note"] = (f"{remaining} more characters: fetch again with offset={end}" if remaining
                       else "the end of the page")
        return out

    def list_pages(self, site: str | None = None, collection: str | None = None, *, section: str | None = None,
                   url_prefix: str | None = None, offset: int = 0, limit: int = LIST_LIMIT,
                   version: str | None = None) -> dict[str, Any]:
        """A table of contents: the pages (URL, title, section, version) of a site, a section (a
        breadcrumb prefix), a URL prefix or a docs version, by URL, ``limit`` from ``offset``; and
        their sections."""
        if offset < 0:
            raise ServiceError("offset must be 0 or more")
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise ServiceError(f"limit must be between 1 and {MAX_LIST_LIMIT}")
        name = self._collection(collection)
        scope = Scope(domain=site_host(site), section_prefix=(section or "").strip() or None,
                      url_prefix=(url_prefix or "").strip() or None, version=(version or "").strip() or None)
        pages: dict[str, dict[str, Any]] = {}
        keys = ["metadata.source_url", "metadata.title", "metadata.section", "metadata.version"]
        for record in self.store.scroll(name, scope, keys=keys):
            meta = record.payload.get("metadata") or {}
            url = meta.get("source_url")
            if url and url not in pages:
                pages[url] = {"url": url, "title": meta.get("title") or "", "section": meta.get("section") or "",
                              "version": meta.get("version")}
        ordered = [pages[url] for url in sorted(pages)]
        end = offset + limit
        return {
            "collection": name,
            "total": len(ordered),
            "offset": offset,
            "next_offset": end if end < len(ordered) else None,
            "sections": section_counts(ordered),
            "pages": ordered[offset:end],
        }

    def list_sources(self) -> list[dict[str, Any]]:
        """Every collection with its sites: pages, chunks and the last crawl of each."""
        out = []
        for name in self.store.collections():
            try:
                out.append(self._sources(name))
            except StoreUnavailable as exc:
                out.append({"collection": name, "error": str(exc)})
        return out

    def _sources(self, name: str) -> dict[str, Any]:
        sites: dict[str, dict[str, Any]] = {}
        pages: dict[str, str] = {}
        chunks = 0
        sections: dict[str, dict[str, int]] = {}
        versions: dict[str, set[str]] = {}
        keys = ["metadata.source_url", "metadata.domain", "metadata.harvested_at", "metadata.section",
                "metadata.versions"]
        for record in self.store.scroll(name, keys=keys):
            meta = record.payload.get("metadata") or {}
            chunks += 1
            domain = meta.get("domain") or ""
            site = sites.setdefault(domain, {"site": domain, "pages": 0, "chunks": 0, "last_crawl": ""})
            site["chunks"] += 1
            url = meta.get("source_url")
            if url and url not in pages:
                pages[url] = domain
                site["pages"] += 1
                crumbs = sections.setdefault(domain, {})
                section = meta.get("section") or ""
                crumbs[section] = crumbs.get(section, 0) + 1
            site["last_crawl"] = max(site["last_crawl"], meta.get("harvested_at") or "")
            versions.setdefault(domain, set()).update(meta.get("versions") or ())
        for domain, site in sites.items():
            counted = sorted(sections.get(domain, {}).items(), key=lambda pair: (-pair[1], pair[0]))
            site["sections"] = [{"section": s, "pages": n} for s, n in counted[:MAX_SECTIONS] if s]
            if versions.get(domain):
                site["versions"] = sorted(versions[domain], key=version_key)
                site["default_version"] = newest_stable(site["versions"]) if len(site["versions"]) > 1 else None
        return {
            "collection": name,
            "pages": len(pages),
            "chunks": chunks,
            "last_crawl": max((s["last_crawl"] for s in sites.values()), default="") or None,
            "sites": sorted(sites.values(), key=lambda s: s["site"]),
        }

    def _remember(self, collection: str) -> None:
        """Have the store hold ``collection``'s ranking keys (read in about a second per 35,000
        chunks, beside the searches meanwhile), so that each later search reads payloads only for
        the chunks it can show."""
        try:
            self.store.remember(collection, RANK_KEYS)
        except Exception:  # the searches go on reading payloads
            logger.debug("Could not remember %r's ranking keys", collection, exc_info=True)

    def close(self) -> None:
        self.store.close()


def site_host(site: str | None) -> str | None:
    """The host a ``site`` filter names, as pages store it (``domain``: lower case, no port): from
    ``docs.example.com``, ``docs.example.com:8080`` or a URL on it; None for none."""
    text = (site or "").strip()
    if not text:
        return None
    try:
        host = urlsplit(text if "://" in text else "//" + text).hostname
    except ValueError:
        host = None
    return (host or text).lower()


def url_forms(url: str) -> list[str]:
    """The stored URLs ``url`` may name, most likely first: its canonical form (no fragment, scheme
    and host lower-cased) and the other spellings of a directory page (``/a/``, ``/a``,
    ``/a/index.html``)."""
    forms = [url]
    if "://" not in url:
        return forms
    try:
        canonical = canonical_url(url)
    except ValueError:
        return forms
    forms.append(canonical)
    path = urlsplit(canonical).path or "/"
    if path_form(path) is not None:
        forms += [with_form(canonical, form) for form in ("slash", "index", "bare")]
    return list(dict.fromkeys(forms))


def cut(text: str, start: int, size: int) -> int:
    """Where a piece of ``text`` of at most ``size`` characters from ``start`` ends: at the last line
    break in its second half, else at ``size``."""
    end = start + size
    if end >= len(text):
        return len(text)
    at = text.rfind("\n", start + size // 2, end)
    return at + 1 if at >= 0 else end


def section_counts(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each section of ``pages`` and its page count, by name (pages without one left out)."""
    counts: dict[str, int] = {}
    for page in pages:
        if page["section"]:
            counts[page["section"]] = counts.get(page["section"], 0) + 1
    return [{"section": name, "pages": counts[name]} for name in sorted(counts)]
