"""Crawl-trap detection: URL families that a site can generate without end.

Scrapy-free. Scrapy's own limits (``DEPTH_LIMIT``, ``URLLENGTH_LIMIT``) bound one URL or one chain,
not a site that links an endless calendar or sprouts a new query string for every click; no
well-kept library does this for Scrapy, so the few rules live here:

- repeating path segments: ``/a/b/a/b/a/b/`` or ``/img/img/img/img/`` (relative links resolved
  against a URL that the server answers for any path);
- endless calendars: URLs that differ only in dates (``/calendar/2031/07/``, ``?month=2031-07``);
- query-parameter explosions: too many distinct query strings for one path;
- a page cap per site (host and port).

Memory stays bounded: a URL family keeps at most its limit of distinct variants, and each admitted
URL costs an 8-byte digest (as Scrapy's duplicate filter keeps one fingerprint per request).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

from harvester.urls.hosts import host_key

_YEAR = re.compile(r"(?<![0-9])(1[89][0-9]{2}|2[01][0-9]{2})(?![0-9])")
_NUMBER = re.compile(r"[0-9]+")


@dataclass
class TrapLimits:
    max_segment_repeats: int = 3
    max_date_variants: int = 50
    max_query_variants: int = 100
    max_pages_per_host: int = 0  # 0 = no cap


def repeated_segment(path: str, max_repeats: int) -> str | None:
    """The path segment that occurs more than ``max_repeats`` times in ``path``, if any."""
    segments = [segment for segment in path.split("/") if segment]
    if not segments:
        return None
    segment, count = Counter(segments).most_common(1)[0]
    return segment if count > max_repeats else None


def date_template(url: str) -> str | None:
    """``url`` with its numbers replaced when it carries a year, else None: the key under which
    a calendar's days and months all fall (``/cal/2031/07/`` -> ``/cal/#/#/``)."""
    parts = urlsplit(url)
    tail = parts.path + ("?" + parts.query if parts.query else "")
    if not _YEAR.search(tail):
        return None
    return f"{host_key(url)}{_NUMBER.sub('#', tail)}"


def query_family(url: str) -> tuple[str, str] | None:
    """(host and path, normalised query) of a URL with a query string, else None."""
    parts = urlsplit(url)
    if not parts.query:
        return None
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return f"{host_key(url)}{parts.path}", query


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()


@dataclass
class TrapDetector:
    """Decides, URL by URL in crawl order, whether a new URL is a trap.

    ``check(url)`` returns the trap kind (``repeating_path``, ``calendar``, ``query_explosion``,
    ``page_cap``) or None, and records the URL when it is admitted; a URL admitted once is
    admitted again (a spider may yield it twice; the duplicate filter drops it later).
    """

    limits: TrapLimits = field(default_factory=TrapLimits)
    _dates: dict[str, set[bytes]] = field(default_factory=lambda: defaultdict(set))
    _queries: dict[str, set[bytes]] = field(default_factory=lambda: defaultdict(set))
    _pages: Counter[str] = field(default_factory=Counter)
    _admitted: set[bytes] = field(default_factory=set)

    def check(self, url: str) -> str | None:
        key = _digest(url)
        if key in self._admitted:
            return None
        parts = urlsplit(url)
        host = host_key(url)
        if repeated_segment(parts.path, self.limits.max_segment_repeats):
            return "repeating_path"
        cap = self.limits.max_pages_per_host
        if cap and self._pages[host] >= cap:
            return "page_cap"
        template = date_template(url)
        if template is not None and not self._admit(self._dates[template], url, self.limits.max_date_variants):
            return "calendar"
        family = query_family(url)
        if family is not None and not self._admit(self._queries[family[0]], family[1], self.limits.max_query_variants):
            return "query_explosion"
        self._pages[host] += 1
        self._admitted.add(key)
        return None

    @staticmethod
    def _admit(seen: set[bytes], variant: str, limit: int) -> bool:
        key = _digest(variant)
        if key in seen:
            return True
        if len(seen) >= limit:
            return False
        seen.add(key)
        return True
