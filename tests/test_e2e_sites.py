"""End to end on small purpose-built loopback sites: real `scrapy crawl`, every pipeline, local Qdrant."""

from __future__ import annotations

import itertools
import re

import pytest

from tests.conftest import import_prerequisite, qdrant_points
from tests.crawl import crawl
from tests.servers.sites import (
    broken_pages_site,
    chain_site,
    doc_page,
    robots_site,
    sitemap_index,
    sitemap_site,
)
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e


def page_paths(result, server):
    return sorted(item["url"].removeprefix(server.url.rstrip("/")) for item in result.items)


def assert_index_matches_feed(result, workdir):
    points = qdrant_points(workdir / "qdrant")
    feed_chunks = {c["id"]: c["text"] for item in result.items for c in item["chunks"]}
    assert feed_chunks, "the feed has no chunks"
    assert {p.id: p.payload["page_content"] for p in points} == feed_chunks


def test_docs_spider_walks_a_chain_with_a_cycle_and_a_sidebar(tmp_path):
    with SiteServer(routes=chain_site()) as server:
        result = crawl("docs", server.url + "docs/p1.html", tmp_path)
    assert result.returncode == 0, result.output
    assert page_paths(result, server) == [f"/docs/p{i}.html" for i in range(1, 7)]
    requested = [p for p in server.paths() if p != "/robots.txt"]
    assert sorted(requested) == sorted(set(requested)), "a page was fetched twice (cycle not stopped)"
    assert "/blog/news.html" not in requested and "/docs/genindex.html" not in requested
    assert result.report["failed"] == {"http_404": [server.url + "docs/missing.html"]}
    assert_index_matches_feed(result, tmp_path)
    for item in result.items:
        assert item["title"].startswith("The part")
        assert "```python\ndef configure_part" in item["markdown"]
        assert item["chunks"][0]["heading_path"][0] == item["title"]


def test_sitemap_spider_reads_an_index_with_a_gzipped_child(tmp_path):
    with SiteServer() as server:
        server.routes.update(sitemap_site(server.url))
        result = crawl("sitemap", server.url + "docs/", tmp_path)
    assert result.returncode == 0, result.output
    assert page_paths(result, server) == ["/docs/a1.html", "/docs/a2.html", "/docs/b1.html", "/docs/b2.html"]
    assert "/sitemaps/b.xml.gz" in server.paths()
    assert "/blog/post.html" not in server.paths()
    assert_index_matches_feed(result, tmp_path)


def test_a_sitemap_listing_unescaped_urls_is_read_as_its_requests_are(tmp_path):
    """Sitemaps and llms.txt files of non-English sites often list raw UTF-8 paths; the requests
    carry them escaped, and scope, claims and the stored pages must agree with them."""
    with SiteServer() as server:
        section = f"{server.url}docs/función/"
        server.routes.update(sitemap_index(server.url, [f"{section}a.html", f"{section}b.html",
                                                        f"{server.url}blog/überblick.html"],
                                           [f"{section}c.html"]))
        server.routes["/llms.txt"] = Route("# Site\n\n- [d](/docs/función/d.html): About d.\n")
        for name in ("a", "b", "c", "d"):
            server.routes[f"/docs/funci%C3%B3n/{name}.html"] = Route(doc_page(name))
        server.routes["/blog/%C3%BCberblick.html"] = Route(doc_page("blog"))
        result = crawl("sitemap", section, tmp_path)
    assert result.returncode == 0, result.output[-3000:]
    assert page_paths(result, server) == [f"/docs/funci%C3%B3n/{name}.html" for name in ("a", "b", "c", "d")]
    assert "/blog/%C3%BCberblick.html" not in server.paths()


@pytest.mark.parametrize("start", ["docs/función/a.html", "docs/funci%C3%B3n/a.html"])
def test_docs_links_written_in_utf_8_are_followed(tmp_path, start):
    """HTML often links raw UTF-8 paths (``href="/docs/función/b.html"``); the start URL may be
    typed either way. Both name the pages the requests carry escaped."""
    routes = {"/docs/funci%C3%B3n/a.html": Route(doc_page("a", next_href="/docs/función/b.html")),
              "/docs/funci%C3%B3n/b.html": Route(doc_page("b", prev_href="a.html", next_href="../función/c.html")),
              "/docs/funci%C3%B3n/c.html": Route(doc_page("c", prev_href="b.html"))}
    with SiteServer(routes=routes) as server:
        result = crawl("docs", server.url + start, tmp_path)
    assert result.returncode == 0, result.output[-3000:]
    assert page_paths(result, server) == [f"/docs/funci%C3%B3n/{name}.html" for name in ("a", "b", "c")]


def _manual_page(title: str, links: str) -> str:
    """A hand-made manual's page: no main element, no generator's pager or sidebar markup."""
    prose = f"{title} explains one part of the server's configuration, with its directives and examples. " * 4
    return (f"<html><head><title>{title}</title></head><body><div id='page-header'><a href='/'>Home</a></div>"
            f"<div id='page-content'><h1>{title}</h1><p>{prose}</p><div class='links'>{links}</div></div></body></html>")


