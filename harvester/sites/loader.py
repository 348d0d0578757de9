"""Read, check and match site profile files (TOML). Scrapy-free, so it can be tested alone.

One file is one profile, named by its file stem::

    description = "Read the Docs: Sphinx pages, served as plain HTML"   # optional, for humans
    render = "never"
    content_selector = "div[role=main]"

    [match]
    domains = ["readthedocs.io", "*.readthedocs.io"]   # exact hosts, or "*." + any subdomain
    url_prefixes = ["https://example.com/docs/"]        # a URL starts with one of them
    url_patterns = ['^https://[^/]+/wiki/']             # a regex searched in the URL

The most specific match wins: a URL prefix (the longest) before a URL pattern (the longest) before
a ``host:port`` before an exact host before a wildcard (the longest). A user profile wins over a
shipped one of the same specificity, and a user file named like a shipped one replaces it.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from w3lib.url import safe_url_string

from harvester.config.spec import PROFILE_SETTINGS, SETTINGS
from harvester.urls.hosts import host_name, request_host_name
from harvester.urls.rules import compile_patterns

logger = logging.getLogger(__name__)

MATCH_KEYS = ("domains", "url_prefixes", "url_patterns")
META_KEYS = ("description",)

_HOST = re.compile(r"^(?:\*\.)?[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*\.?(?::\d{1,5})?$")

# (file, key) pairs already warned about: a key is named once per process, however often the
# profiles are loaded (the crawl command checks them, then the crawl loads them).
_warned: set[tuple[str, str]] = set()


class ProfileError(ValueError):
    """A profile file cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class SiteProfileFile:
    """One profile file: its name, where it came from, what it matches and its checked keys."""

    name: str
    path: str
    user: bool
    values: dict[str, Any]
    domains: tuple[str, ...] = ()
    url_prefixes: tuple[str, ...] = ()
    url_patterns: tuple[re.Pattern[str], ...] = field(default=())


def _check_patterns(value: Any) -> tuple[str, ...]:
    patterns = [value] if isinstance(value, str) else value
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        raise ValueError("must be a regex or a list of regexes")
    compile_patterns(patterns)
    return tuple(patterns)


def _setting_check(name: str) -> Callable[[Any], Any]:
    """A profile key read strictly (TOML types) by its setting's type in the spec."""
    value_type = SETTINGS[name].type
    return lambda value: value_type.parse(value, strict=True)


# Each whitelisted key and the check that turns a TOML value into the resolved one (or raises):
# a key that gives a setting's value per site has that setting's type.
CHECKS: dict[str, Callable[[Any], Any]] = {
    **{key: _setting_check(name) for key, name in PROFILE_SETTINGS.items()},
    "allow": _check_patterns,
    "deny": _check_patterns,
}


