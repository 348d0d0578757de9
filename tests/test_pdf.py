"""PDFs offline: text per page, titles, unreadable and textless files, detection, links to them."""

from __future__ import annotations

import pytest
from scrapy.http import Request, Response
from scrapy.utils.test import get_crawler

from harvester.addon import HarvesterAddon
from harvester.chunking.context import heading_paths
from harvester.extract.middleware import ExtractionMiddleware
from harvester.extract.page import NoContent
from harvester.extract.pdf import PdfUnreadable, extract_pdf, is_pdf
from harvester.spiders.site import SiteSpider
from harvester.urls.rules import DEFAULT_SKIP_PATTERNS, compile_patterns, is_pdf_url, url_allowed
from tests.servers.pdfgen import MANUAL_PAGES, encrypted_pdf, make_pdf
from tests.test_spiders import html_response, make_spider

URL = "http://127.0.0.1:8000/docs/files/Frob%20Manual.pdf"


def test_each_page_becomes_a_numbered_section_of_a_degraded_page() -> None:
    page = extract_pdf(make_pdf(MANUAL_PAGES, title="Frobnicator Manual", lang="en-GB"), URL)
    assert page.title == "Frobnicator Manual"
    assert page.lang == "en-GB"
    assert page.degraded and page.quality <= 0.5
    assert [h["text"] for h in page.headings] == ["Page 1", "Page 2", "Page 3"]
    sections = page.markdown.split("## Page ")[1:]
    assert [s.split("\n", 1)[0] for s in sections] == ["1", "2", "3"]
    assert "install the frobnicator on a production host" in sections[0]
    assert r"Set frob\_level to 3 in settings.toml" in sections[1]  # Markdown-escaped, renders as written
    assert "lower frob\\_level and restart" in sections[2]
    assert heading_paths(page.headings) == [("Page 1",), ("Page 2",), ("Page 3",)]


def test_pages_without_text_are_left_out_and_keep_their_numbers() -> None:
    page = extract_pdf(make_pdf([MANUAL_PAGES[0], [], MANUAL_PAGES[2]], title="T"), URL)
    assert [h["text"] for h in page.headings] == ["Page 1", "Page 3"]


@pytest.mark.parametrize(("info", "first_line", "title"), [
    ({"Title": "Microsoft Word - Release notes.docx"}, "Anything", "Release notes.docx"),
    ({"Title": "untitled"}, "Installing Frob", "Installing Frob"),
    ({}, "Installing Frob", "Installing Frob"),
    ({}, "1.", "Frob Manual"),  # no heading-like line: the file name
])
def test_the_title_comes_from_the_metadata_then_the_first_heading_like_line_then_the_file_name(
        info: dict[str, str], first_line: str, title: str) -> None:
    lines = [first_line, "This page explains the frobnicator and every one of its many settings in detail."]
    assert extract_pdf(make_pdf([lines], info=info), URL).title == title


def test_markup_characters_in_the_text_stay_text() -> None:
    page = extract_pdf(make_pdf([["# not a heading", "> not a quote", "- not a list", "1. not a list",
                                  "a <tag> and [link](x) and `code` and *stars*",
                                  "enough words to pass the minimum length of a stored page, surely"]]), URL)
    body = page.markdown.split("\n\n", 1)[1]
    assert body.splitlines()[:4] == [r"\# not a heading", r"\> not a quote", r"\- not a list", r"1\. not a list"]
    assert r"a \<tag> and \[link\](x) and \`code\` and \*stars\*" in body
    assert [h["text"] for h in page.headings] == ["Page 1"]


def test_text_written_with_combining_marks_is_stored_composed(monkeypatch: pytest.MonkeyPatch) -> None:
    # pypdf gives what the PDF's fonts map each glyph to: an accent may come as its own character.
    from pypdf import PageObject

    monkeypatch.setattr(PageObject, "extract_text", lambda self, *args, **kwargs:
                        "Re\u0301sume\u0301 of the cafe\u0301 menu, written with combining accents, long enough to keep")
    page = extract_pdf(make_pdf([["placeholder"]]), URL)
    assert "Résumé of the café menu" in page.markdown and "\u0301" not in page.markdown


def test_a_pdf_without_a_text_layer_is_empty() -> None:
    with pytest.raises(NoContent) as error:
        extract_pdf(make_pdf([[], []], title="Scan"), URL)
    assert error.value.reason == "pdf_no_text"
    with pytest.raises(NoContent) as error:
        extract_pdf(make_pdf([["Hi"]]), URL, min_chars=80)
    assert error.value.reason == "too_short"


