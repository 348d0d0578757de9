"""The MCP server end to end: a real crawl, then ``scrapy mcp`` spoken to over stdio by the mcp
SDK's own client; a search and a re-crawl run beside it on the same embedded store."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.crawl import REPO, crawl, run_scrapy, scrapy_command, scrapy_env
from tests.servers.sites import chain_site
from tests.servers.sitesrv import SiteServer

pytestmark = pytest.mark.e2e


def structured(result: Any) -> Any:
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data


async def session_run(workdir: Path, steps, params: StdioServerParameters | None = None) -> Any:  # type: ignore[no-untyped-def]
    params = params or StdioServerParameters(command=sys.executable, args=["-m", "scrapy", "mcp"], cwd=str(REPO),
                                             env=scrapy_env(workdir))
    with (workdir / "mcp-stderr.txt").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            started = await session.initialize()
            return started.server_info, await steps(session)


def test_mcp_server_searches_fetches_and_lists_a_real_crawl(tmp_path):
    with SiteServer(routes=chain_site()) as server:
        result = crawl("docs", server.url + "docs/p1.html", tmp_path)
        assert result.returncode == 0, result.output
        pages = {item["url"]: item for item in result.items}
        target = next(url for url in pages if url.endswith("/p3.html"))
        query = pages[target]["chunks"][0]["text"][:200]

        async def steps(session: ClientSession) -> dict[str, Any]:
            out: dict[str, Any] = {}
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            out["search"] = structured(await session.call_tool("search", {"query": query, "k": 3}))
            out["grouped"] = structured(await session.call_tool(
                "search", {"query": "configure part", "k": 10, "group_by_page": True}))
            out["prefix"] = structured(await session.call_tool(
                "search", {"query": query, "k": 5, "url_prefix": target}))
            out["fetch"] = structured(await session.call_tool("fetch", {"url": target + "#configuring-part3"}))
            out["toc"] = structured(await session.call_tool("list_pages", {"site": server.url}))
            out["empty_url"] = await session.call_tool("fetch", {"url": " "})
            out["sources"] = structured(await session.call_tool("list_sources", {}))
            out["missing"] = await session.call_tool("fetch", {"url": server.url + "nowhere.html"})
            out["bad_k"] = await session.call_tool("search", {"query": "x", "k": 0})
            # The server holds the store now; a search and a re-crawl in other processes still run.
            out["cli"] = await anyio.to_thread.run_sync(lambda: run_scrapy(
                ["search", "--json", "-k", "2", query], tmp_path, timeout=300))
            # By now the server holds the ranking keys in memory (read beside its first search).
            out["remembered"] = structured(await session.call_tool("search", {"query": query, "k": 2}))
            out["recrawl"] = await anyio.to_thread.run_sync(
                lambda: crawl("docs", server.url + "docs/p1.html", tmp_path, feed="again.jsonl"))
            out["after"] = structured(await session.call_tool("search", {"query": query, "k": 1}))
            return out

        info, out = anyio.run(session_run, tmp_path, steps)

    assert out["tools"] == ["fetch", "list_pages", "list_sources", "search"]
    assert info.version == version("harvester")
    best = out["search"][0]
    assert best["url"] == target
    assert best["title"] == pages[target]["title"]
    assert best["heading_path"] == pages[target]["chunks"][0]["heading_path"]
    assert best["text"] == pages[target]["chunks"][0]["text"]
    urls = [hit["url"] for hit in out["grouped"]]
    assert len(urls) == len(set(urls)) > 1, "one result per page"
    assert {hit["url"] for hit in out["prefix"]} == {target}
    fetched = out["fetch"]
    assert fetched["title"] == pages[target]["title"]
    assert fetched["url"] == target and fetched["markdown"] == pages[target]["markdown"]
    assert fetched["next_offset"] is None
    assert fetched["chunks"] == len(pages[target]["chunks"])
    assert fetched["metadata"]["content_hash"] == pages[target]["content_hash"]
    (collection,) = out["sources"]
    assert collection["collection"] == "harvester" and collection["pages"] == len(pages)
    assert collection["chunks"] == sum(len(p["chunks"]) for p in pages.values())
    assert collection["last_crawl"] and collection["sites"][0]["pages"] == len(pages)
    assert out["missing"].is_error and "no page" in out["missing"].content[0].text
    assert out["empty_url"].is_error and "URL is empty" in out["empty_url"].content[0].text
    assert sorted(page["url"] for page in out["toc"]["pages"]) == sorted(pages)
    assert out["bad_k"].is_error
    assert out["cli"].returncode == 0, out["cli"].stderr[-2000:]
    # The server answers from the ranking keys it holds in memory, the command from the payloads.
    assert [(hit["url"], hit["text"], hit["score"]) for hit in json.loads(out["cli"].stdout)] == [
        (hit["url"], hit["text"], hit["score"]) for hit in out["remembered"]] == [
        (hit["url"], hit["text"], hit["score"]) for hit in out["search"][:2]]
    assert json.loads(out["cli"].stdout)[0]["url"] == target
    assert out["recrawl"].returncode == 0, out["recrawl"].output[-3000:]
    assert out["recrawl"].stat("pages_crawled") or out["recrawl"].items
    assert out["after"][0]["url"] == target


def test_mcp_http_refuses_a_non_loopback_host(tmp_path):
    process = scrapy_command(["mcp", "--http", "--host", "0.0.0.0"], tmp_path)
    assert process.returncode == 2
    assert "loopback" in process.stderr


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    """An embedded store of two pages, written with the real model, for the servers started below."""
    from harvester.embedding.folder import DEFAULT_MODEL
    from harvester.embedding.models import load_embedder
    from harvester.index.engines import open_store
    from harvester.index.store import chunk_point

    embedder = load_embedder(DEFAULT_MODEL)
    texts = {"http://docs.test/a.html": "Routing maps URLs to view functions with the route decorator.",
             "http://docs.test/b.html": "Templates are rendered with Jinja and a context of variables."}
    path = tmp_path_factory.mktemp("store") / "qdrant"
    store = open_store(None, None, str(path))
    store.ensure_collection("harvester", embedder.vector_name, embedder.dimension)
    store.upsert("harvester", [
        chunk_point(f"00000000-0000-0000-0000-00000000000{i}", embedder.vector_name, vector, text,
                    {"page_content": text, "metadata": {"source_url": url, "title": url[-6:], "headings": [],
                                                        "chunk_index": 0, "domain": "docs.test"}})
        for i, ((url, text), vector) in enumerate(zip(texts.items(), embedder.encode(list(texts.values()), 2),
                                                      strict=True))])
    store.close()
    return path


def test_mcp_over_streamable_http_on_loopback(tmp_path, small_store):
    import socket
    import subprocess
    import time

    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**scrapy_env(tmp_path, NO_PROXY="127.0.0.1"), "HARVESTER_QDRANT_PATH": str(small_store)}
    server = subprocess.Popen([sys.executable, "-m", "scrapy", "mcp", "--http", "--port", str(port)], cwd=REPO,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None, server.stderr.read()[-2000:]
            time.sleep(0.5)

        async def ask() -> Any:
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                return (structured(await session.call_tool("search", {"query": "how do routes work", "k": 1})),
                        await session.call_tool("search", {"query": "routes", "top_k": 1}),
                        await session.call_tool("search", {"query": "routes", "site": "nowhere.test"}))

        (hit,), unknown, empty = anyio.run(ask)
        assert hit["url"] == hit["link"] == "http://docs.test/a.html"
        assert unknown.is_error and "top_k" in unknown.content[0].text
        assert not empty.is_error and empty.content[0].text.startswith("No results")
    finally:
        server.terminate()
        server.wait(timeout=60)


def documented_launches() -> dict[str, dict[str, Any]]:
    """Each client's configuration in docs/assistant.md: how it starts the server."""
    text = (REPO / "docs" / "assistant.md").read_text(encoding="utf-8")
    launches = {}
    for client, body in re.findall(r"^### (.+?)\n(.*?)(?=^### |^## |\Z)", text, re.M | re.S):
        for block in re.findall(r"```json\n(.*?)```", body, re.S):
            config = json.loads(block)
            (entry,) = (config.get("mcpServers") or config["servers"]).values()
            launches[f"{client} json"] = {"command": entry["command"], "args": entry.get("args", []),
                                          "env": entry.get("env", {}), "cwd": entry.get("cwd")}
        for line in re.findall(r"^ {4}(claude mcp add .*)$", body, re.M):
            words = shlex.split(line)
            env = dict(words[i + 1].split("=", 1) for i, word in enumerate(words) if word == "--env")
            command, *args = words[words.index("--") + 1:]
            launches[f"{client} command"] = {"command": command, "args": args, "env": env, "cwd": None}
    return launches