def test_the_docs_spider_follows_every_link_of_a_page_with_no_navigation_it_knows(tmp_path):
    routes = {
        "/manual/": Route(_manual_page("Manual", "<a href='install.html'>Install</a> <a href='mod/'>Modules</a>"
                                                 " <a href='/elsewhere/page.html'>Elsewhere</a>")),
        "/manual/install.html": Route(_manual_page("Install", "<a href='upgrading.html'>Upgrading</a>")),
        "/manual/upgrading.html": Route(_manual_page("Upgrading", "<a href='index.html'>Back</a>")),
        "/manual/mod/": Route(_manual_page("Modules", "<a href='core.html'>core</a>")),
        "/manual/mod/core.html": Route(_manual_page("Core", "")),
        "/elsewhere/page.html": Route(_manual_page("Elsewhere", "")),
    }
    with SiteServer(routes=routes) as server:
        result = crawl("docs", server.url + "manual/", tmp_path)
    assert result.returncode == 0, result.output[-3000:]
    assert page_paths(result, server) == ["/manual/", "/manual/install.html", "/manual/mod/", "/manual/mod/core.html",
                                          "/manual/upgrading.html"]
    # Scrapy's closing stats, in the log: the fallback is what scheduled them.
    assert int(re.search(r"'harvester/docs/body_links': (\d+)", result.output).group(1)) >= 4
    assert "'harvester/docs/content_links'" not in result.output


def test_robots_disallow_and_crawl_delay_are_obeyed(tmp_path):
    with SiteServer(routes=robots_site(crawl_delay=1)) as server:
        result = crawl("site", server.url + "docs/", tmp_path)
        hits = list(server.log)
    assert result.returncode == 0, result.output
    assert not [h for h in hits if h.path.startswith("/docs/private/")]
    assert page_paths(result, server) == ["/docs/", "/docs/one.html", "/docs/three.html", "/docs/two.html"]
    assert all(h.user_agent.startswith("Harvester/") for h in hits)
    pages = [h.time for h in hits if h.path != "/robots.txt"]
    gaps = [b - a for a, b in itertools.pairwise(pages)]
    # Arrivals jitter on a loaded machine (a late arrival shortens the next gap): each gap is well
    # above no delay, and the three together hold three delays.
    assert len(gaps) == 3 and min(gaps) >= 0.8 and sum(gaps) >= 2.85, gaps
    assert result.report["skipped"]["robots_forbidden"] == [server.url + "docs/private/secret.html"]


def test_one_broken_page_never_stops_a_crawl(tmp_path):
    with SiteServer(routes=broken_pages_site()) as server:
        result = crawl("site", server.url + "docs/", tmp_path, settings={"RETRY_TIMES": 1})
    assert result.returncode == 0, result.output
    stored = page_paths(result, server)
    assert {"/docs/", "/docs/good1.html", "/docs/good2.html", "/docs/malformed.html"} <= set(stored)
    assert "/docs/error.html" not in stored and "/docs/empty.html" not in stored
    assert result.report["failed"]["http_500"] == [server.url + "docs/error.html"]
    assert server.url + "docs/empty.html" in result.report["skipped"]["too_short"] + result.report["skipped"].get("empty", [])
    assert "Traceback" not in result.output
    assert list(result.report["low_quality"]) == [server.url + "docs/archive.html"]
    assert result.report["pages_low_quality"] == 1
    assert_index_matches_feed(result, tmp_path)


def test_recrawl_updates_pages_and_a_failed_crawl_keeps_what_was_stored(tmp_path):
    routes = chain_site()
    sections = "".join(f"<h2>Section {n}</h2><p>{f'Plenty of words about section {n}. ' * 40}</p>" for n in range(6))
    routes["/docs/p2.html"].body = routes["/docs/p2.html"].body.replace("</div></div>", sections + "</div></div>", 1)
    with SiteServer(routes=routes) as server:
        p2 = server.url + "docs/p2.html"
        first = crawl("docs", server.url + "docs/p1.html", tmp_path)
        stored = {p.id: p.payload for p in qdrant_points(tmp_path / "qdrant")}
        server.routes["/docs/p2.html"] = chain_site()["/docs/p2.html"]  # the page shrinks
        second = crawl("docs", server.url + "docs/p1.html", tmp_path)
        after = {p.id: p.payload for p in qdrant_points(tmp_path / "qdrant")}
        failed = crawl("docs", server.url + "docs/nothing-here.html", tmp_path)
        after_failure = {p.id: p.payload for p in qdrant_points(tmp_path / "qdrant")}
    assert first.returncode == 0 and second.returncode == 0
    old_p2 = [i for i, p in stored.items() if p["metadata"]["source_url"] == p2]
    new_p2 = [i for i, p in after.items() if p["metadata"]["source_url"] == p2]
    assert len(old_p2) > len(new_p2) >= 1, "the shrunken page's stale chunks must leave the index"
    others_before = {i: p["page_content"] for i, p in stored.items() if p["metadata"]["source_url"] != p2}
    others_after = {i: p["page_content"] for i, p in after.items() if p["metadata"]["source_url"] != p2}
    assert others_after == others_before, "re-crawling must overwrite points, never duplicate them"
    assert failed.returncode != 0
    assert after_failure == after, "a failed crawl must leave what is stored intact"


