"""One URL per page: canonical URLs, the key that treats ``/a/``, ``/a`` and ``/a/index.html`` as
one page, and the directory form a site actually serves, learned from its redirects. Scrapy-free.

w3lib's ``canonicalize_url`` sorts the query, drops the fragment and normalises percent-encoding;
what it leaves (default ports, tracking and session parameters, ``;jsessionid=`` path parameters)
is handled here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

from harvester.urls.hosts import host_key

# Query parameter names (matched whole, case-insensitively) that never change what a page shows:
# campaign tracking and click ids, newsletter ids, and session ids some servers put in links.
DEFAULT_STRIP_PARAMS: tuple[str, ...] = (
    r"utm_\w+", r"gclid", r"gclsrc", r"dclid", r"gbraid", r"wbraid", r"fbclid", r"msclkid", r"yclid",
    r"twclid", r"igshid", r"mc_cid", r"mc_eid", r"_ga", r"_gl", r"_hsenc", r"_hsmi", r"hsa_\w+",
    r"mkt_tok", r"oly_anon_id", r"oly_enc_id", r"vero_id", r"vero_conv", r"ref_src",
    r"jsessionid", r"phpsessid", r"sid", r"sessionid", r"session_id", r"aspsessionid\w*", r"cfid",
    r"cftoken",
)
# Session ids carried as path parameters: /page.html;jsessionid=0A1B2C
_SESSION_PATH_PARAM = re.compile(r";(jsessionid|phpsessid|sid|sessionid)=[^/?#]*", re.IGNORECASE)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_INDEX_FILES = ("index.html", "index.htm", "index.php")


def compile_strip_params(patterns: Iterable[str] | str | None) -> re.Pattern[str] | None:
    """One regex that matches a whole parameter name to strip, or None for none."""
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    patterns = [p.strip() for p in patterns or ()]
    if not patterns:
        return None
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"invalid URL parameter pattern: {exc}") from exc


DEFAULT_STRIP = compile_strip_params(DEFAULT_STRIP_PARAMS)


# A page's URL is made canonical several times over (spider, dedup, re-crawl state, fingerprint,
# feed): the recent ones are remembered.
@functools.lru_cache(maxsize=4096)
def canonical_url(url: str, strip: re.Pattern[str] | None = DEFAULT_STRIP) -> str:
    """The URL form used to recognise and store a page: lower-case scheme and host, no default
    port, no fragment, sorted query without tracking and session parameters (``strip``)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    netloc = parts.netloc.rsplit("@", 1)[-1].lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and _DEFAULT_PORTS.get(scheme) == port:
        netloc = netloc.rsplit(":", 1)[0]
    path = _SESSION_PATH_PARAM.sub("", parts.path)
    query = parts.query
    if query and strip is not None:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(name, value) for name, value in pairs if not strip.fullmatch(name)]
        if len(kept) != len(pairs):
            query = urlencode(kept)
    return canonicalize_url(urlunsplit((scheme, netloc, path, query, "")), keep_fragments=False)


def page_key(url: str, strip: re.Pattern[str] | None = DEFAULT_STRIP) -> str:
    """The key of the page at ``url``: its canonical URL with ``/index.html`` and a trailing slash
    folded away, since a site serves at most one page under those spellings."""
    canonical = canonical_url(url, strip)
    parts = urlsplit(canonical)
    return urlunsplit(parts._replace(path=_base_path(parts.path)))


def _base_path(path: str) -> str:
    for name in _INDEX_FILES:
        if path.endswith("/" + name):
            path = path[: -len(name)]
            break
    return path.rstrip("/") or "/"


def path_form(path: str) -> str | None:
    """How ``path`` names a directory page: ``slash`` (``/a/``), ``index`` (``/a/index.html``),
    ``bare`` (``/a``, no file extension), or None for a file-like path (``/a/b.html``)."""
    if path.endswith("/"):
        return "slash"
    last = path.rsplit("/", 1)[-1]
    if last in _INDEX_FILES:
        return "index"
    return "bare" if "." not in last else None


def with_form(url: str, form: str, index_file: str = "index.html") -> str:
    """``url`` spelled in directory ``form`` (see ``path_form``)."""
    parts = urlsplit(url)
    base = _base_path(parts.path).rstrip("/")
    path = {"slash": base + "/", "index": f"{base}/{index_file}", "bare": base or "/"}[form]
    return urlunsplit(parts._replace(path=path))


class ServedForms:
    """The directory spelling each host serves, learned from its redirects, so that later links are
    requested in the form the site serves (one request instead of a redirect, and the stored URL
    the site itself uses). Before a host has redirected, links are requested as written; the page
    key keeps the other spellings from being fetched again either way."""

    def __init__(self) -> None:
        self._learned: dict[tuple[str, str], tuple[str, str]] = {}

    def learn(self, requested: str, served: str) -> bool:
        """Record that ``requested`` was answered at ``served``; True if it taught a form."""
        if page_key(requested, None) != page_key(served, None):
            return False
        asked = path_form(urlsplit(requested).path)
        got_path = urlsplit(served).path
        got = path_form(got_path)
        if asked is None or got is None or asked == got:
            return False
        index_file = got_path.rsplit("/", 1)[-1] if got == "index" else "index.html"
        self._learned[(host_key(served), asked)] = (got, index_file)
        return True

    def preferred(self, url: str) -> str:
        """``url`` in the form its host was seen to serve for its spelling, else unchanged."""
        form = path_form(urlsplit(url).path)
        # A bare path may be a file served without an extension: it is never respelled.
        if form is None or form == "bare":
            return url
        learned = self._learned.get((host_key(url), form))
        return with_form(url, *learned) if learned else url

    def forms(self) -> dict[str, str]:
        """What was learned, for logs and tests: ``{"host asked": "served"}``."""
        return {f"{host} {asked}": served for (host, asked), (served, _) in self._learned.items()}
