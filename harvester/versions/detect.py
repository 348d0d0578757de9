"""Which version of versioned docs a page belongs to, and which version is the newest stable one.
Scrapy-free.

A page's version comes, in this order, from the crawl's ``-a version=``, from what the generator
wrote into the page (Docusaurus' and others' ``docsearch:version`` meta, Sphinx's inline
``DOCUMENTATION_OPTIONS``, Read the Docs' version data), from a file the generator writes beside
the pages (Sphinx's ``documentation_options.js``, mike's ``versions.json``) and from the URL
(``/en/3.2/``, ``/v2/``, ``/docs/next/``). A number wins over an alias (``stable``, ``latest``...):
an alias is resolved to the version it serves whenever the page or its files say which.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

__all__ = [
    "ALIASES", "PageVersion", "is_alias", "is_stable", "mike_aliases", "newest_stable", "options_js_url",
    "options_js_version", "page_version", "url_version", "version_key", "version_neutral_hash", "version_root",
    "versions_json_url",
]

# Names that stand for a version rather than being one. Those in UNRELEASED serve unreleased docs.
ALIASES = frozenset({"stable", "latest", "current", "dev", "next", "main", "master", "nightly", "unstable"})
UNRELEASED = frozenset({"dev", "next", "main", "master", "nightly", "unstable", "latest", "current"})
_NUMBER = re.compile(r"v?\d+(?:\.\d+){1,3}(?:\.x)?(?:[-.]?(?:a|b|rc|alpha|beta|pre|dev)\d*)?|v\d+|\d+\.x",
                     re.IGNORECASE)
_BARE = re.compile(r"\d{1,2}")
_LANG = re.compile(r"[a-z]{2}(?:[-_][a-z]{2,4})?", re.IGNORECASE)
_PRE = re.compile(r"(?:a|b|rc|alpha|beta|pre|dev)\d*$", re.IGNORECASE)
# Where a bare number or an alias may stand in a path: first, after a language or after "docs".
_BEFORE_VERSION = frozenset({"docs", "doc", "documentation", "manual", "api", "reference", "guide"})
_META = re.compile(
    r"<meta\s+[^>]*?(?:name|property)=[\"'](?:docsearch:version|readthedocs-version-slug|docs:version|version)"
    r"[\"'][^>]*>", re.IGNORECASE)
_CONTENT = re.compile(r"content=[\"']([^\"']{1,40})[\"']", re.IGNORECASE)
_OPTIONS_VERSION = re.compile(r"\bVERSION\s*:\s*[\"']([^\"']{1,40})[\"']")
_RTD_DATA = re.compile(r"READTHEDOCS_DATA\s*=\s*\{[^}]*?[\"']version[\"']\s*:\s*[\"']([^\"']{1,40})[\"']")
_OPTIONS_SCRIPT = re.compile(r"<script[^>]*\bsrc=[\"']([^\"']*documentation_options\.js)[\"']", re.IGNORECASE)
# The generator's statements are in the head or just after it; a page's text is not read.
_HEAD_CHARS = 16_384


@dataclass(frozen=True)
class PageVersion:
    """What a page says of its version: ``version`` (None when nothing does) and, for an alias that
    a file beside the page can resolve, that file's URL (``resolve_at``)."""

    version: str | None
    resolve_at: str | None = None


def is_alias(version: str) -> bool:
    return version.casefold() in ALIASES


def clean(version: str | None) -> str | None:
    """A version as stored: stripped, ``v`` kept off numbers (``v2.1`` and ``2.1`` are one version)."""
    if not version:
        return None
    text = version.strip()
    if re.fullmatch(r"[vV]\d+(?:\.\d+)*(?:\.x)?", text):
        text = text[1:]
    return text.casefold() if is_alias(text) else text or None


def pattern_version(pattern: re.Pattern[str], url: str) -> str | None:
    """What ``pattern`` finds in ``url``: its named group ``version``, else its first group, else
    the whole match (``HARVESTER_VERSION_PATTERN``'s reading, as written)."""
    found = pattern.search(url)
    if found is None:
        return None
    if "version" in found.groupdict():
        return found.group("version")
    return found.group(1) if found.groups() else found.group(0)


def url_version(url: str, pattern: re.Pattern[str] | None = None) -> str | None:
    """The version segment of ``url``'s path: ``pattern``'s (group ``version``, else group 1), else a
    version number (``3.2``, ``v2``, ``2.x``) among the first three segments, a one- or two-digit
    number or an alias (``stable``, ``next``...) first, after a language (``/en/``) or after
    ``docs``, with a page after it."""
    if pattern is not None:
        return clean(pattern_version(pattern, url))
    segments = urlsplit(url).path.split("/")[1:]  # the path starts with "/"
    at = _version_segment(segments)
    return None if at is None else clean(segments[at])


