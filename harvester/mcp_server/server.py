"""The Model Context Protocol server over a ``SearchService``: tools ``search``, ``fetch`` and
``list_sources``, on stdio (what assistants launch) or streamable HTTP on a loopback address.
Built on the official ``mcp`` SDK. Scrapy-free."""

from __future__ import annotations

import ipaddress
import threading
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from harvester.mcp_server.core import SearchService, ServiceError

INSTRUCTIONS = (
    "Searches documentation that Harvester crawled. Use `search` with a natural-language question "
    "or exact terms; cite results by their `url` and `heading_path`. Use `fetch` to read a whole "
    "page, and `list_sources` to see which sites and collections are available."
)


def loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address (the HTTP transport binds only there)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_server(service: SearchService) -> MCPServer:
    """An MCP server whose tools answer from ``service`` (one call at a time: the model and the
    embedded store are shared)."""
    server = MCPServer(name="harvester", instructions=INSTRUCTIONS)
    lock = threading.Lock()

    def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            try:
                return fn(*args, **kwargs)
            except ServiceError as exc:
                raise ToolError(str(exc)) from exc

    @server.tool(name="search", description=(
        "Search the crawled documentation. Returns the best pages, each with its best chunk (or the best "
        "chunks with group_by_page=false), with "
        "url, title, heading_path, text, and the page's author, published and modified dates when it "
        "states them. Optional filters: site (domain, e.g. docs.example.com), url_prefix, section, "
        "since and until (dates, YYYY-MM-DD or ISO 8601, on the page's published date, else its modified "
        "date; undated pages are left out), version (a docs version, e.g. 4.2; without it each site answers "
        "from its newest stable version, and each result says its version). sort='date' orders the results newest first."))
    def search_tool(query: str, k: int = 5, collection: str | None = None, site: str | None = None,
                    url_prefix: str | None = None, section: str | None = None,
                    group_by_page: bool = True, since: str | None = None, until: str | None = None,
                    sort: str = "relevance", version: str | None = None) -> list[dict[str, Any]]:
        return call(service.search, query, k, collection, site=site, url_prefix=url_prefix,
                    section=section, group_by_page=group_by_page, since=since, until=until, sort=sort,
                    version=version)

    @server.tool(name="fetch", description=(
        "A whole page by its URL: its Markdown, rebuilt from its chunks in order, and its metadata."))
    def fetch_tool(url: str, collection: str | None = None) -> dict[str, Any]:
        return call(service.fetch, url, collection)

    @server.tool(name="list_sources", description=(
        "The collections, with their sites, page and chunk counts, last crawl times and the docs versions "
        "each site holds (with the one searched by default)."))
    def list_sources_tool() -> list[dict[str, Any]]:
        return call(service.list_sources)

    return server


def serve(service: SearchService, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run the server until its client goes away (stdio) or the process is stopped (HTTP)."""
    server = build_server(service)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        if not loopback(host):
            raise ValueError(f"the HTTP transport binds only to a loopback address, not {host!r}")
        server.run("streamable-http", host=host, port=port)
    else:
        raise ValueError(f"unknown transport {transport!r}: stdio or http")
