"""Same-site iframes: which frames count, and how their content joins the page's (Scrapy-free).

Rendered pages: the browser's frames are read after the page loaded (``handler.inspect_page``),
and each same-site frame's extracted Markdown is appended under a heading with the frame's title
and URL. HTTP-fetched pages hold only the ``<iframe>`` tag, not the frame's document, so in
``auto`` a page with same-site iframes is rendered when ``process_iframes`` is on (fallback
reason ``iframes``); with ``render=never`` its frames are not read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from harvester.markdown.grammar import Line, classify_lines, heading
from harvester.meta import FRAMES

MAX_FRAMES = 20  # a page with more same-site frames is a frameset trap, not a document


@dataclass(frozen=True)
class Frame:
    url: str
    title: str
    html: str


def same_site(url: str, page_url: str) -> bool:
    """A frame is the page's own when it is served from the page's host (any port, any of
    http/https); about:blank, data: and other hosts' frames (ads, embeds, widgets) are not."""
    frame, page = urlsplit(url), urlsplit(page_url)
    return frame.scheme in ("http", "https") and bool(frame.hostname) and frame.hostname == page.hostname


def same_site_iframes(srcs: Iterable[str], page_url: str) -> list[str]:
    return [u for u in (urljoin(page_url, s) for s in srcs) if same_site(u, page_url)][:MAX_FRAMES]


def merge_frames(markdown: str, frames: Iterable[Frame], to_markdown: Callable[[Frame], str | None]) -> str:
    """The page's Markdown followed by each frame's, headed ``## <title>`` and the frame's URL."""
    parts = [markdown.rstrip()]
    for frame in frames:
        text = to_markdown(frame)
        if text and text.strip():
            parts.append(f"## {frame.title or frame.url}\n\nFrame: <{frame.url}>\n\n{demote_headings(text.strip(), 2)}")
    return "\n\n".join(p for p in parts if p) + "\n"


def demote_headings(markdown: str, levels: int) -> str:
    """ATX headings ``levels`` deeper (at most ``######``), so a frame's sections sit under its
    own heading; fenced code is left alone."""
    out = []
    for line, kind in classify_lines(markdown.split("\n")):
        if kind is Line.TEXT and heading(line):
            stripped = line.lstrip()
            hashes = len(stripped) - len(stripped.lstrip("#"))
            line = "#" * min(6, hashes + levels) + stripped[hashes:]
        out.append(line)
    return "\n".join(out)


def frames_of(meta: dict) -> list[Frame]:
    """The frames the browser read for a rendered response (``handler.inspect_page``'s result)."""
    methods = meta.get("playwright_page_methods") or {}
    method = methods.get(FRAMES) if isinstance(methods, dict) else None
    result = getattr(method, "result", None) or []
    return [Frame(url=f["url"], title=f.get("title") or "", html=f["html"]) for f in result]