def wiki_site() -> dict:
    """A wiki whose pages also carry a long promotional <article>: generic rules pick the article."""
    from tests.servers.sitesrv import Route

    promo = "<article><h1>Try our premium plan</h1>" + "<p>Premium gets you more of everything we sell. </p>" * 30 + "</article>"
    page = ("<html><head><title>Wiki: {name}</title></head><body>" + promo +
            '<div id="wiki"><h1>{name}</h1><p>The {name} procedure: stop the service, copy the data '
            'directory, then start the service again and check the logs for errors.</p></div></body></html>')
    return {
        "/wiki/": Route(page.format(name="Backups").replace("</div>", '<a href="restore.html">restore</a></div>')),
        "/wiki/restore.html": Route(page.format(name="Restore")),
        "/robots.txt": Route("User-agent: *\nDisallow:\n"),
    }


def test_content_selector_override(tmp_path):
    from tests.crawl import NO_EMBEDDING

    with SiteServer(routes=wiki_site()) as server:
        default = crawl("site", server.url + "wiki/", tmp_path / "default", settings=NO_EMBEDDING)
        chosen = crawl("site", server.url + "wiki/", tmp_path / "chosen", settings=NO_EMBEDDING,
                       args={"content_selector": "div#wiki"})
        per_host = crawl("site", server.url + "wiki/", tmp_path / "host", settings={
            **NO_EMBEDDING, "HARVESTER_CONTENT_SELECTORS": f'{{"127.0.0.1:{server.port}": "div#wiki"}}'})
    assert default.returncode == chosen.returncode == per_host.returncode == 0
    assert all("premium plan" in item["markdown"].lower() for item in default.items)
    for result in (chosen, per_host):
        assert len(result.items) == 2
        for item in result.items:
            assert "premium" not in item["markdown"].lower()
            assert "procedure: stop the service" in item["markdown"]


def test_the_default_backend_embeds_on_onnx_runtime_with_the_torch_models_vectors(tmp_path):
    """On a CPU the default (``auto``) exports the model once, in a child process, and embeds with
    ONNX Runtime in the crawler: the stored vectors are the torch model's."""
    import numpy as np

    from harvester.chunking.context import embedding_text
    from harvester.embedding.folder import DEFAULT_MODEL
    from harvester.embedding.models import load_embedder
    from harvester.index.engines import open_store
    from tests.crawl import cli_crawl

    settings = {"HARVESTER_ONNX_CACHE_DIR": str(tmp_path / "onnx")}
    with SiteServer(routes=chain_site()) as server:
        result = cli_crawl("docs", server.url + "docs/p1.html", tmp_path, settings=settings)
    assert result.returncode == 0, result.output[-3000:]
    assert "Exporting sentence-transformers/all-MiniLM-L6-v2 to ONNX once, in a child process" in result.output
    assert "on cpu (onnxruntime fp32), in the crawler process" in result.output
    assert list((tmp_path / "onnx").glob("*-fp32.onnx"))
    texts = {c["id"]: embedding_text(c.get("context", ""), c["text"]) for item in result.items for c in item["chunks"]}
    store = open_store(None, None, str(tmp_path / "qdrant"), "edge", wait=30)
    try:
        stored = {point.id: point.dense for point in store.points("harvester")}
    finally:
        store.close()
    assert set(stored) == set(texts)
    ids = sorted(texts)
    expected = load_embedder(DEFAULT_MODEL, "cpu").encode([texts[i] for i in ids], batch_size=16)
    got = np.array([stored[i] for i in ids], dtype=np.float32)
    assert np.min(np.sum(expected * got, axis=1)) > 0.9999


def test_onnx_int8_backend_crawls_and_searches(tmp_path):
    import_prerequisite("onnxruntime")
    from tests.crawl import scrapy_command

    settings = {"HARVESTER_EMBEDDING_BACKEND": "onnx-int8", "HARVESTER_ONNX_CACHE_DIR": str(tmp_path / "onnx")}
    with SiteServer(routes=chain_site()) as server:
        result = crawl("docs", server.url + "docs/p1.html", tmp_path, settings=settings)
    assert result.returncode == 0, result.output[-3000:]
    assert "onnxruntime int8" in result.output
    assert list((tmp_path / "onnx").glob("*-int8.onnx"))
    assert_index_matches_feed(result, tmp_path)
    process = scrapy_command(["search", "--json", "-s", "HARVESTER_EMBEDDING_BACKEND=onnx-int8",
                              "-s", f"HARVESTER_ONNX_CACHE_DIR={tmp_path / 'onnx'}", "configure part4"], tmp_path)
    assert process.returncode == 0, process.stderr
    import json
    assert json.loads(process.stdout)[0]["url"].endswith("/docs/p4.html")