def test_documented_client_configurations_start_the_server_from_anywhere(tmp_path, small_store):
    launches = documented_launches()
    assert {name.split()[0] for name in launches} == {"Claude", "Cursor", "VS"}
    assert len(launches) == 5 and all(launch["cwd"] is None for launch in launches.values())
    # They all start the server the same way: starting one starts each as written.
    (written,) = {json.dumps(launch, sort_keys=True) for launch in launches.values()}
    installed = Path(sys.executable).parent / "harvester-mcp"
    if not installed.exists():  # a venv installed before the entry point: the script pip writes for it
        installed = tmp_path / "harvester-mcp"
        installed.write_text(f"#!{sys.executable}\nimport sys\nfrom harvester.commands.mcp import main\n"
                             "sys.exit(main())\n")
        installed.chmod(0o755)
    written = written.replace("/path/to/harvester/.harvester/qdrant", str(small_store))
    written = written.replace("/path/to/harvester/.venv/bin/harvester-mcp", str(installed))
    assert "/path/to" not in written
    spec = json.loads(written)
    # This checkout's code, wherever the venv's editable install points.
    env = {**spec["env"], "PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=env, cwd=str(elsewhere))

    async def steps(session: ClientSession) -> Any:
        return structured(await session.call_tool("list_pages", {}))

    info, toc = anyio.run(session_run, tmp_path, steps, params)
    assert info.name == "harvester"
    assert [page["url"] for page in toc["pages"]] == ["http://docs.test/a.html", "http://docs.test/b.html"]


def test_harvester_mcp_errors_are_one_line(tmp_path, monkeypatch, capsys):
    from harvester.commands.mcp import main

    def run(*argv: str) -> tuple[Any, str]:
        with pytest.raises(SystemExit) as stopped:
            main(list(argv))
        return stopped.value.code, capsys.readouterr().err

    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "harvester.settings")
    monkeypatch.chdir(tmp_path)
    code, err = run("--store", str(tmp_path / "qdarnt"))
    assert code == 1 and err.count("\n") == 1 and f"no store at {tmp_path / 'qdarnt'}" in err

    # Without the mcp extra: what to install, and no traceback.
    monkeypatch.delitem(sys.modules, "harvester.mcp_server.server", raising=False)
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    code, err = run("--store", str(tmp_path))
    assert code == 1 and err.count("\n") == 1 and "pip install 'harvester[mcp]'" in err
    assert "Traceback" not in err
