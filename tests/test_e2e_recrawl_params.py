"""A re-crawl with a customised ``HARVESTER_URL_STRIP_PARAMS`` recognises the pages it stored: the
re-crawl state looks pages up under the URLs extraction stored, made canonical with the crawl's
own strip list."""

from __future__ import annotations

import re

import pytest

from tests.conftest import qdrant_points
from tests.crawl import crawl
from tests.servers.recrawl_site import EditableSite
from tests.servers.sitesrv import Route, SiteServer

QUERY = "?sid=7"
# sid is stripped by default; this list keeps it, so every page is stored with its ?sid=7.
STRIP_PARAMS = r"utm_\w+"


class SessionLinkedSite(EditableSite):
    """``EditableSite`` whose links all carry ``?sid=7``, a parameter the server ignores."""

    def render(self) -> None:
        super().render()
        for path, route in list(self.routes.items()):
            if path.endswith(".html"):
                body = re.sub(r'href="(/docs/[a-z]+\.html)"', rf'href="\1{QUERY}"', str(route.body))
                self.routes[path] = Route(body, headers=route.headers)


def stored_urls(workdir) -> set[str]:
    return {point.payload["metadata"]["source_url"] for point in qdrant_points(workdir / "qdrant")}


@pytest.mark.e2e
def test_a_recrawl_with_a_custom_strip_list_finds_its_stored_pages(tmp_path, tiny_model):
    site = SessionLinkedSite(["alpha", "beta", "gamma"], sections=1)
    settings = {"HARVESTER_URL_STRIP_PARAMS": STRIP_PARAMS, "HARVESTER_EMBEDDING_MODEL": tiny_model}
    with SiteServer(routes=site.routes) as server:
        start = server.url + "docs/index.html" + QUERY
        first = crawl("docs", start, tmp_path, settings=settings)
        stored = stored_urls(tmp_path)
        second = crawl("docs", start, tmp_path, settings=settings)
        after = stored_urls(tmp_path)
    assert first.returncode == 0 and second.returncode == 0, second.output[-3000:]
    expected = {site.url(server.url, name) + QUERY for name in ("index", "alpha", "beta", "gamma")}
    assert stored == expected, "the kept parameter is part of each stored URL"
    recrawl = second.report["recrawl"]
    assert recrawl["unchanged_304"] == 4 and second.report["pages_crawled"] == 0
    assert recrawl["pruned"] == 0 and recrawl["pruned_urls"] == []
    assert after == stored
