"""The Model Context Protocol server over a ``SearchService``: tools ``search``, ``fetch``,
``list_pages`` and ``list_sources``, on stdio (what assistants launch) or streamable HTTP on a
loopback address. Built on the official ``mcp`` SDK. Scrapy-free."""

from __future__ import annotations

import ipaddress
import threading
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict, Field

from harvester.mcp_server.core import (
    FETCH_CHARS,
    LIST_LIMIT,
    MAX_FETCH_CHARS,
    MAX_K,
    MAX_LIST_LIMIT,
    MIN_FETCH_CHARS,
    SearchService,
    ServiceError,
)

INSTRUCTIONS = (
    "Searches documentation that Harvester crawled. Use `search` with a natural-language question "
    "or exact terms; cite results by their `link` (the page URL with the heading's anchor) and "
    "`heading_path`. Use `fetch` to read a page (long pages come in parts: fetch again with "
    "`next_offset`), `list_pages` for a site's table of contents and its sections, and "
    "`list_sources` to see which sites and collections are available."
)

# The parameters' schemas (descriptions and bounds), shared by the tools that take them.
Collection = Annotated[str | None, Field(
    description="The collection to use (list_sources names them); default: the server's.", max_length=200)]
Site = Annotated[str | None, Field(
    description="Only pages of this host, e.g. docs.example.com (a port or a URL on the host is accepted).",
    max_length=300)]
UrlPrefix = Annotated[str | None, Field(
    description="Only pages whose URL starts with this, e.g. https://docs.example.com/tutorial/.",
    max_length=2000)]
Section = Annotated[str | None, Field(
    description="Only pages of this section or its subsections: the start of a breadcrumb path as "
                "list_sources and list_pages show it, e.g. 'Guide > Tutorial'.", max_length=500)]
Version = Annotated[str | None, Field(
    description="A docs version, e.g. 4.2 (list_sources shows each site's); default: each site's newest "
                "stable version, and each result says its version.", max_length=100)]


def harvester_version() -> str:
    try:
        return version("harvester")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address (the HTTP transport binds only there)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def strict(tool: Tool) -> Tool:
    """``tool`` with arguments it does not know refused (a misspelt or invented parameter, such as
    ``top_k``, is an error the model can correct, not silently ignored)."""
    base = tool.fn_metadata.arg_model
    model = type(base.__name__, (base,), {"model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True)})
    tool.fn_metadata.arg_model = model
    tool.parameters = model.model_json_schema(by_alias=True)
    return tool


def build_server(service: SearchService) -> MCPServer:
    """An MCP server whose tools answer from ``service`` (one call at a time: the model and the
    embedded store are shared)."""
    lock = threading.Lock()

    def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            try:
                return fn(*args, **kwargs)
            except ServiceError as exc:
                raise ToolError(str(exc)) from exc

    def search_tool(
        query: Annotated[str, Field(description="A question in natural language, or exact terms.",
                                    min_length=1, max_length=2000)],
        k: Annotated[int, Field(description="How many results.", ge=1, le=MAX_K)] = 5,
        collection: Collection = None,
        site: Site = None,
        url_prefix: UrlPrefix = None,
        section: Section = None,
        group_by_page: Annotated[bool, Field(
            description="One result per page (its best chunk); false: the best chunks.")] = True,
        since: Annotated[str | None, Field(
            description="Only pages dated on or after this day (YYYY-MM-DD or ISO 8601): the page's "
                        "published date, else its modified date; undated pages are left out.",
            max_length=40)] = None,
        until: Annotated[str | None, Field(
            description="Only pages dated on or before this day (as since).", max_length=40)] = None,
        sort: Annotated[str, Field(description="relevance (the default) or date (newest first).",
                                   pattern="^(relevance|date)$")] = "relevance",
        version: Version = None,
    ) -> list[dict[str, Any]]:
        results = call(service.search, query, k, collection, site=site, url_prefix=url_prefix,
                       section=section, group_by_page=group_by_page, since=since, until=until, sort=sort,
                       version=version)
        if not results:
            # An empty list would reach the model as no content at all.
            return cast("Any", CallToolResult(
                content=[TextContent(type="text", text="No results: no page matches this query and these "
                                                       "filters (list_sources shows the sites and sections).")],
                structured_content={"result": []}))
        return cast("list[dict[str, Any]]", results)

    def fetch_tool(
        url: Annotated[str, Field(description="The page's URL, as search or list_pages gives it (a #fragment, "
                                              "index.html or a trailing slash is accepted).",
                                  min_length=1, max_length=2000)],
        collection: Collection = None,
        offset: Annotated[int, Field(description="Where to start in the page's Markdown: 0, or the "
                                                 "next_offset of the previous part.", ge=0)] = 0,
        max_chars: Annotated[int, Field(description="At most this many characters of Markdown in one call.",
                                        ge=MIN_FETCH_CHARS, le=MAX_FETCH_CHARS)] = FETCH_CHARS,
    ) -> dict[str, Any]:
        return cast("dict[str, Any]", call(service.fetch, url, collection, offset, max_chars))

    def list_pages_tool(
        site: Site = None,
        collection: Collection = None,
        section: Section = None,
        url_prefix: UrlPrefix = None,
        offset: Annotated[int, Field(description="Skip this many pages (the previous next_offset).", ge=0)] = 0,
        limit: Annotated[int, Field(description="At most this many pages.", ge=1, le=MAX_LIST_LIMIT)] = LIST_LIMIT,
        version: Annotated[str | None, Field(
            description="Only the pages of this docs version, e.g. 4.2 (list_sources shows each site's).",
            max_length=100)] = None,
    ) -> dict[str, Any]:
        return cast("dict[str, Any]", call(service.list_pages, site, collection, section=section,
                                         url_prefix=url_prefix, offset=offset, limit=limit, version=version))

    def list_sources_tool() -> list[dict[str, Any]]:
        sources = call(service.list_sources)
        if not sources:
            return cast("Any", CallToolResult(
                content=[TextContent(type="text", text="No collections: nothing was crawled into this store yet.")],
                structured_content={"result": []}))
        return cast("list[dict[str, Any]]", sources)

    tools = [
        Tool.from_function(search_tool, name="search", description=(
            "Search the crawled documentation. Returns the best pages, each with its best chunk (or the "
            "best chunks with group_by_page=false): url, link (the URL with the heading's #anchor, to cite), "
            "title, section (the page's breadcrumb path), heading_path, text, version, and the page's "
            "author, published and modified dates when it states them.")),
        Tool.from_function(fetch_tool, name="fetch", description=(
            "A page by its URL: its Markdown as extracted, in parts of at most max_chars characters "
            "(next_offset, when set, fetches the rest), its title and metadata.")),
        Tool.from_function(list_pages_tool, name="list_pages", description=(
            "A table of contents: the pages (url, title, section) of a site, a section or a URL prefix, "
            "by URL, with the sections they belong to; page through with offset.")),
        Tool.from_function(list_sources_tool, name="list_sources", description=(
            "The collections, with their sites, page and chunk counts, last crawl times, sections, and the "
            "docs versions each site holds (with the one searched by default).")),
    ]
    return MCPServer(name="harvester", version=harvester_version(), instructions=INSTRUCTIONS,
                     tools=[strict(tool) for tool in tools])


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
