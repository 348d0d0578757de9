"""The extraction middleware's parts apart from a crawl: which responses are pages, the held pages
and their JOBDIR file, the PageItem of an extracted page."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.test import get_crawler

from harvester.addon import HarvesterAddon
from harvester.extract.classify import PageType, Verdict
from harvester.extract.extractor import Prepared
from harvester.extract.held_pages import HeldPages, load_requests, save_requests
from harvester.extract.middleware import ExtractionMiddleware
from harvester.extract.page import extract_page
from harvester.extract.page_item import page_item
from harvester.meta import DONT_EXTRACT, LINKS, PROBE

URL = "http://docs.example/guide/intro.html"
BODY = ("<html><head><title>Intro</title></head><body><main><h1>Introduction</h1>"
        + "<p>Widgets are configured in a file next to the board, one section per widget.</p>" * 3
        + "</main></body></html>")


def _response(url: str = URL, meta: dict | None = None, status: int = 200, **kwargs) -> HtmlResponse:
    return HtmlResponse(url, status=status, body=BODY.encode(), encoding="utf-8",
                        request=Request(url, meta=meta or {}), **kwargs)


def test_only_successful_html_responses_of_page_requests_are_pages() -> None:
    middleware = ExtractionMiddleware(get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}}))
    assert middleware._is_page(_response())
    assert not middleware._is_page(_response(meta={DONT_EXTRACT: True}))
    assert not middleware._is_page(_response(meta={DONT_EXTRACT: True, PROBE: True}))
    assert not middleware._is_page(_response(status=404))
    assert not middleware._is_page(TextResponse(URL, body=b"plain", request=Request(URL)))


def test_held_pages_keep_their_hosts_and_order_and_are_released_once() -> None:
    held = HeldPages()
    assert not held and "a.example" not in held
    pages = [Prepared(_response(f"http://{host}/{n}.html"), None, None, None, None)
             for host, n in [("a.example", 1), ("b.example", 1), ("a.example", 2)]]
    for page in pages:
        held.add(page.response.url.split("/")[2], page)
    assert held and held.hosts() == ["a.example", "b.example"]
    assert [r.url for r in held.requests()] == ["http://a.example/1.html", "http://a.example/2.html",
                                                "http://b.example/1.html"]
    assert held.pop("a.example") == [pages[0], pages[2]]
    assert held.pop("a.example") == [] and held.hosts() == ["b.example"]


def test_the_held_requests_file_is_read_once_and_removed_when_nothing_waits(tmp_path: Path) -> None:
    path = tmp_path / "held.pickle"
    saved = [Request(URL, meta={LINKS: ["http://docs.example/next.html"]}).to_dict()]
    save_requests(path, saved)
    assert load_requests(path) == saved
    assert not path.exists()
    save_requests(path, saved)
    save_requests(path, [])
    assert not path.exists()
    with pytest.raises(OSError):
        load_requests(path)


def test_a_page_item_carries_the_response_validators_urls_and_links() -> None:
    links = ["http://docs.example/guide/next.html"]
    response = _response(meta={LINKS: links}, headers={"ETag": '"v1"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"},
                         flags=["playwright"])
    page = extract_page(response.text, URL, min_chars=10)
    item = page_item(response, page, Verdict(PageType.CONTENT, "text"), URL, ["http://docs.example/intro"])
    assert (item.url, item.domain, item.requested_url, item.aliases) == (
        URL, "docs.example", URL, ["http://docs.example/intro"])
    assert (item.etag, item.last_modified) == ('"v1"', "Mon, 01 Jan 2024 00:00:00 GMT")
    assert item.rendered and item.links == links and item.page_type == "content"
    assert item.markdown == page.markdown and item.title == page.title and item.content_hash
