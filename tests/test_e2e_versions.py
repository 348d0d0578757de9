"""End to end: three versioned layouts side by side on one site (Sphinx with a ``stable`` alias and
its ``documentation_options.js``, Docusaurus with ``/docs/next/``, mike with ``versions.json``),
crawled into one collection, searched per version, then one version re-crawled alone."""

from __future__ import annotations

import json

import pytest

from tests.conftest import qdrant_points
from tests.crawl import crawl, scrapy_command
from tests.servers.sitesrv import Route, SiteServer

pytestmark = pytest.mark.e2e

# The same text in every release, its link resolved into each version's own folder.
SHARED = ("<p>Topics cover the request cycle, the middleware chain and the settings registry. "
          'Each topic is explained with examples that work the same in every <a href="index.html">release</a>.</p>')


def page(title: str, body: str, head: str = "", links: tuple[str, ...] = ()) -> str:
    nav = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}</head>'
            f'<body><nav><ul>{nav}</ul></nav><main><h1>{title}</h1>{body}'
            f"<p>{title} is part of the Frob manual, written for people who run Frob in production.</p>"
            f"</main></body></html>")


def sphinx(version: str, text: str) -> dict[str, Route]:
    options = '<script id="documentation_options" src="_static/documentation_options.js"></script>'
    index = page(f"Frob {version} overview", f"<p>{text}</p>", options, ("topics.html",))
    topics = page("Frob topics", SHARED, options, ("index.html",))
    return {"index.html": Route(index), "topics.html": Route(topics),
            "_static/documentation_options.js": Route(f"var DOCUMENTATION_OPTIONS = {{\n    VERSION: '{version}',\n}};",
                                                      headers={"Content-Type": "application/javascript"})}


def site(release_42: str) -> dict[str, Route]:
    routes: dict[str, Route] = {
        "/robots.txt": Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
        "/index.html": Route(page("Frob", "<p>All the manuals.</p>", links=(
            "/en/4.2/index.html", "/en/5.0/index.html", "/en/stable/index.html", "/docs/intro",
            "/docs/next/intro", "/1.0/guide/", "/latest/guide/")))}
    for folder, version, text in (("4.2", "4.2", release_42),
                                  ("5.0", "5.0", "Frob 5.0 replaces the quokka scheduler by the wombat scheduler."),
                                  ("stable", "5.0", "Frob 5.0 replaces the quokka scheduler by the wombat scheduler.")):
        routes.update({f"/en/{folder}/{path}": route for path, route in sphinx(version, text).items()})
    meta = '<meta name="docsearch:version" content="{}">'
    routes["/docs/intro"] = Route(page("Plugin intro", "<p>Plugins register hooks with the platypus API.</p>",
                                       meta.format("3.1")))
    routes["/docs/next/intro"] = Route(page("Plugin intro", "<p>Plugins will register hooks with the echidna API.</p>",
                                            meta.format("current")))
    for folder, text in (("1.0", "The CLI reads the numbat file."), ("2.0", "The CLI reads the bilby file."),
                         ("latest", "The CLI reads the bilby file.")):
        routes[f"/{folder}/guide/"] = Route(page("CLI guide", f"<p>{text}</p>", links=("/2.0/guide/",)))
    routes["/versions.json"] = Route(json.dumps([{"version": "2.0", "title": "2.0", "aliases": ["latest"]},
                                                {"version": "1.0", "title": "1.0", "aliases": []}]),
                                     headers={"Content-Type": "application/json"})
    return routes


def search(workdir, model: str, *args: str) -> list[dict]:
    process = scrapy_command(["search", "--json", "-k", "3", *args], workdir, HARVESTER_EMBEDDING_MODEL=model)
    assert process.returncode == 0, process.stderr
    return json.loads(process.stdout)


def by_url(points: list, port_url: str) -> dict[str, list[dict]]:
    pages: dict[str, list[dict]] = {}
    for point in points:
        meta = point.payload["metadata"]
        pages.setdefault(meta["source_url"].removeprefix(port_url.rstrip("/")), []).append(meta)
    return pages


def test_versions_side_by_side_then_one_version_recrawled(tmp_path, tiny_model):
    settings = {"HARVESTER_EMBEDDING_MODEL": tiny_model}  # versions kept apart by default
    with SiteServer(routes=site("Frob 4.2 runs the quokka scheduler by default.")) as server:
        first = crawl("site", server.url + "index.html", tmp_path, settings=settings)
        assert first.returncode == 0, first.output[-3000:]
        versions = {item["url"].removeprefix(server.url.rstrip("/")): item["version"] for item in first.items}
        stored = by_url(qdrant_points(tmp_path / "qdrant"), server.url)

        # Versions from the URL, the generator's meta, the options script and versions.json; an
        # alias and the version it serves are one page.
        assert versions["/en/4.2/index.html"] == "4.2" and versions["/docs/intro"] == "3.1"
        assert versions["/docs/next/intro"] == "next" and versions["/1.0/guide/"] == "1.0"
        assert {versions.get(url) for url in ("/en/5.0/index.html", "/en/stable/index.html")} - {None} == {"5.0"}
        assert {versions.get(url) for url in ("/2.0/guide/", "/latest/guide/")} - {None} == {"2.0"}
        for alias, served in (("/en/stable/index.html", "/en/5.0/index.html"), ("/latest/guide/", "/2.0/guide/")):
            assert len({alias, served} & set(stored)) == 1, sorted(stored)
            assert len({alias, served} & set(versions)) == 1
        # The topics page is the same text in 4.2 and 5.0: stored once, found by both.
        topics = [url for url in stored if url.endswith("/topics.html")]
        assert len(topics) == 1 and set(stored[topics[0]][0]["versions"]) == {"4.2", "5.0"}
        five = {p.id: p.payload for p in qdrant_points(tmp_path / "qdrant")
                if p.payload["metadata"]["version"] == "5.0"}

        # Per version, and by default the newest stable version (5.0, not next).
        hits = search(tmp_path, tiny_model, "--version", "4.2", "quokka scheduler")
        assert hits and {hit["version"] for hit in hits} == {"4.2"}
        hits = search(tmp_path, tiny_model, "scheduler")
        assert hits and {hit["version"] for hit in hits} - {None} == {"5.0"}  # None: the unversioned home page
        assert "/en/4.2/index.html" not in {hit["url"].removeprefix(server.url.rstrip("/")) for hit in hits}

        # 4.2 re-crawled alone, after it changed: 5.0 is not pruned, re-embedded or rewritten, and
        # still finds the shared topics page.
        server.routes["/en/4.2/index.html"] = Route(page("Frob 4.2 overview", "<p>Frob 4.2.1 fixes the dingo.</p>",
                                                         links=("topics.html",)))
        second = crawl("site", server.url + "en/4.2/index.html", tmp_path, settings=settings)
        assert second.returncode == 0, second.output[-3000:]
    points = qdrant_points(tmp_path / "qdrant")
    after = by_url(points, server.url)
    assert "dingo" in " ".join(m["heading_path"] + " " for m in after["/en/4.2/index.html"]) or any(
        "dingo" in p.payload["page_content"] for p in points if p.payload["metadata"]["version"] == "4.2")
    assert {p.id: p.payload for p in points if p.payload["metadata"]["version"] == "5.0"} == five
    assert set(after[topics[0]][0]["versions"]) == {"4.2", "5.0"}
    assert {"/docs/intro", "/docs/next/intro", "/1.0/guide/"} <= set(after) and set(stored) <= set(after)