def parse_profile(text: str, path: str, name: str, *, user: bool) -> SiteProfileFile:
    """Check one profile file's text; ProfileError names ``path`` and the key that is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"site profile {path}: not valid TOML: {exc}") from exc
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "match" or key in META_KEYS:
            continue
        if key not in CHECKS:
            _warn_unknown(path, key)
            continue
        try:
            values[key] = CHECKS[key](value)
        except ValueError as exc:
            raise ProfileError(f"site profile {path}: {key} = {value!r} {exc}") from exc
    match = data.get("match")
    if not isinstance(match, dict):
        raise ProfileError(
            f"site profile {path}: match is missing: add a [match] table with domains, url_prefixes "
            "or url_patterns"
        )
    for key in match:
        if key not in MATCH_KEYS:
            _warn_unknown(path, f"match.{key}")
    domains = _match_list(match, "domains", path)
    prefixes = _match_list(match, "url_prefixes", path)
    patterns = _match_list(match, "url_patterns", path)
    # Requests carry IDNA hosts and escaped paths; a profile written as a user reads the site must
    # match them.
    try:
        domains = [_request_domain(domain) for domain in domains]
        prefixes = [safe_url_string(prefix) for prefix in prefixes]
    except ValueError as exc:
        raise ProfileError(f"site profile {path}: match: {exc}") from exc
    for domain in domains:
        if not _HOST.match(domain.lower()) or "*" in domain.lstrip("*"):
            raise ProfileError(f"site profile {path}: match.domains: {domain!r} is not a host name, "
                               "host:port or *.domain")
    for prefix in prefixes:
        if urlsplit(prefix).scheme not in ("http", "https") or not urlsplit(prefix).hostname:
            raise ProfileError(f"site profile {path}: match.url_prefixes: {prefix!r} must start with "
                               "http:// or https:// and a host")
    try:
        compiled = tuple(re.compile(p) for p in patterns)
    except re.error as exc:
        raise ProfileError(f"site profile {path}: match.url_patterns: invalid regex: {exc}") from exc
    if not (domains or prefixes or patterns):
        raise ProfileError(f"site profile {path}: match is empty: give domains, url_prefixes or url_patterns")
    return SiteProfileFile(name=name, path=path, user=user, values=values,
                           domains=tuple(d.lower().rstrip(".") for d in domains),
                           url_prefixes=tuple(_lower_origin(p) for p in prefixes), url_patterns=compiled)


def _request_domain(domain: str) -> str:
    """A ``match.domains`` entry (``bücher.example``, ``*.bücher.example:8080``) with its host in
    the IDNA form requests carry; anything else as written, for the check to refuse."""
    if domain.isascii():
        return domain
    wildcard = "*." if domain.startswith("*.") else ""
    host, colon, port = domain[len(wildcard):].partition(":")
    return f"{wildcard}{request_host_name(host)}{colon}{port}"


def _match_list(match: dict[str, Any], key: str, path: str) -> list[str]:
    value = match.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ProfileError(f"site profile {path}: match.{key} must be a list of non-empty strings")
    return [v.strip() for v in value]


def _warn_unknown(path: str, key: str) -> None:
    if (path, key) in _warned:
        return
    _warned.add((path, key))
    logger.warning("Site profile %s: unknown key %r ignored (known keys: %s)",
                   path, key, ", ".join(["match", *CHECKS]))


def _lower_origin(url: str) -> str:
    """The URL with its scheme and host lower-cased, as URLs are compared."""
    parts = urlsplit(url)
    netloc = parts.netloc.lower()
    return f"{parts.scheme.lower()}://{netloc}{url[len(parts.scheme) + 3 + len(parts.netloc):]}"


def load_profiles(shipped: Iterable[tuple[str, str]], user_dir: str | Path | None) -> list[SiteProfileFile]:
    """The shipped profiles (``(file name, text)`` pairs) and the ``*.toml`` files of ``user_dir``.

    A user file with the same name as a shipped one replaces it. Two profiles of the same origin
    that claim the same host or URL are an error: which one wins would be a guess.
    """
    profiles: dict[str, SiteProfileFile] = {}
    for filename, text in shipped:
        name = Path(filename).stem
        profiles[name] = parse_profile(text, f"harvester/sites/{filename}", name, user=False)
    if user_dir:
        directory = Path(user_dir).expanduser()
        if not directory.is_dir():
            raise ProfileError(f"HARVESTER_SITE_PROFILES_DIR={str(user_dir)!r} is not a directory")
        for path in sorted(directory.glob("*.toml")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ProfileError(f"site profile {path}: cannot be read: {exc}") from exc
            profiles[path.stem] = parse_profile(text, str(path), path.stem, user=True)
    _check_overlaps(profiles.values())
    return list(profiles.values())


def _check_overlaps(profiles: Iterable[SiteProfileFile]) -> None:
    claimed: dict[tuple[bool, str], str] = {}
    for profile in profiles:
        keys = [*profile.domains, *profile.url_prefixes, *(p.pattern for p in profile.url_patterns)]
        for key in keys:
            other = claimed.setdefault((profile.user, key), profile.path)
            if other != profile.path:
                raise ProfileError(f"site profile {profile.path}: match {key!r} is also claimed by {other}")


class ProfileMatcher:
    """Find the most specific profile for a URL."""

    def __init__(self, profiles: Iterable[SiteProfileFile]) -> None:
        self.profiles = list(profiles)
        self._hosts: dict[str, list[tuple[tuple[int, int, int], SiteProfileFile]]] = {}
        self._wildcards: list[tuple[str, tuple[int, int, int], SiteProfileFile]] = []
        self._urls: list[tuple[Any, tuple[int, int, int], SiteProfileFile]] = []
        for profile in self.profiles:
            origin = int(profile.user)
            for domain in profile.domains:
                if domain.startswith("*."):
                    self._wildcards.append((domain[1:], (0, len(domain), origin), profile))
                else:
                    rank = (2 if ":" in domain else 1, len(domain), origin)
                    self._hosts.setdefault(domain, []).append((rank, profile))
            for prefix in profile.url_prefixes:
                self._urls.append((prefix, (4, len(prefix), origin), profile))
            for pattern in profile.url_patterns:
                self._urls.append((pattern, (3, len(pattern.pattern), origin), profile))

    def match(self, url: str) -> SiteProfileFile | None:
        """The winning profile for ``url``, or None. Ties go to the file name that sorts first."""
        try:
            port = urlsplit(url).port
        except ValueError:
            return None
        host = host_name(url).rstrip(".")
        candidates: list[tuple[tuple[int, int, int], SiteProfileFile]] = []
        candidates += self._hosts.get(host, [])
        if port:
            candidates += self._hosts.get(f"{host}:{port}", [])
        for suffix, rank, profile in self._wildcards:
            if host.endswith(suffix) and len(host) > len(suffix):
                candidates.append((rank, profile))
        if self._urls:
            lowered = _lower_origin(url)
            for matcher, rank, profile in self._urls:
                if matcher.search(url) if isinstance(matcher, re.Pattern) else lowered.startswith(matcher):
                    candidates.append((rank, profile))
        if not candidates:
            return None
        best = max(rank for rank, _ in candidates)
        return min((p for rank, p in candidates if rank == best), key=lambda p: p.name)
