"""End to end: one copy of everything, through real crawls of a loopback site (tests/servers/sites.py
``dedup_site``) with the real middlewares and pipelines, into a real local Qdrant."""

from __future__ import annotations

import re

import pytest

from harvester.index.store import boilerplate_point_id
from tests.conftest import qdrant_points
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.sites import DEDUP_ADMONITION, dedup_site
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

TRACKING = re.compile(r"utm_|gclid|jsessionid", re.IGNORECASE)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """The docs spider through every pipeline (the real model, local Qdrant). Learned templates are
    off: they would remove the admonition repeated on every page before the pipelines see it
    (tests/test_e2e_template.py), and these tests are about what the pipelines do with copies.
    Versions are not kept apart, so the site's 1.3 copy of a page is a copy of 1.2's."""
    workdir = tmp_path_factory.mktemp("dedup")
    with SiteServer(routes=dedup_site()) as server:
        result = crawl("docs", server.url + "docs/", workdir, settings={"HARVESTER_TEMPLATE_LEARNING": "0",
                                                                       "HARVESTER_VERSIONS_APART": "0"})
        requested = server.paths()
    assert result.returncode == 0, result.output[-3000:]
    return result, requested, qdrant_points(workdir / "qdrant"), server.url + "docs/"


def test_each_page_is_fetched_once_in_its_canonical_served_form(indexed):
    result, requested, _, _ = indexed
    assert not [path for path in requested if TRACKING.search(path)]
    assert len(requested) == len(set(requested)), requested
    assert "/docs/" in requested and "/docs/index.html" not in requested
    # /docs/sub/index.html redirected to /docs/sub/, so the later link to /docs/other/index.html
    # was requested as /docs/other/ straight away.
    assert "/docs/other/" in requested and "/docs/other/index.html" not in requested
    assert result.report["skipped_by_reason"] == {"duplicate_page": 1}


def test_duplicate_urls_are_aliases_in_the_feed_the_payload_and_the_report(indexed):
    result, _, points, base = indexed
    feed = {item["url"]: item for item in result.items}
    assert len(feed) == len(result.items)
    assert not [url for url in feed if TRACKING.search(url)]
    assert feed[base + "renamed.html"]["aliases"] == [base + "old-topic.html"]  # a redirect
    assert feed[base + "sub/"]["aliases"] == [base + "sub/index.html"]
    assert feed[base + "modern.html"]["aliases"] == [base + "legacy.html"]  # rel=canonical
    assert base + "legacy.html" not in feed
    # The guide is served at two URLs; whichever came second is an alias of the first.
    guides = {base + "guide.html", base + "print/guide.html"}
    (stored,) = guides & feed.keys()
    (alias,) = guides - {stored}
    assert result.report["alias_urls"][stored] == [alias]
    guide_points = [p for p in points if p.payload["metadata"]["source_url"] == stored]
    assert guide_points and all(p.payload["metadata"]["aliases"] == [alias] for p in guide_points)
    assert result.report["alias_urls"] == {
        base + "renamed.html": [base + "old-topic.html"], base + "sub/": [base + "sub/index.html"],
        base + "modern.html": [base + "legacy.html"], stored: [alias],
    }
    assert result.report["aliases"] == 4


def test_the_versioned_copy_is_a_near_duplicate_of_the_first(indexed):
    result, _, points, base = indexed
    versions = {base + "en/1.2/api.html", base + "en/1.3/api.html"}
    marked = {item["url"]: item["near_duplicate_of"] for item in result.items if item["url"] in versions}
    (original,) = [url for url, of in marked.items() if of is None]
    (copy,) = [url for url, of in marked.items() if of]
    assert marked[copy] == original
    assert result.report["near_duplicate_urls"] == {copy: {"of": marked[copy], "similarity": pytest.approx(1, abs=0.1)}}
    assert result.report["near_duplicates"] == 1
    copy_points = [p for p in points if p.payload["metadata"]["source_url"] == copy]
    assert copy_points and all(p.payload["metadata"]["near_duplicate_of"] == marked[copy] for p in copy_points)


