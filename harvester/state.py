"""What Harvester's components share within one crawl, in one typed place.

Scrapy builds each component on its own through ``from_crawler``; the few objects several of them
must share (one site-profile table, one renderer, one browser for both schemes) hang off the crawler
here instead of as loose attributes, so that a reader sees every piece of shared state at once and
a type checker knows what each is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvester.render.handler import HarvesterPlaywrightHandler
    from harvester.render.middleware import Renderer
    from harvester.site_markdown.llms import LlmsIndex
    from harvester.sites import SiteProfiles

_ATTRIBUTE = "harvester_state"


@dataclass
class CrawlState:
    """Objects shared by Harvester's components within one crawler."""

    site_profiles: SiteProfiles | None = None
    """The site-profile table (``harvester.sites.SiteProfiles.from_crawler``)."""
    renderer: Renderer | None = None
    """The render decision-maker the extraction and render middlewares share."""
    playwright_handler: HarvesterPlaywrightHandler | None = None
    """The browser handler the http and https download handlers share, built with the first page
    to render (``harvester.render.download``): one browser, one guard proxy, one cap."""
    llms_index: LlmsIndex | None = None
    """What the ``llms.txt`` files the ``sitemap`` spider read say of each page (twin, description)."""


def crawl_state(crawler: Any) -> CrawlState:
    """The crawler's shared state, created on first use."""
    state = getattr(crawler, _ATTRIBUTE, None)
    if state is None:
        state = CrawlState()
        setattr(crawler, _ATTRIBUTE, state)
    return state
