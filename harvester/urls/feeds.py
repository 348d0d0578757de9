"""RSS and Atom feeds read as lists of pages: each entry's URL and its last modification.

RSS 2.0 (and 0.9x), RSS 1.0 (RDF) and Atom 1.0 (and 0.3), told apart by their root element. The
XML parser never expands entities, reads no DTD and opens no network or file, so an entity bomb or
an external entity costs nothing; a body over ``MAX_FEED_BYTES`` is refused before parsing and at
most ``MAX_FEED_ENTRIES`` entries are read from one document. Scrapy-free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from io import BytesIO
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from lxml import etree  # type: ignore[import-untyped]

from harvester.urls.rules import scope_prefix

MAX_FEED_BYTES = 16 * 1024 * 1024
MAX_FEED_ENTRIES = 10_000
# Where blog engines put their feeds: WordPress, Hugo, Jekyll, Ghost, Eleventy and others.
FEED_PATHS = ("feed", "feed/", "rss.xml", "atom.xml", "index.xml", "feed.xml")
FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/rdf+xml"})
# Root element (local name) -> kind of feed.
_ROOTS = {"rss": "rss", "feed": "atom", "RDF": "rdf"}
_ATOM_NAMESPACES = {None, "http://www.w3.org/2005/Atom", "http://purl.org/atom/ns#"}
_FEEDBURNER = "{http://rssnamespace.org/feedburner/ext/1.0}origLink"
# An RSS item's modification dates before its publication date (RSS has no field for it).
_RSS_DATES = ("{http://www.w3.org/2005/Atom}updated", "{http://purl.org/dc/terms/}modified", "pubDate",
              "{http://purl.org/dc/elements/1.1/}date")
_ATOM_DATES = ("updated", "modified", "published", "issued")


class FeedTooLarge(ValueError):
    """A feed body over the size limit; it is not parsed."""


@dataclass(frozen=True)
class FeedEntry:
    url: str
    lastmod: str | None  # ISO 8601, as a sitemap's ``lastmod``


@dataclass(frozen=True)
class Feed:
    kind: str  # "rss", "atom" or "rdf"
    entries: tuple[FeedEntry, ...]
    next_url: str | None  # the next page of the feed: rel=next, else WordPress's ``?paged=N+1``
    next_guessed: bool  # the next page is WordPress's guess (past the last page it answers 404)
    truncated: bool  # more than ``max_entries`` entries; the rest were not read


def _parser() -> etree.XMLParser:
    return etree.XMLParser(recover=True, resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, remove_comments=True, remove_pis=True)


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _namespace(tag: str) -> str | None:
    return tag[1:].split("}", 1)[0] if tag.startswith("{") else None


def feed_kind(body: bytes) -> str | None:
    """``rss``, ``atom`` or ``rdf`` when ``body`` is a feed document, by its root element; else None.
    Reads no further than the root's start tag."""
    head = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith(b"<"):
        return None
    try:
        events = etree.iterparse(BytesIO(body), events=("start",), recover=True, resolve_entities=False,
                                 no_network=True, load_dtd=False, huge_tree=False)
        _, root = next(events)
    except Exception:  # lxml raises several types on hostile bodies; StopIteration on empty ones
        return None
    return _root_kind(root.tag)


def _root_kind(tag: object) -> str | None:
    kind = _ROOTS.get(_local(tag))
    if kind == "atom" and _namespace(str(tag)) not in _ATOM_NAMESPACES:
        return None
    return kind


def parse_feed(body: bytes, url: str, *, max_bytes: int = MAX_FEED_BYTES,
               max_entries: int = MAX_FEED_ENTRIES) -> Feed | None:
    """The entries of the feed ``body`` fetched from ``url`` (relative links resolve against it or
    ``xml:base``), or None when it is not a feed. Raises ``FeedTooLarge`` over ``max_bytes``."""
    if len(body) > max_bytes:
        raise FeedTooLarge(f"{len(body)} bytes, over the limit of {max_bytes}")
    try:
        root = etree.fromstring(body, _parser(), base_url=url)
    except Exception:  # as in feed_kind
        return None
    if root is None:
        return None
    kind = _root_kind(root.tag)
    if kind is None:
        return None
    read: Callable[[etree._Element, str], FeedEntry | None]
    if kind == "atom":
        channel, items, read = root, root.iterchildren("{*}entry"), _atom_entry
    else:
        channel = next(root.iterchildren("{*}channel"), root)
        items, read = root.iter("{*}item"), _rss_entry
    entries: list[FeedEntry] = []
    truncated = False
    for item in items:
        if len(entries) >= max_entries:
            truncated = True
            break
        entry = read(item, url)
        if entry is not None:
            entries.append(entry)
    next_url, guessed = _next_page(channel, url, bool(entries))
    return Feed(kind, tuple(entries), next_url, guessed, truncated)


