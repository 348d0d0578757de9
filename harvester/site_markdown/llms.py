"""``llms.txt`` and ``llms-full.txt`` read as page lists, and the URLs of pages' Markdown twins.
Scrapy-free.

``llms.txt`` (https://llmstxt.org/) is a Markdown file at a site's root: a title, a summary, then
sections of list items ``- [Name](url): description``. ``llms-full.txt`` holds the pages' whole
text; the generators that write it (Mintlify, the Docusaurus and VitePress plugins) put a
``Source: url`` line under each page's heading, which is all that is read of it here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from harvester.urls.rules import scope_prefix

LLMS_NAMES = ("llms.txt", "llms-full.txt")
# A list item that links a page: "- [Name](url "title"): description".
_ENTRY = re.compile(
    r"^[ \t]*[-*+][ \t]+\[(?P<title>[^\]]*)\]\(<?(?P<url>[^)\s>]+)>?(?:[ \t]+\"[^\"]*\")?\)"
    r"[ \t]*(?::[ \t]*(?P<description>.*))?$"
)
_SOURCE = re.compile(r"^(?:Source|URL):[ \t]*<?(?P<url>https?://\S+?)>?[ \t]*$", re.IGNORECASE)
MARKDOWN_SUFFIXES = (".md", ".mdx", ".markdown")
MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")


@dataclass(frozen=True)
class LlmsEntry:
    """A page an ``llms.txt`` lists: its HTML URL, the Markdown twin the file links to when it links
    one (``page.md``) instead of the page, and the file's one-line description of it."""

    url: str
    twin: str | None
    title: str
    description: str | None


def llms_sources(start: str) -> list[str]:
    """Where to look for ``llms.txt``: under the start URL's path prefix, and at the root."""
    parts = urlsplit(start)
    if is_llms_url(start):
        return [start]
    root = urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
    prefix = scope_prefix(start)
    sources = [root.rstrip("/") + prefix + "llms.txt"]
    if prefix != "/":
        sources.append(root + "llms.txt")
    return sources


def is_llms_url(url: str) -> bool:
    return urlsplit(url).path.rsplit("/", 1)[-1] in LLMS_NAMES


def parse_llms(text: str, base_url: str, max_entries: int = 50_000) -> list[LlmsEntry]:
    """The pages ``text`` (an ``llms.txt`` or ``llms-full.txt`` fetched from ``base_url``) lists,
    in order, each once (the first mention wins); links outside HTTP(S) are left out."""
    entries: list[LlmsEntry] = []
    seen: set[str] = set()
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if in_code:
            continue
        match = _ENTRY.match(line) or _SOURCE.match(line)
        if match is None:
            continue
        url = urljoin(base_url, match["url"].strip())
        if urlsplit(url).scheme not in ("http", "https"):
            continue
        url = url.split("#", 1)[0]
        html = html_url_of(url)
        page = html if html is not None else url
        if page in seen:
            continue
        seen.add(page)
        groups = match.groupdict()
        description = (groups.get("description") or "").strip() or None
        entries.append(LlmsEntry(page, url if html is not None else None, (groups.get("title") or "").strip(),
                                 description))
        if len(entries) >= max_entries:
            break
    return entries


def html_url_of(url: str) -> str | None:
    """The page a Markdown twin URL stands for (``page.md`` -> ``page``, ``page.html.md`` ->
    ``page.html``, ``page/index.md`` -> ``page/``), or None when ``url`` is not a Markdown file."""
    parts = urlsplit(url)
    path = parts.path
    suffix = next((s for s in MARKDOWN_SUFFIXES if path.lower().endswith(s)), None)
    if suffix is None:
        return None
    path = path[: -len(suffix)]
    if path.endswith("/index"):
        path = path[: -len("index")]
    if not path or path.endswith("//"):
        return None
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


_LINK_TAG = re.compile(rb"<link\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(rb"""([a-zA-Z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
_HEAD_BYTES = 64 * 1024


def announced_twin(body: bytes, base_url: str) -> str | None:
    """The URL of the Markdown twin ``body`` (an HTML page) announces with
    ``<link rel="alternate" type="text/markdown" href=...>`` in its first 64 KiB, or None."""
    head = body[:_HEAD_BYTES]
    if b"markdown" not in head:  # nearly every page: one scan, no parse
        return None
    for tag in _LINK_TAG.findall(head):
        attributes: dict[bytes, bytes] = {name.lower(): (a or b or c) for name, a, b, c in _ATTRIBUTE.findall(tag)}
        rel = attributes.get(b"rel", b"").lower().split()
        kind = attributes.get(b"type", b"").lower().split(b";")[0].strip()
        href = attributes.get(b"href", b"").strip()
        if b"alternate" in rel and kind.decode("latin-1") in MARKDOWN_TYPES and href:
            return urljoin(base_url, href.decode("utf-8", "replace")).split("#", 1)[0]
    return None


_LINK_VALUE = re.compile(r"<([^>]*)>([^,]*)")


def linked_twin(link: str | None, base_url: str) -> str | None:
    """The Markdown twin a ``Link`` response header announces (``<page.md>; rel="alternate";
    type="text/markdown"``), or None."""
    found: list[tuple[str, str]] = _LINK_VALUE.findall(link or "")
    for target, params in found:
        params = params.lower()
        if "alternate" in params and any(kind in params for kind in MARKDOWN_TYPES) and target.strip():
            return urljoin(base_url, target.strip()).split("#", 1)[0]
    return None


def negotiates(vary: str | None) -> bool:
    """Whether a response varies on ``Accept`` (its URL may be served as Markdown when asked)."""
    return "accept" in [part.strip().lower() for part in (vary or "").split(",")]


class LlmsIndex:
    """What the crawl's ``llms.txt`` files said of each page, by page key: its twin and its
    description. Filled by the ``sitemap`` spider, read by the site-Markdown middleware."""

    def __init__(self) -> None:
        self._pages: dict[str, LlmsEntry] = {}

    def add(self, key: str, entry: LlmsEntry) -> None:
        self._pages.setdefault(key, entry)

    def get(self, key: str) -> LlmsEntry | None:
        return self._pages.get(key)

    def __len__(self) -> int:
        return len(self._pages)
