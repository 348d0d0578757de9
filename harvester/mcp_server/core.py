"""What the MCP server (and any other long-lived front end) serves: search, fetch a page, list the
sources. The model and the store are loaded once, when the service is made. Scrapy-free."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.index.search import MODES, SORTS, date_bound, search
from harvester.index.store import Scope, StoreUnavailable
from harvester.versions.detect import newest_stable, version_key

if TYPE_CHECKING:
    from harvester.embedding.models import Embedder
    from harvester.index.store import Store

# Page-level keys returned by fetch (chunk-level keys such as chunk_index are left out).
PAGE_KEYS = ("source_url", "title", "section", "domain", "breadcrumbs", "source_type", "content_hash",
             "etag", "last_modified", "harvested_at", "aliases", "total_chunks", "author", "published", "modified")
MAX_K = 50


class ServiceError(ValueError):
    """A request the service cannot answer (unknown collection or page, bad argument)."""


@dataclass
class SearchService:
    """Search, fetch and list over one store with one loaded model."""

    store: Store
    embedder: Embedder
    collection: str

    def _collection(self, collection: str | None) -> str:
        name = collection or self.collection
        try:
            exists = self.store.exists(name)
        except ValueError as exc:
            raise ServiceError(str(exc)) from exc
        if not exists:
            raise ServiceError(f"no collection {name!r} (have: {', '.join(self.store.collections()) or 'none'})")
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
        scope = Scope(domain=site or None, url_prefix=url_prefix or None, section=section or None,
                      since=first, until=last, version=version or None)
        return search(self.store, name, self.embedder, query, k, mode, scope=scope,
                      group_by="page" if group_by_page else None, sort=sort)

    def fetch(self, url: str, collection: str | None = None) -> dict[str, Any]:
        """The page at ``url``: its Markdown, rebuilt from its chunks in order, and its metadata."""
        name = self._collection(collection)
        records = list(self.store.scroll(name, Scope(url=url)))
        if not records:
            raise ServiceError(f"no page {url!r} in collection {name!r}")
        records.sort(key=lambda r: (r.payload.get("metadata") or {}).get("chunk_index", 0))
        first = records[0].payload.get("metadata") or {}
        return {
            "url": url,
            "title": first.get("title"),
            "metadata": {key: first.get(key) for key in PAGE_KEYS},
            "chunks": len(records),
            "markdown": "\n\n".join(r.payload.get("page_content", "") for r in records),
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
        keys = ["metadata.source_url", "metadata.domain", "metadata.harvested_at", "metadata.versions"]
        versions: dict[str, set[str]] = {}
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
            site["last_crawl"] = max(site["last_crawl"], meta.get("harvested_at") or "")
            versions.setdefault(domain, set()).update(meta.get("versions") or ())
        for domain, site in sites.items():
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

    def close(self) -> None:
        self.store.close()
