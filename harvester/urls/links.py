"""Links worked out once per crawl, not once per anchor. Scrapy-free.

A documentation page links to hundreds of pages, nearly all of them the same as on the page
before: the sidebar, the breadcrumbs, the "next" link. Resolving each ``href`` against the page,
making it a safe URL, checking it against the crawl's rules and computing its page key cost more
CPU than extracting the page's content. Both answers depend on little: how a relative ``href``
resolves depends only on the directory of the page it is on (``join_key``), and whether a URL is
wanted only on the URL. So both are remembered (``BoundedCache``), and a page's links cost a
dictionary lookup each.

A page's links to other sites are not worth even that: a changelog links to thousands of distinct
issues on a code host, each resolved, escaped and checked once only to be dropped for its host.
``plain_host`` reads the host of such an absolute ``href`` off its text, so they are dropped first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Generic, NamedTuple, TypeVar
from urllib.parse import urlsplit

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Far more than the links a site repeats on every page (its navigation) and those of the pages in
# flight; a crawl's distinct links grow with its pages, and memory must not.
DEFAULT_CACHE_SIZE = 20_000


def join_key(url: str) -> str:
    """What ``urljoin(url, href)`` depends on when ``href`` is a non-empty reference that does not
    start with ``?`` or ``#``: the scheme, the authority and the path up to its last ``/``
    (``http://h/a/b.html?x#y`` -> ``http://h/a/``). Two pages of one directory resolve such an
    ``href`` alike; ``relative_to_page`` tells the ``href``s that depend on the page itself."""
    parts = urlsplit(url)
    directory = parts.path[: parts.path.rfind("/") + 1]
    return f"{parts.scheme}://{parts.netloc}{directory}"


def relative_to_page(href: str) -> bool:
    """Whether ``href`` resolves against the whole page URL (empty, a query or a fragment)."""
    return not href or href[0] in "?#"


# An absolute (or scheme-relative) http(s) href whose authority is a plain lower-case-able ASCII
# host and an optional port without leading zeros: resolving and escaping it changes nothing but
# the case of that host. Anything else (user info, IPv6, IDNA, escapes, odd ports) is not matched.
# (re.ASCII: case-insensitive [a-z] would otherwise take the Kelvin sign and the long s.)
_PLAIN_AUTHORITY = re.compile(r"(?:https?:)?//([a-z0-9.-]+(?::[1-9][0-9]{0,4})?)(?:[/?#]|\Z)",
                              re.IGNORECASE | re.ASCII)


def plain_host(href: str) -> str | None:
    """The host (and port), as ``harvester.urls.hosts.host_key`` gives it, of the URL an absolute
    http(s) ``href`` resolves to on any page, when it can be read off the text as it is; else
    None (a relative ``href``, or one whose host only resolution and escaping tell)."""
    found = _PLAIN_AUTHORITY.match(href)
    return found.group(1).lower() if found else None


def without_fragment(url: str) -> str:
    """``url`` without its ``#fragment``: every fragment of a page is the same page."""
    cut = url.find("#")
    return url if cut < 0 else url[:cut]


class BoundedCache(Generic[K, V]):
    """A memo of a pure function's answers that never holds more than ``size`` of them, in two
    generations: when the current one is full it becomes the old one (the one before is dropped),
    and an answer found in the old one moves back. What a crawl keeps asking (a site's navigation
    links) stays; what one page alone asked goes, so memory stays flat however large the crawl."""

    def __init__(self, compute: Callable[[K], V], size: int = DEFAULT_CACHE_SIZE) -> None:
        self._compute = compute
        self._generation = max(1, size // 2)
        self._answers: dict[K, V] = {}
        self._old: dict[K, V] = {}

    def __call__(self, key: K) -> V:
        answers = self._answers
        try:
            return answers[key]
        except KeyError:
            pass
        try:
            value = self._old[key]
        except KeyError:
            value = self._compute(key)
        if len(answers) >= self._generation:
            self._old, self._answers = answers, {}
        self._answers[key] = value
        return value

    def __len__(self) -> int:
        return len(self._answers) + len(self._old)


class LinkTarget(NamedTuple):
    """A wanted link: the URL it is stored under, and the key of the page it names."""

    canonical: str
    key: str