def _version_segment(segments: list[str]) -> int | None:
    for i, segment in enumerate(segments[:3]):
        if i == len(segments) - 1:  # the last segment is a page, not a folder
            break
        if _NUMBER.fullmatch(segment):
            return i
        placed = i == 0 or _LANG.fullmatch(segments[i - 1]) is not None or segments[i - 1].casefold() in _BEFORE_VERSION
        if placed and segments[i + 1] and (_BARE.fullmatch(segment) or is_alias(segment)):
            return i
    return None


def version_root(url: str) -> str | None:
    """The folder of ``url``'s version, as its links spell it (``http://h/en/4.2/`` for
    ``http://h/en/4.2/topics/db.html``), or None when its path names no version."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:]
    at = _version_segment(segments)
    if at is None:
        return None
    return f"{parts.scheme}://{parts.netloc}/" + "".join(f"{segment}/" for segment in segments[:at + 1])


def version_neutral_hash(markdown: str, root: str) -> str:
    """The identity of a versioned page's text with its own version's folder left out of its links:
    the same page in two versions links into two folders, and is still the same text."""
    return hashlib.sha256(markdown.replace(root, "\x00version/").encode("utf-8")).hexdigest()


def stated_version(html: str) -> str | None:
    """The version the generator wrote into the page's head: a version meta tag, Sphinx's inline
    ``DOCUMENTATION_OPTIONS`` or Read the Docs' ``READTHEDOCS_DATA``."""
    head = html[:_HEAD_CHARS]
    found: list[str] = []
    for tag in _META.finditer(head):
        content = _CONTENT.search(tag.group(0))
        if content:
            found.append(content.group(1))
    for regex in (_OPTIONS_VERSION, _RTD_DATA):
        match = regex.search(head)
        if match:
            found.append(match.group(1))
    versions = [v for v in (clean(text) for text in found) if v]
    return _prefer(versions)


def _prefer(versions: Iterable[str | None]) -> str | None:
    """The first number among ``versions``, else the first alias."""
    present = [v for v in versions if v]
    return next((v for v in present if not is_alias(v)), present[0] if present else None)


def options_js_url(html: str, url: str) -> str | None:
    """The URL of Sphinx's ``documentation_options.js`` the page loads, if it does."""
    match = _OPTIONS_SCRIPT.search(html[:_HEAD_CHARS])
    return urljoin(url, match.group(1)) if match else None


def versions_json_url(url: str, version: str) -> str | None:
    """Where mike writes ``versions.json``: beside the version folder ``version`` of ``url``."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    if version not in segments:
        return None
    root = "/".join(segments[:segments.index(version)]) + "/"
    return f"{parts.scheme}://{parts.netloc}{root}versions.json"


def page_version(url: str, html: str, *, declared: str | None = None,
                 pattern: re.Pattern[str] | None = None) -> PageVersion:
    """``url``'s version, from ``declared`` (``-a version=``), the page (``stated_version``) and the
    URL (``url_version``); for an alias, the file that may resolve it (Sphinx's options script, else
    mike's ``versions.json``)."""
    if declared:
        return PageVersion(clean(declared))
    in_url = url_version(url, pattern)
    stated = stated_version(html)
    # A number wins; between aliases, the URL's is the one readers see (/docs/next/ over "current").
    version = _prefer([stated if stated and not is_alias(stated) else None, in_url, stated])
    if version is None or not is_alias(version):
        return PageVersion(version)
    resolve_at = options_js_url(html, url) or (versions_json_url(url, in_url) if in_url else None)
    return PageVersion(version, resolve_at)


def options_js_version(text: str) -> str | None:
    """``VERSION`` from Sphinx's ``documentation_options.js``."""
    match = _OPTIONS_VERSION.search(text)
    return clean(match.group(1)) if match else None


def mike_aliases(text: str) -> dict[str, str]:
    """Alias -> version from mike's ``versions.json`` (``[{"version", "title", "aliases"}]``); empty
    when the text is not one."""
    try:
        entries = json.loads(text)
    except ValueError:
        return {}
    aliases: dict[str, str] = {}
    if not isinstance(entries, list):
        return aliases
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
            continue
        version = clean(entry["version"])
        for alias in entry.get("aliases") or ():
            if isinstance(alias, str) and version:
                aliases[alias.casefold()] = version
    return aliases


def is_stable(version: str) -> bool:
    """Whether ``version`` is a release: not an alias of unreleased docs, not a pre-release."""
    if version.casefold() in UNRELEASED:
        return False
    return is_alias(version) or not _PRE.search(version)


def version_key(version: str) -> tuple[int, tuple[int, ...], str]:
    """Sort key, oldest first: aliases before numbers, numbers by their parts (``3.10`` after ``3.9``)."""
    numbers = tuple(int(part) for part in re.findall(r"\d+", version.split("-", maxsplit=1)[0])[:4])
    return (0 if is_alias(version) or not numbers else 1, numbers, version)


def newest_stable(versions: Iterable[str]) -> str | None:
    """The newest released version among ``versions``: a number if any, else ``stable``; None when
    every one is unreleased (then nothing is preferred)."""
    stable = [v for v in versions if v and is_stable(v)]
    return max(stable, key=version_key) if stable else None
