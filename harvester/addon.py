"""HarvesterAddon: applies every default of the settings spec, wires the components in, and checks
the settings of every crawler, however it was started.

Defaults (``harvester.config.spec``) are set at "addon" priority, so ``harvester/settings.py``, the
``settings/`` overlays, spider arguments and ``-s`` all override them; call sites read settings
without defaults.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.extensions.throttle import AutoThrottle

from harvester.chunking.pipeline import ChunkingPipeline
from harvester.cluster import apply_cluster_settings
from harvester.config.checks import check_settings
from harvester.config.spec import defaults
from harvester.dedup.pipeline import AggregatePipeline, BoilerplatePipeline, DedupPipeline
from harvester.embedding.pipeline import EmbeddingPipeline
from harvester.exceptions import InvalidSettings
from harvester.extract.middleware import ExtractionMiddleware
from harvester.fetch.limits import BoundedHttpCompressionMiddleware, EncodingFixMiddleware
from harvester.fetch.retryafter import RetryAfterMiddleware
from harvester.fetch.robots import QuietRobotsTxtMiddleware
from harvester.fetch.throttle import CrawlDelayThrottle
from harvester.guard.middleware import SSRFGuardMiddleware
from harvester.index.pipeline import IndexPipeline
from harvester.proxy.middleware import ProxyModeMiddleware
from harvester.recrawl.extension import Recrawl
from harvester.recrawl.middleware import ConditionalRequestMiddleware, StoredLinksMiddleware
from harvester.render.middleware import HANDLER, RenderRequestMiddleware, render_problem
from harvester.report.extension import RunReport
from harvester.report.middleware import FailureRecorderMiddleware
from harvester.sites.middleware import SiteProfileMiddleware
from harvester.urls.middleware import CrawlTrapMiddleware, ServedUrlMiddleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

logger = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = defaults()

PIPELINES = ((DedupPipeline, 100), (AggregatePipeline, 150), (ChunkingPipeline, 200), (EmbeddingPipeline, 300),
             (IndexPipeline, 400), (BoilerplatePipeline, 250))


class HarvesterAddon:
    """Sets Harvester's defaults and registers its components. Built by Scrapy for a crawler, it
    also checks that crawler's settings: InvalidSettings names the first bad one."""

    def __init__(self, crawler: Crawler | None = None) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        """The settings Scrapy reads once per process, before any crawler: the SSRF guard's name
        resolver and the log level."""
        for name, value in defaults(process=True).items():
            settings.set(name, value, "addon")

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in DEFAULTS.items():
            settings.set(name, value, "addon")
        for pipeline, order in PIPELINES:
            settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", pipeline, order)
        # Last to see a response and the first to see its output, so every request's final outcome
        # (after retries and redirects) is recorded.
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", FailureRecorderMiddleware, 50
        )
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, None)
        # Before robots.txt (100): a site profile's User-Agent is the one its rules are matched for.
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", SiteProfileMiddleware, 90)
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", QuietRobotsTxtMiddleware, 100
        )
        # Above RetryMiddleware (550), so a host the resolver refused is not retried.
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", SSRFGuardMiddleware, 560)
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", HttpCompressionMiddleware, None)
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", BoundedHttpCompressionMiddleware, 590
        )
        # Response order runs from high to low: after decompression (590), before RetryMiddleware (550).
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", EncodingFixMiddleware, 586)
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RetryAfterMiddleware, 555)
        # Between RetryAfterMiddleware (555) and SSRFGuardMiddleware (560), below HttpProxyMiddleware
        # (750): the guard judges a request after its proxy pre-check, a fallback comes at the
        # first failure rather than after the direct retries; ProxyModeMiddleware says why.
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", ProxyModeMiddleware, 557)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", ExtractionMiddleware, 100)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", ServedUrlMiddleware, 900)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", CrawlTrapMiddleware, 700)
        # Our subclass takes AutoThrottle's place (the built-in sits in EXTENSIONS_BASE).
        settings.setdefault_in_component_priority_dict("EXTENSIONS", AutoThrottle, None)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", CrawlDelayThrottle, 0)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", RunReport, 500)
        try:
            cluster = settings.getbool("HARVESTER_CLUSTER")
        except ValueError:
            cluster = False  # check_settings names the bad value
        if cluster:
            apply_cluster_settings(settings)
        # Before RunReport: built first, so its spider_closed handler (pruning) runs first.
        settings.setdefault_in_component_priority_dict("EXTENSIONS", Recrawl, 450)
        # Past RedirectMiddleware (600) and RetryMiddleware (550): sees every request it sends.
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", ConditionalRequestMiddleware, 650
        )
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", StoredLinksMiddleware, 150)
        # Before ConditionalRequestMiddleware (650), which asks no validators of rendered pages.
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RenderRequestMiddleware, 540)
        _configure_browser(settings)
        if self._crawler is not None:
            try:
                check_settings(settings)
            except InvalidSettings as exc:
                logger.error("harvester: error: invalid setting: %s", exc)
                raise


def _configure_browser(settings: BaseSettings) -> None:
    """scrapy-playwright's handler and launch options, only when a page may be rendered and a
    browser is there (harvester.config.checks refuses ``render=always`` without one; ``auto`` warns)."""
    if settings.get("HARVESTER_RENDER") == "never" or render_problem(settings) is not None:
        return
    from harvester.render.browser import browser_args, find_browser, launch_options

    handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
    for scheme in ("http", "https"):
        handlers.setdefault(scheme, HANDLER)
    settings.set("DOWNLOAD_HANDLERS", handlers, "addon")
    timeout = settings.getint("HARVESTER_RENDER_TIMEOUT_MS")
    concurrency = settings.getint("HARVESTER_RENDER_CONCURRENCY")
    browser = find_browser(settings.get("HARVESTER_BROWSER_PATH")) or ""
    for name, value in {
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(
            browser, extra_args=browser_args(settings.get("HARVESTER_BROWSER_ARGS")), timeout_ms=timeout),
        "PLAYWRIGHT_ABORT_REQUEST": "harvester.render.handler.abort_heavy_request",
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": timeout,
        # The total is capped by the handler (HARVESTER_RENDER_CONCURRENCY); PLAYWRIGHT_MAX_CONTEXTS
        # stays unset: its slots free only when a context closes, so a cap below the number of
        # distinct contexts (one per locale/time zone/User-Agent) would stall the crawl.
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": concurrency,
    }.items():
        settings.set(name, value, "addon")
