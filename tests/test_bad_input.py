"""Bad input: one clear error line, a non-zero exit, never a bare traceback."""

from __future__ import annotations

import socket

import pytest
from qdrant_client import QdrantClient, models

from harvester.index.engines import open_store
from tests.crawl import NO_EMBEDDING, crawl, run_scrapy
from tests.servers.sites import chain_site
from tests.servers.sitesrv import Route, SiteServer


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "ERROR" in line or "harvester: error" in line]


def assert_clean_failure(result, words: str, exitcode: int | None = None) -> None:
    assert result.returncode != 0, result.output
    if exitcode is not None:
        assert result.returncode == exitcode
    assert "Traceback" not in result.output, result.output
    assert any(words in line for line in error_lines(result.output)), result.output


@pytest.mark.parametrize(
    ("start", "words"),
    [("notaurl", "only http:// and https://"), ("ftp://127.0.0.1/docs/", "only http:// and https://"),
     ("http://", "no valid host")],
)
def test_bad_start_url(tmp_path, start, words):
    assert_clean_failure(crawl("docs", start, tmp_path), words, exitcode=2)


@pytest.mark.cli
def test_missing_start_and_bad_arguments(tmp_path):
    process = run_scrapy(["crawl", "site"], tmp_path)
    assert process.returncode == 2 and "no start URL" in process.stderr
    process = run_scrapy(["crawl", "site", "-a", "start=http://127.0.0.1:1/", "-a", "max_pages=many"], tmp_path)
    assert process.returncode == 2 and "max_pages must be a positive integer" in process.stderr


@pytest.mark.parametrize(
    ("setting", "words"),
    [("HARVESTER_EMBEDDING_BATCH_SIZE=0", "must be at least 1"),
     ("HARVESTER_DEDUP_ENABLED=perhaps", "must be true or false"),
     ("HARVESTER_EMBEDDING_ENABLED=0", "needs HARVESTER_EMBEDDING_ENABLED"),
     ("QDRANT_URL=localhost:6333", "must be an http:// or https:// URL"),
     ("HARVESTER_CHUNKING_ENABLED=0", "needs HARVESTER_CHUNKING_ENABLED"),
     ("HARVESTER_MARKDOWN_CONVERTER=pandoc", "must be one of"),
     ('HARVESTER_CONTENT_SELECTORS={"docs.example.com": "div[["}', "invalid CSS selector"),
     ("HARVESTER_LOW_QUALITY_THRESHOLD=2", "between 0 and 1")],
)
def test_wrong_settings(tmp_path, setting, words):
    # In-process: the crawl command's checks and exit status are the harness's (crawl_refusal);
    # test_missing_start_and_bad_arguments and test_guard.py run the real command.
    name, value = setting.split("=", 1)
    result = crawl("docs", "http://127.0.0.1:1/", tmp_path, settings={name: value})
    assert result.returncode == 2, result.output
    assert "harvester: error: invalid setting" in result.output and words in result.output


@pytest.mark.e2e
def test_unreachable_host(tmp_path):
    with socket.socket() as sock:  # a loopback port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = crawl("docs", f"http://127.0.0.1:{port}/docs/", tmp_path, settings={"RETRY_TIMES": 0, **NO_EMBEDDING})
    assert_clean_failure(result, "Cannot crawl the start URL", exitcode=1)
    assert "connection_refused" in result.output


@pytest.mark.e2e
def test_404_start_page(tmp_path):
    with SiteServer(routes=chain_site()) as server:
        result = crawl("site", server.url + "docs/absent.html", tmp_path)
    assert_clean_failure(result, "HTTP 404", exitcode=1)
    assert "harvester: error: crawl failed: the start URL could not be fetched" in result.output


@pytest.mark.e2e
@pytest.mark.parametrize(
    "body", [b"<html><body><h1>Oops</h1></body></html>", b"\x00\x01\x02 not xml {{{", b"<?xml version='1.0'?>"]
)
def test_malformed_sitemap(tmp_path, body):
    routes = {
        "/robots.txt": Route("User-agent: *\nDisallow:\n"),
        "/sitemap.xml": Route(body, headers={"Content-Type": "application/xml"}),
    }
    with SiteServer(routes=routes) as server:
        result = crawl("sitemap", server.url, tmp_path, settings=NO_EMBEDDING)
    assert_clean_failure(result, "Invalid sitemap (not a sitemap XML document)", exitcode=1)
    assert "no page could be crawled" in result.output


@pytest.mark.e2e
def test_collection_with_another_vector_size(tmp_path):
    store = open_store(None, None, str(tmp_path / "qdrant"))
    store.ensure_collection("harvester", "all-MiniLM-L6-v2", 3)
    store.close()
    with SiteServer(routes=chain_site()) as server:
        result = crawl("docs", server.url + "docs/p1.html", tmp_path)
        requested = server.paths()
    assert_clean_failure(result, "stores 3-dimensional", exitcode=1)
    assert not [p for p in requested if p.startswith("/docs/")], "no page is fetched when the index is unusable"


@pytest.mark.e2e
def test_collection_in_the_old_local_mode_format_is_named_with_the_way_out(tmp_path):
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    client.create_collection(
        "harvester", vectors_config={"all-MiniLM-L6-v2": models.VectorParams(size=384, distance=models.Distance.COSINE)},
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    client.close()
    with SiteServer(routes=chain_site()) as server:
        result = crawl("docs", server.url + "docs/p1.html", tmp_path)
        requested = server.paths()
    assert_clean_failure(result, "in qdrant-client's local-mode format", exitcode=1)
    assert "scrapy export --from-engine local --to-edge" in result.output
    assert not [p for p in requested if p.startswith("/docs/")]
