"""The MCP tools as an assistant meets them, in process: the official SDK's client connected to
``build_server`` over a real embedded store written with the index's own payloads (the page's
Markdown, heading anchors). The stdio and HTTP transports are in tests/test_e2e_mcp.py."""

from __future__ import annotations

import time
from importlib.metadata import version
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import Client

from harvester.extract.page import extract_page
from harvester.index.engines import open_store
from harvester.index.store import chunk_anchors, chunk_point, page_payloads
from harvester.items import PageItem
from harvester.mcp_server.core import FETCH_CHARS, SearchService, url_forms
from harvester.mcp_server.server import build_server
from harvester.urls.hosts import host_name

HOST = "http://docs.test:8080"
GUIDE = """<html><head><title>Blueprints</title></head><body><main>
<section id="blueprints"><h1>Blueprints</h1><p>{intro}</p>
<section id="why-blueprints"><h2>Why Blueprints?<a class="headerlink" href="#why-blueprints">¶</a></h2>
<p>{why}</p></section>
<h2 id="registering">Registering <code>bp</code></h2><p>{reg}</p></section></main></body></html>"""


class StubEmbedder:
    """A deterministic embedder of four dimensions: the tools' plumbing, not ranking, is tested here."""

    vector_name = "stub"
    dimension = 4

    def encode(self, texts: list[str], batch_size: int = 1) -> np.ndarray:
        return np.array([[1.0 + len(t) % 3, 1.0, float("blue" in t.lower()), 0.5] for t in texts])


def page(url: str, markdown: str, chunks: list[tuple[tuple[str, ...], str]], *, section: str,
         anchors: list[list[str]] = ()) -> PageItem:
    return PageItem(url=url, title=chunks[0][0][0], markdown=markdown, section=section, domain=host_name(url),
                    breadcrumbs=section.split(" > "), anchors=list(anchors), content_hash=url[-12:],
                    chunks=[{"id": f"00000000-0000-0000-0000-{abs(hash((url, i))) % 10**12:012d}", "index": i,
                             "text": text, "heading_path": list(path), "token_count": 10}
                            for i, (path, text) in enumerate(chunks)])


@pytest.fixture(scope="module")
def pages() -> dict[str, PageItem]:
    extracted = extract_page(GUIDE.format(intro="Blueprints group views. " * 8, why="Reuse. " * 30,
                                          reg="Call register_blueprint. " * 10), HOST + "/tutorial/blueprints.html")
    md = extracted.markdown
    why, reg = md.index("## Why"), md.index("## Registering")
    # Chunks repeat their heading and overlap, as the chunker's do: the page is not their join.
    guide = page(HOST + "/tutorial/blueprints.html", md, [
        (("Blueprints",), md[:why]), (("Blueprints", "Why Blueprints?"), md[why - 40:reg]),
        (("Blueprints", "Registering `bp`"), "# Blueprints\n\n" + md[reg:])],
        section="Docs > Tutorial > Blueprints", anchors=[list(pair) for pair in extracted.anchors])
    # About 300 KB of Markdown, as the largest API reference pages.
    lines = [f"## Function {i}\n\nThe function number {i} returns a value. " + "x" * 120 + "\n" for i in range(1600)]
    big_md = "# API\n\n" + "\n".join(lines)
    api = page(HOST + "/api/", big_md, [(("API",), big_md[:4000]), (("API", "Function 30"), big_md[4000:8000])],
               section="Docs > Reference")
    other = page("https://other.test/index.html", "# Other\n\nAnother site.", [(("Other",), "# Other\n\nAnother site.")],
                 section="Elsewhere")
    return {"guide": guide, "api": api, "other": other}


@pytest.fixture(scope="module")
def service(tmp_path_factory, pages) -> Any:
    embedder = StubEmbedder()
    store = open_store(None, None, str(tmp_path_factory.mktemp("qdrant")))
    store.ensure_collection("harvester", embedder.vector_name, embedder.dimension)
    for item in pages.values():
        payloads = page_payloads(item, "2026-01-01T00:00:00+00:00")
        vectors = embedder.encode([c["text"] for c in item.chunks])
        store.upsert("harvester", [chunk_point(c["id"], embedder.vector_name, v, c["text"], p)
                                   for c, v, p in zip(item.chunks, vectors, payloads, strict=True)])
    made = SearchService(store, embedder, "harvester")
    yield made
    made.close()


def ask(service: SearchService, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any], list[Any]]:
    """The server's name and version, its tools, and each call's result, through the SDK's client."""
    async def run() -> tuple[Any, list[Any], list[Any]]:
        async with Client(build_server(service)) as client:
            tools = (await client.list_tools()).tools
            return client.server_info, tools, [await client.call_tool(name, args) for name, args in calls]
    return anyio.run(run)


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    found = result.structured_content
    return found["result"] if isinstance(found, dict) and set(found) == {"result"} else found


