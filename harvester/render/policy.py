"""When a page goes through the browser (Scrapy-free).

Render modes (``HARVESTER_RENDER`` and a site profile's ``render``): ``never``; ``always``; ``auto``
(the default): every page is fetched over HTTP first and fetched again through the browser once,
when the fallback policy below says so. A host whose pages needed the browser ``learn_after``
times has its further pages rendered directly.

The fallback policy, per site profile: ``fallback_enabled`` is the master switch;
``fallback_on_empty`` renders app shells and pages whose extraction is empty or low quality;
``fallback_on_blocked`` renders block pages served with 2xx (a browser may pass a JavaScript
challenge). Login walls and error pages never render, nor do responses that are not 2xx
(authentication, rate limiting), transport failures and refused (SSRF) URLs: those never reach the
decision, which only sees 2xx HTML responses. A page without scripts never renders: the browser
would show the same page. Nor does a page of a static site generator whose HTML held content
(one a generator profile of ``harvester.extract.profiles`` recognised): what it shows is in its
HTML, however low its quality score (an index of links, a short page). Nor, even where it reads as
an app shell (a stub page whose sidebar outweighs its one line of text), does a page of a generator
that writes every page whole (its profile's ``writes_pages_whole``: Sphinx, MkDocs...): its scripts
add search and highlighting, never text. The
generator is known when the page's HTML held text (too little to keep, or menus only, too); a page
whose HTML held none renders whatever it claims to be (a site may empty its pages and write them
from a script), and so does an app shell of a prerendered JavaScript app (Docusaurus, VitePress,
GitBook: a route may be client-only).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harvester.extract.classify import PageType, Verdict
from harvester.extract.profiles import GeneratorProfile, profile_by_name
from harvester.urls.hosts import host_key

if TYPE_CHECKING:
    from harvester.sites import SiteProfile


def _generator_profile(generator: str | None) -> GeneratorProfile | None:
    """The generator profile called ``generator`` (a page's ``generator``), None for none."""
    if not generator:
        return None
    try:
        return profile_by_name(generator)
    except KeyError:
        return None


def is_static_generator(generator: str | None) -> bool:
    """Whether ``generator`` (a profile name such as ``sphinx-rtd``) is a static site generator: every
    registered generator profile is one, its pages complete as served, their scripts adding search,
    theme switches and highlighting, never the text."""
    return _generator_profile(generator) is not None


def is_server_rendered(generator: str | None) -> bool:
    """Whether ``generator`` writes every page whole (its profile's ``writes_pages_whole``)."""
    profile = _generator_profile(generator)
    return profile is not None and profile.writes_pages_whole


def fallback_reason(profile: SiteProfile, verdict: Verdict, *, status: int, rendered: bool,
                    low_quality: bool = False, generator: str | None = None) -> str | None:
    """Why this HTTP response should be fetched again through the browser, or None.

    ``rendered``: the response came from the browser already (one browser try per page).
    ``low_quality``: extraction kept content scored under the low-quality threshold.
    ``generator``: the extraction profile that recognised the page, if one did.
    """
    if rendered or profile.render != "auto" or not profile.fallback_enabled:
        return None
    if not 200 <= status < 300 or not verdict.has_scripts:
        return None
    if verdict.type is PageType.BLOCKED:
        return "blocked" if profile.fallback_on_blocked else None
    if not profile.fallback_on_empty or is_server_rendered(generator):
        return None
    if verdict.type in (PageType.APP_SHELL, PageType.EMPTY):
        return verdict.type.value
    if verdict.type is PageType.CONTENT and low_quality and not is_static_generator(generator):
        return "low_quality"
    return None


# Of the pages of a host fetched over HTTP, the share that must have needed the browser before the
# host goes browser-direct: a site where one page in ten is an app keeps its other nine on HTTP.
LEARN_SHARE = 0.5


@dataclass
class RenderLearner:
    """Per host: how many pages were fetched over HTTP and how many of them needed the browser
    (a render that gave content). From ``learn_after`` such pages on (0 = never learn), when they
    are at least ``LEARN_SHARE`` of the host's pages, its further pages are rendered directly."""

    learn_after: int
    _fetched: Counter[str] = field(default_factory=Counter)
    _needed: Counter[str] = field(default_factory=Counter)
    _direct: set[str] = field(default_factory=set)

    def fetched_over_http(self, url: str) -> None:
        self._fetched[host_key(url)] += 1

    def needed_browser(self, url: str) -> bool:
        """Count a page of ``url``'s host that the browser turned into content; True when this
        makes the host browser-direct."""
        host = host_key(url)
        self._needed[host] += 1
        needed = self._needed[host]
        if (self.learn_after > 0 and host not in self._direct and needed >= self.learn_after
                and needed >= LEARN_SHARE * self._fetched[host]):
            self._direct.add(host)
            return True
        return False

    def direct(self, url: str) -> bool:
        return host_key(url) in self._direct


def context_name(profile: SiteProfile) -> str:
    """One browser context per distinct locale, time zone and User-Agent: the options a context
    is created with. Pages of sites sharing them share the context (and its cap on pages)."""
    if not (profile.locale or profile.timezone_id or profile.user_agent):
        return "harvester"
    return f"harvester:{profile.locale or ''}:{profile.timezone_id or ''}:{profile.user_agent or ''}"


def context_kwargs(profile: SiteProfile) -> dict[str, object]:
    """Playwright ``new_context`` options for a profile. Service workers are blocked: a worker's
    fetches bypass page routing, and nothing a crawl reads needs one."""
    kwargs: dict[str, object] = {"service_workers": "block", "accept_downloads": False}
    if profile.locale:
        kwargs["locale"] = profile.locale
    if profile.timezone_id:
        kwargs["timezone_id"] = profile.timezone_id
    if profile.user_agent:
        kwargs["user_agent"] = profile.user_agent
    return kwargs
