"""End to end: a re-crawl keeps the limits of a first crawl. A hub page that answers 304 has its
stored links replayed; they go through the same spider middlewares (crawl traps, scope, depth) as
the links a callback yields, so a query-parameter trap behind it stays capped."""

from __future__ import annotations

import hashlib

import pytest

from tests.crawl import crawl
from tests.servers.recrawl_site import LAST_MODIFIED
from tests.servers.sites import doc_page
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

ITEMS = 300
CAP = 10


def validated(body: str) -> Route:
    etag = '"' + hashlib.sha1(body.encode()).hexdigest()[:16] + '"'
    return Route(body, headers={"ETag": etag, "Last-Modified": LAST_MODIFIED})


def trap_site() -> tuple[dict[str, Route], callable]:
    """``/docs/index.html`` links a guide and ``ITEMS`` URLs of ``/docs/items.html`` that differ only
    by ``?item=``; every one of them serves the same page."""
    links = "".join(f'<a href="/docs/items.html?item={n}">item {n}</a> ' for n in range(ITEMS))
    routes = {
        "/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
        "/docs/index.html": validated(doc_page("index", sidebar=["/docs/guide.html"], extra_body=f"<p>{links}</p>")),
        "/docs/guide.html": validated(doc_page("guide", sidebar=["/docs/index.html"])),
    }
    items = validated(doc_page("items", sidebar=["/docs/index.html"]))

    def dynamic(path: str) -> Route | None:
        return items if path.startswith("/docs/items.html") else None

    return routes, dynamic


def item_requests(paths: list[str]) -> int:
    return sum(path.startswith("/docs/items.html?") for path in paths)


def test_a_recrawl_replays_stored_links_under_the_trap_cap(tmp_path, tiny_model):
    routes, dynamic = trap_site()
    settings = {"HARVESTER_TRAP_MAX_QUERY_VARIANTS": CAP, "HARVESTER_EMBEDDING_MODEL": tiny_model}
    with SiteServer(routes=routes, dynamic=dynamic) as server:
        start = server.url + "docs/index.html"
        first = crawl("site", start, tmp_path, settings=settings)
        first_items = item_requests(server.paths())
        server.log.clear()
        second = crawl("site", start, tmp_path, settings=settings)
        second_paths = server.paths()
    assert first.returncode == 0 and second.returncode == 0, second.output[-3000:]
    assert 0 < first_items <= CAP
    assert second.report["recrawl"]["unchanged_304"] >= 1
    assert "/docs/index.html" in second_paths and "/docs/guide.html" in second_paths
    assert item_requests(second_paths) <= CAP