def test_fetch_is_the_pages_own_markdown_in_parts_under_any_spelling(service, pages):
    guide, api = pages["guide"], pages["api"]
    spellings = [guide.url + "#why-blueprints", guide.url.replace("http://docs.test", "HTTP://Docs.Test"),
                 HOST + "/api/index.html", HOST + "/api", "https://other.test/", "https://other.test"]
    calls = [("fetch", {"url": guide.url}), ("fetch", {"url": api.url})]
    calls += [("fetch", {"url": url}) for url in spellings]
    calls += [("fetch", {"url": ""}), ("fetch", {"url": "   "}), ("fetch", {"url": api.url, "offset": 10**7})]
    _, _, results = ask(service, calls)
    whole, first, *spelt = (data(r) for r in results[:2 + len(spellings)])
    empty, blank, past = results[2 + len(spellings):]

    assert whole["markdown"] == guide.markdown and whole["markdown"].count("# Blueprints") == 1
    assert whole["next_offset"] is None and whole["note"] == "the end of the page"
    assert len(first["markdown"]) <= FETCH_CHARS and first["total_chars"] == len(api.markdown) > 250_000
    assert first["next_offset"] == len(first["markdown"]) and first["markdown"].endswith("\n")
    assert f"offset={first['next_offset']}" in first["note"]
    assert [r["url"] for r in spelt] == [guide.url] * 2 + [api.url] * 2 + [pages["other"].url] * 2
    assert empty.is_error and "url" in empty.content[0].text  # the schema's minLength
    assert blank.is_error and "URL is empty" in blank.content[0].text
    assert past.is_error and "past the page's end" in past.content[0].text

    parts, offset, started = [], 0, time.perf_counter()
    while offset is not None:
        part = service.fetch(api.url, offset=offset, max_chars=100_000)
        parts.append(part["markdown"])
        offset = part["next_offset"]
    assert "".join(parts) == api.markdown and len(parts) > 1
    assert time.perf_counter() - started < 2.0  # bench/bench_mcp.py measures it (well under 50 ms a call)


def test_list_pages_sections_and_site_filters(service, pages):
    calls = [("list_pages", {"site": "docs.test:8080"}),
             ("list_pages", {"site": "docs.test", "section": "Docs > Tutorial"}),
             ("list_pages", {"site": HOST + "/anything", "limit": 1}),
             ("list_sources", {}),
             ("search", {"query": "blueprints", "site": "docs.test:8080", "section": "Docs > Tut", "k": 3})]
    _, _, results = ask(service, calls)
    toc, tutorial, first, sources, found = (data(r) for r in results)
    assert [(p["url"], p["title"], p["section"]) for p in toc["pages"]] == [
        (pages["api"].url, "API", "Docs > Reference"), (pages["guide"].url, "Blueprints", "Docs > Tutorial > Blueprints")]
    assert {s["section"] for s in toc["sections"]} == {"Docs > Reference", "Docs > Tutorial > Blueprints"}
    assert [p["url"] for p in tutorial["pages"]] == [pages["guide"].url]
    assert first["total"] == 2 and len(first["pages"]) == 1 and first["next_offset"] == 1
    docs = next(s for s in sources[0]["sites"] if s["site"] == "docs.test")
    assert {s["section"] for s in docs["sections"]} == {"Docs > Reference", "Docs > Tutorial > Blueprints"}
    assert {hit["url"] for hit in found} == {pages["guide"].url}


def test_results_cite_the_heading_with_its_anchor(service, pages):
    guide = pages["guide"]
    assert chunk_anchors(guide.chunks, guide.anchors) == ["blueprints", "why-blueprints", "registering"]
    _, _, (result,) = ask(service, [("search", {"query": "why use blueprints", "k": 3, "group_by_page": False,
                                                "url_prefix": guide.url})])
    hits = data(result)
    assert {hit["link"] for hit in hits} == {guide.url + "#" + a for a in ("blueprints", "why-blueprints", "registering")}
    assert all(hit["section"] == "Docs > Tutorial > Blueprints" and hit["url"] == guide.url for hit in hits)


def test_schemas_unknown_arguments_empty_results_and_version(service, tmp_path):
    info, tools, results = ask(service, [
        ("search", {"query": "blueprints", "top_k": 3}),
        ("search", {"query": "blueprints", "k": 500}),
        ("search", {"query": "blueprints", "site": "nowhere.test"}),
        ("list_pages", {"site": "nowhere.test"})])
    assert info.name == "harvester" and info.version == version("harvester")
    assert {t.name for t in tools} == {"search", "fetch", "list_pages", "list_sources"}
    for tool in tools:
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), (tool.name, name)
    k = next(t for t in tools if t.name == "search").input_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"]) == (1, 50)
    unknown, too_many, nothing, no_pages = results
    assert unknown.is_error and "top_k" in unknown.content[0].text
    assert too_many.is_error
    assert not nothing.is_error and nothing.content[0].text.startswith("No results")
    assert data(no_pages)["pages"] == [] and data(no_pages)["total"] == 0

    missing = SearchService(open_store(None, None, str(tmp_path / "typo")), StubEmbedder(), "harvester")
    try:
        with pytest.raises(ValueError, match=str(tmp_path / "typo")):
            missing.fetch(HOST + "/api/")
    finally:
        missing.close()


def test_url_forms_of_a_model():
    assert url_forms("HTTPS://Docs.Test/a/index.html#x")[:2] == ["HTTPS://Docs.Test/a/index.html#x",
                                                                "https://docs.test/a/index.html"]
    assert set(url_forms("https://docs.test/a/")) >= {"https://docs.test/a/", "https://docs.test/a",
                                                      "https://docs.test/a/index.html"}
    assert url_forms("not a url") == ["not a url"]
