"""Request meta keys Harvester sets and reads, and the predicates built on them.

Every component that asks "is this request a page?" asks here, so that robots.txt, sitemaps and
guessed locations are told apart from pages the same way everywhere. Scrapy-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

# Scrapy's own key, set on robots.txt requests (RobotsTxtMiddleware).
ROBOTS_TXT = "dont_obey_robotstxt"
# Not a page: robots.txt, sitemaps and sitemap indexes. Extraction leaves the response alone.
DONT_EXTRACT = "harvester_dont_extract"
# A guessed location (``/sitemap.xml``): that it is missing is no failure.
PROBE = "harvester_probe"
# The wanted links stored with a page, followed again when a re-crawl gets a 304 for it.
LINKS = "harvester_links"
# The stored page a conditional request was made for; and the 304 that answered it.
CONDITIONAL = "harvester_conditional"
UNCHANGED = "harvester_unchanged"
# Rendering: the request was judged (render or not) once; the delay before the HTML is read; why a
# page is fetched again through the browser; the HTTP result kept when the browser does worse; the
# page method that reads the frames.
RENDER_MARKED = "harvester_render_marked"
RENDER_DELAY = "harvester_render_delay"
RENDER_FALLBACK = "harvester_render_fallback"
RENDER_HTTP_ITEM = "harvester_render_http_item"
FRAMES = "harvester_frames"
# Proxies: the reason of a proxied retry (fallback mode); set once a request went through the proxy.
PROXY_FALLBACK = "harvester_proxy_fallback"
PROXIED = "_harvester_proxied"
# Cluster mode: the lease a worker holds on a popped request.
LEASE = "harvester_lease"
# A stored page fetched whole on a re-crawl only to learn its host's template from (the pages the
# re-crawl fetched whole are too few); it is not stored again, nor counted as reached.
TEMPLATE_SAMPLE = "harvester_template_sample"


class _HasMeta(Protocol):
    @property
    def meta(self) -> Mapping[str, Any]: ...


def is_page_request(request: _HasMeta) -> bool:
    """A request for a page: not robots.txt, not a sitemap, not a guessed location. A response
    answers for its request (``response.meta`` is the request's)."""
    meta = request.meta
    return not (meta.get(DONT_EXTRACT) or meta.get(PROBE) or meta.get(ROBOTS_TXT))


def is_reported_request(request: _HasMeta) -> bool:
    """A request whose failure the run report lists: pages and sitemaps, not robots.txt or a
    guessed location."""
    meta = request.meta
    return not (meta.get(ROBOTS_TXT) or meta.get(PROBE))