def test_encrypted_and_corrupt_pdfs_are_unreadable() -> None:
    with pytest.raises(PdfUnreadable) as error:
        extract_pdf(encrypted_pdf(MANUAL_PAGES), URL)
    assert error.value.reason == "pdf_encrypted"
    good = make_pdf(MANUAL_PAGES)
    for broken in (good[:200], b"%PDF-1.4\n" + b"\x00garbage" * 50, good.replace(b"/Pages", b"/Pagez")):
        with pytest.raises(PdfUnreadable) as error:
            extract_pdf(broken, URL)
        assert error.value.reason == "pdf_corrupt"


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])  # AES: cryptography, which Scrapy needs too
def test_an_owner_password_only_does_not_stop_reading(algorithm: str) -> None:
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(MANUAL_PAGES, title="Open"))))
    writer.encrypt(user_password="", owner_password="owner", algorithm=algorithm)
    buffer = io.BytesIO()
    writer.write(buffer)
    assert extract_pdf(buffer.getvalue(), URL).title == "Open"


@pytest.mark.parametrize(("content_type", "body", "expected"), [
    ("application/pdf", b"whatever", True),
    ("Application/PDF; name=x.pdf", b"", True),
    (None, b"%PDF-1.7\n...", True),
    ("application/octet-stream", b"\n\n%PDF-1.4", True),
    # A PDF is a PDF whatever its label says; a page quoting the header is not one.
    ("text/html; charset=utf-8", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj", True),
    ("text/plain", b"\n%PDF-1.7", True),
    ("text/html; charset=utf-8", b"<p>Every PDF file starts with %PDF-1.7</p>", False),
    ("application/octet-stream", b"PK\x03\x04", False),
    (None, b"<html>", False),
])
def test_pdf_responses_are_found_by_type_or_by_their_header(content_type: str | None, body: bytes,
                                                            expected: bool) -> None:
    assert is_pdf(content_type, body) is expected


def test_the_extraction_middleware_takes_pdf_responses_unless_turned_off() -> None:
    def response(headers: dict[str, str], body: bytes) -> Response:
        return Response(URL, headers=headers, body=body, request=Request(URL))

    middleware = ExtractionMiddleware(get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}}))
    assert middleware._is_page(response({"Content-Type": "application/pdf"}, b"%PDF-1.4"))
    assert middleware._is_page(response({}, make_pdf(MANUAL_PAGES)))
    assert not middleware._is_page(response({"Content-Type": "image/png"}, b"\x89PNG"))
    off = ExtractionMiddleware(get_crawler(settings_dict={"ADDONS": {HarvesterAddon: 0}, "HARVESTER_PDF_ENABLED": False}))
    assert not off._is_page(response({"Content-Type": "application/pdf"}, b"%PDF-1.4"))


def test_pdf_links_are_followed_and_sphinx_downloads_that_are_pdfs_too() -> None:
    assert is_pdf_url("http://h/a/Manual.PDF") and not is_pdf_url("http://h/pdf/")
    skip = compile_patterns(DEFAULT_SKIP_PATTERNS)
    assert url_allowed("http://h/docs/_downloads/0a1b/guide.pdf", [], skip)
    assert not url_allowed("http://h/docs/_downloads/0a1b/example.py", [], skip)
    assert not url_allowed("http://h/docs/_static/logo.pdf.png", [], skip)
    base = "http://127.0.0.1:8000/docs/"
    page = html_response(base, '<html><body><main><a href="guide.pdf">PDF</a> <a href="pic.png">pic</a>'
                               '<a href="next.html">next</a></main></body></html>')
    spider = make_spider(SiteSpider, start=base)
    urls = {r.url for r in spider._requests_to_follow(page)}
    assert urls == {base + "guide.pdf", base + "next.html"}


def test_pdf_links_are_not_followed_when_pdfs_are_off() -> None:
    from scrapy.crawler import AsyncCrawlerRunner
    from scrapy.utils.test import get_reactor_settings

    runner = AsyncCrawlerRunner({"ADDONS": {HarvesterAddon: 0}, **get_reactor_settings(),
                                 "HARVESTER_PDF_ENABLED": False})
    crawler = runner.create_crawler(SiteSpider)
    spider = SiteSpider.from_crawler(crawler, start="http://127.0.0.1:8000/docs/")
    crawler.spider = spider
    crawler._apply_settings()
    assert not spider.wants("http://127.0.0.1:8000/docs/guide.pdf")
    assert spider.wants("http://127.0.0.1:8000/docs/next.html")


def test_the_docs_and_sitemap_spiders_take_pdf_links() -> None:
    from harvester.spiders.docs import DocsSpider
    from harvester.spiders.sitemap import SitemapSpider

    base = "http://127.0.0.1:8000/docs/"
    page = html_response(base, '<html><body><div class="sphinxsidebar"><a href="manual.pdf">Manual</a>'
                               '</div></body></html>')
    assert [r.url for r in make_spider(DocsSpider, start=base).parse(page)] == [base + "manual.pdf"]
    sitemap = make_spider(SitemapSpider, start=base)
    entries = [{"loc": base + "manual.pdf"}, {"loc": base + "a.html"}]
    assert [e["loc"] for e in sitemap.sitemap_filter(entries)] == [base + "manual.pdf", base + "a.html"]