def _text(element: etree._Element | None) -> str:
    text = element.text if element is not None else None
    return text.strip() if isinstance(text, str) else ""


def _base(element: etree._Element, url: str) -> str:
    base = element.base
    return base if isinstance(base, str) and base else url


def _web_url(href: str, base: str) -> str | None:
    if not href:
        return None
    absolute = urljoin(base, href.strip())
    return absolute if urlsplit(absolute).scheme in ("http", "https") else None


def _rss_entry(item: etree._Element, url: str) -> FeedEntry | None:
    base = _base(item, url)
    link = _text(item.find(_FEEDBURNER))  # FeedBurner's <link> points at its own redirector
    for child in item.iterchildren("{*}link"):
        if link:
            break
        # RSS's <link>text</link>, or an atom:link's href
        link = _text(child) or (child.get("href", "") if child.get("rel", "alternate") == "alternate" else "")
    if not link:
        guid = item.find("{*}guid")
        if guid is not None and guid.get("isPermaLink", "true").lower() == "true":
            link = _text(guid)
    target = _web_url(link, base)
    if target is None:
        return None
    return FeedEntry(target, _first_date(item, _RSS_DATES))


def _atom_entry(entry: etree._Element, url: str) -> FeedEntry | None:
    links = [link for link in entry.iterchildren("{*}link") if link.get("href")]
    alternates = [link for link in links if link.get("rel", "alternate") == "alternate"]
    html = [link for link in alternates if link.get("type", "text/html") in ("text/html", "application/xhtml+xml")]
    chosen = (html or alternates or links or [None])[0]
    if chosen is None:
        return None
    target = _web_url(chosen.get("href", ""), _base(chosen, url))
    if target is None:
        return None
    return FeedEntry(target, _first_date(entry, tuple("{*}" + name for name in _ATOM_DATES)))


def _first_date(element: etree._Element, names: Iterable[str]) -> str | None:
    for name in names:
        for child in element.iterchildren(name):
            stamp = feed_date(_text(child))
            if stamp is not None:
                return stamp
    return None


def feed_date(text: str) -> str | None:
    """A feed's date as ISO 8601: W3C dates (Atom, Dublin Core) as given, so a bare date stays a
    bare date; RFC 822 dates (RSS ``pubDate``) converted, in UTC when the zone is unknown."""
    text = text.strip()
    if not text:
        return None
    try:
        datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        return text
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat()


def _next_page(channel: etree._Element, url: str, has_entries: bool) -> tuple[str | None, bool]:
    """RFC 5005's rel=next (Atom, and ``atom:link`` in RSS), else WordPress's ``?paged=`` while a
    page has entries."""
    for link in channel.iterchildren("{*}link"):
        if "next" in link.get("rel", "").split():
            target = _web_url(link.get("href", ""), _base(link, url))
            if target is not None and target != url:
                return target, False
    if not has_entries or not _wordpress(channel):
        return None, False
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    current = next((value for name, value in query if name == "paged"), "1")
    if not current.isdigit():
        return None, False
    query = [(name, value) for name, value in query if name != "paged"] + [("paged", str(int(current) + 1))]
    return urlunsplit(parts._replace(query=urlencode(query))), True


def _wordpress(channel: etree._Element) -> bool:
    for generator in channel.iterchildren("{*}generator"):
        if "wordpress.org" in (_text(generator) + " " + generator.get("uri", "")).lower():
            return True
    return False


def declared_feeds(links: Iterable[tuple[str, str, str]], base_url: str) -> list[str]:
    """The feeds a page declares, from its ``<link>`` elements as ``(rel, type, href)``:
    ``rel=alternate`` with an RSS or Atom type, comment feeds left out (their entries are
    comments on pages, not pages)."""
    found: list[str] = []
    for rel, kind, href in links:
        if "alternate" not in rel.lower().split() or kind.split(";")[0].strip().lower() not in FEED_TYPES:
            continue
        target = _web_url(href, base_url)
        if target is None or "comments" in urlsplit(target).path.lower().split("/"):
            continue
        if target not in found:
            found.append(target)
    return found


def guessed_feeds(start: str) -> list[str]:
    """The conventional feed locations under the start URL's path prefix."""
    parts = urlsplit(start)
    prefix = urlunsplit((parts.scheme, parts.netloc, "", "", "")) + scope_prefix(start)
    return [prefix + path for path in FEED_PATHS]
