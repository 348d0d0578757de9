"""End to end: dedup stores each text once but stores it. A site whose pages share paragraphs
(each page with one of its own), a section index with an introduction, a page served at three
URLs whose text other pages hold too, and a print view of every page: the print view is the only
page out of the index, and every sentence of every other page is in it."""

from __future__ import annotations

import pytest

from harvester.dedup.coverage import point_text, text_kept
from tests.conftest import qdrant_points
from tests.crawl import crawl
from tests.servers.bank_site import GUIDE_PATHS, PAGES, bank_site, own_paragraph
from tests.servers.sitesrv import SiteServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def bank_crawl(tmp_path_factory, tiny_model):
    workdir = tmp_path_factory.mktemp("bank")
    routes, texts, start = bank_site()
    # One request at a time, no template learning holding pages back: the guide arrives before its
    # copies, and both before the pages that hold its text.
    settings = {"CONCURRENT_REQUESTS": 1, "HARVESTER_TEMPLATE_LEARNING": "0",
                "HARVESTER_EMBEDDING_MODEL": tiny_model}
    with SiteServer(routes=routes) as server:
        result = crawl("site", server.url + start.lstrip("/"), workdir, settings=settings)
        requested = server.paths()
    assert result.returncode == 0, result.output[-3000:]
    points = [p.payload for p in qdrant_points(workdir / "qdrant")]
    return server.url.rstrip("/"), texts, result, requested, points


def test_every_page_with_text_of_its_own_is_stored(bank_crawl):
    base, _, _, requested, points = bank_crawl
    stored = {p["metadata"]["source_url"] for p in points}
    assert "/docs/print.html" in requested
    pages = {f"{base}/docs/page{n}.html" for n in range(PAGES)} | {f"{base}/docs/index.html"}
    assert pages <= stored
    assert base + "/docs/print.html" not in stored


def test_no_text_is_lost(bank_crawl):
    base, texts, _, _, points = bank_crawl
    kept = text_kept({base + path: "\n\n".join(paragraphs) for path, paragraphs in texts.items()},
                     [point_text(p) for p in points])
    assert len(kept) == len(texts)
    assert kept == dict.fromkeys(kept, 1.0)


def test_the_section_introduction_is_searchable(bank_crawl):
    base, _, _, _, points = bank_crawl
    introduction = own_paragraph("section")
    assert any(introduction in p["page_content"] and p["metadata"]["source_url"] == base + "/docs/index.html"
               for p in points)


def test_a_copy_group_keeps_one_copy(bank_crawl):
    base, _, _, _, points = bank_crawl
    stored = {p["metadata"]["source_url"] for p in points}
    assert len(stored & {base + path for path in GUIDE_PATHS}) == 1


def test_the_report_lists_the_print_view_with_the_pages_that_hold_its_text(bank_crawl):
    base, _, result, _, points = bank_crawl
    report = result.report
    assert report["aggregate_pages"] == 1
    held_by = report["aggregate_urls"][base + "/docs/print.html"]
    assert {f"{base}/docs/page{n}.html" for n in range(PAGES)} <= set(held_by)
    assert set(held_by) <= {p["metadata"]["source_url"] for p in points}