def test_the_repeated_admonition_is_stored_once(indexed):
    result, _, points, _ = indexed
    carriers = [p for p in points if DEDUP_ADMONITION in p.payload["page_content"]]
    assert len(carriers) == 1
    (once,) = carriers
    assert str(once.id) == boilerplate_point_id(once.payload["page_content"])
    assert once.payload["metadata"]["boilerplate"] is True and once.payload["metadata"]["context"] == ""
    pages = len(result.items)
    assert result.report["boilerplate_chunks"] == pages - 4  # decided on the 5th page
    # Every copy after the stored one was not embedded; the copies on the first 4 pages were
    # stored before the decision and are gone from Qdrant (they stay in those feed lines).
    assert result.report["embeddings_saved"] >= pages - 5
    feed_ids = {c["id"] for item in result.items for c in item["chunks"]}
    point_ids = {str(p.id) for p in points}
    assert point_ids <= feed_ids
    gone = [c for item in result.items for c in item["chunks"] if c["id"] in feed_ids - point_ids]
    assert len(gone) == 4 and all(DEDUP_ADMONITION in c["text"] for c in gone)


def test_one_version_and_dropping_near_duplicates_without_embedding(tmp_path):
    with SiteServer(routes=dedup_site()) as server:
        result = crawl("site", server.url + "docs/", tmp_path / "versions", settings={
            **NO_EMBEDDING, "HARVESTER_VERSION_PATTERN": r"/en/(\d+\.\d+)/", "HARVESTER_VERSION_KEEP": "1.3"})
        versions = server.paths()
    assert result.returncode == 0, result.output[-3000:]
    assert "/docs/en/1.3/api.html" in versions and "/docs/en/1.2/api.html" not in versions
    assert not [item for item in result.items if item["near_duplicate_of"]]

    with SiteServer(routes=dedup_site()) as server:
        result = crawl("site", server.url + "docs/", tmp_path / "drop", settings={
            **NO_EMBEDDING, "HARVESTER_NEAR_DUPLICATE_MODE": "drop", "HARVESTER_DEDUP_FEED_DUPLICATES": "1",
            "HARVESTER_VERSIONS_APART": "0"})
    assert result.returncode == 0, result.output[-3000:]
    api = [item["url"] for item in result.items if "/api.html" in item["url"]]
    assert len(api) == 1 and result.report["skipped_by_reason"]["near_duplicate_page"] == 1
    # The guide's second URL gets a feed line that points at the stored one, with nothing stored.
    (line,) = [item for item in result.items if item["duplicate_of"]]
    assert line["chunks"] == [] and line["duplicate_of"] in {item["url"] for item in result.items}
    assert {line["url"], line["duplicate_of"]} == {server.url + "docs/guide.html", server.url + "docs/print/guide.html"}


def test_sitemap_urls_are_canonicalised_before_scheduling(tmp_path):
    routes = dedup_site()
    with SiteServer(routes=routes) as server:
        base = server.url + "docs/"
        locs = [base + "guide.html?utm_source=sitemap", base + "guide.html;jsessionid=XYZ", base + "guide.html#top",
                base + "topic1.html?fbclid=1", base + "topic1.html", base, base + "index.html"]
        entries = "".join(f"<url><loc>{loc.replace('&', '&amp;')}</loc></url>" for loc in locs)
        server.routes["/docs/sitemap.xml"] = Route(
            f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>',
            headers={"Content-Type": "application/xml"})
        result = crawl("sitemap", base, tmp_path, settings=NO_EMBEDDING)
        requested = server.paths()
    assert result.returncode == 0, result.output[-3000:]
    pages = [path for path in requested if path.endswith((".html", "/"))]
    assert sorted(pages) == ["/docs/", "/docs/guide.html", "/docs/topic1.html"]
    assert sorted(item["url"] for item in result.items) == [base, base + "guide.html", base + "topic1.html"]
