"""End to end: a site that links PDFs, crawled into the real model and local Qdrant; and the SSRF
guard and the size cap on PDFs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import qdrant_points
from tests.crawl import NO_EMBEDDING, crawl
from tests.servers.pdfgen import MANUAL_PAGES, encrypted_pdf, make_pdf
from tests.servers.sites import doc_page
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

PDF = {"Content-Type": "application/pdf"}
NO_OFFSITE = '{"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": null}'


def pdf_site(extra: dict[str, Route] | None = None, links: list[str] = ()) -> dict[str, Route]:
    """/docs/ links a manual (application/pdf), a report served without a useful type, a scan with
    no text layer and an encrypted PDF."""
    sidebar = ["/docs/files/manual.pdf", "/docs/download/report", "/docs/files/scan.pdf",
               "/docs/files/locked.pdf", *links]
    routes = {
        "/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
        "/docs/": Route(doc_page("index", sidebar=sidebar)),
        "/docs/files/manual.pdf": Route(make_pdf(MANUAL_PAGES, title="Frobnicator Operations Manual"), headers=PDF),
        "/docs/download/report": Route(
            make_pdf([["Quarterly encabulator report", "",
                       "The encabulators ran for ninety days without a single humming incident."]]),
            headers={"Content-Type": "application/octet-stream"}),
        "/docs/files/scan.pdf": Route(make_pdf([[], []], title="Scanned letter"), headers=PDF),
        "/docs/files/locked.pdf": Route(encrypted_pdf(MANUAL_PAGES), headers=PDF),
    }
    routes.update(extra or {})
    return routes


def test_pdf_pages_land_in_qdrant_with_their_page_numbers(tmp_path: Path) -> None:
    with SiteServer(routes=pdf_site()) as server:
        result = crawl("site", server.url + "docs/", tmp_path)
    assert result.returncode == 0, result.output[-3000:]
    by_url = {item["url"].removeprefix(server.url): item for item in result.items}
    assert set(by_url) == {"docs/", "docs/files/manual.pdf", "docs/download/report"}
    manual = by_url["docs/files/manual.pdf"]
    assert (manual["title"], manual["source_type"], manual["degraded"]) == (
        "Frobnicator Operations Manual", "pdf", True)
    assert by_url["docs/download/report"]["title"] == "Quarterly encabulator report"
    assert by_url["docs/"]["source_type"] == "web"
    # The scan is empty; the encrypted file is one clear line, counted; the crawl went on.
    assert result.report["skipped"]["pdf_no_text"] == [server.url + "docs/files/scan.pdf"]
    assert result.report["failed"]["pdf_encrypted"] == [server.url + "docs/files/locked.pdf"]
    assert f"Cannot read the PDF {server.url}docs/files/locked.pdf: pdf_encrypted" in result.output
    points = [p.payload for p in qdrant_points(tmp_path / "qdrant")]
    pdf_points = [p for p in points if p["metadata"]["source_url"].endswith("manual.pdf")]
    assert {p["metadata"]["source_type"] for p in pdf_points} == {"pdf"}
    paths = {p["metadata"]["heading_path"] for p in pdf_points}
    assert paths == {"Page 1", "Page 2", "Page 3"}
    page2 = next(p for p in pdf_points if p["metadata"]["heading_path"] == "Page 2")
    assert "turbo encabulator" in page2["page_content"]
    assert page2["metadata"]["context"].startswith("Frobnicator Operations Manual > Page 2")


@pytest.fixture
def canary() -> Iterator[SiteServer]:
    server = SiteServer(routes={"/secret.pdf": Route(make_pdf(MANUAL_PAGES, title="Secret"), headers=PDF)},
                        host="127.0.0.2")
    with server:
        yield server


def test_a_redirect_to_a_private_pdf_is_refused_and_a_pdf_over_the_size_cap_is_not_stored(
        tmp_path: Path, canary: SiteServer) -> None:
    big = make_pdf(MANUAL_PAGES, title="Huge", padding=60_000)
    extra = {"/docs/files/moved.pdf": Route(b"", 302, {"Location": f"http://127.0.0.2:{canary.port}/secret.pdf"}),
             "/docs/files/huge.pdf": Route(big, headers=PDF)}
    with SiteServer(routes=pdf_site(extra, ["/docs/files/moved.pdf", "/docs/files/huge.pdf"])) as server:
        result = crawl("site", server.url + "docs/", tmp_path, settings={
            **NO_EMBEDDING, "DOWNLOAD_MAXSIZE": "40000", "DOWNLOADER_MIDDLEWARES": NO_OFFSITE})
    assert result.returncode == 0, result.output[-3000:]
    assert canary.paths() == []
    assert "/docs/files/moved.pdf" in server.paths() and "/docs/files/huge.pdf" in server.paths()
    assert result.report["skipped"]["ssrf_refused"] == [f"http://127.0.0.2:{canary.port}/secret.pdf"]
    assert result.report["failed"]["too_large"] == [server.url + "docs/files/huge.pdf"]
    stored = {item["url"].removeprefix(server.url) for item in result.items}
    assert stored == {"docs/", "docs/files/manual.pdf", "docs/download/report"}
