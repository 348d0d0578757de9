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

from harvester.cluster import apply_cluster_settings
from harvester.config.checks import check_settings
from harvester.config.components import setdefault_component
from harvester.config.spec import defaults
from harvester.exceptions import InvalidSettings

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = defaults()

# Harvester's components are named by import path: Scrapy imports each when it builds it, so a
# command that builds none (``scrapy list``, ``scrapy search``) and a crawl with embedding and
# the index off never import the model, Qdrant's client or the rest.
INDEX_PIPELINE = "harvester.index.pipeline.IndexPipeline"
EMBEDDING_PIPELINE = "harvester.embedding.pipeline.EmbeddingPipeline"
PIPELINES = (
    ("harvester.versions.pipeline.VersionPipeline", 50),
    ("harvester.dedup.pipeline.DedupPipeline", 100),
    ("harvester.dedup.pipeline.AggregatePipeline", 150),
    ("harvester.chunking.pipeline.ChunkingPipeline", 200),
    (EMBEDDING_PIPELINE, 300),
    (INDEX_PIPELINE, 400),
    ("harvester.dedup.pipeline.BoilerplatePipeline", 250),
)
# Pipelines left out while the setting switches them off: Scrapy imports a component to learn
# that it is off, and Qdrant's client and the process pool are costly imports.
SWITCHED_PIPELINES = {INDEX_PIPELINE: "HARVESTER_INDEX_ENABLED", EMBEDDING_PIPELINE: "HARVESTER_EMBEDDING_ENABLED"}
# Scrapy's extensions that listen on a port, off by default (harvester.config.spec), by the
# setting that switches each on.
SWITCHED_EXTENSIONS = (
    ("REMOTE_CONTROL_ENABLED", "scrapy.extensions.remote_control.RemoteControl"),
    ("TELNETCONSOLE_ENABLED", "scrapy.extensions.telnet.TelnetConsole"),
)


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
        def add(name: str, path: str, priority: int | None) -> None:
            setdefault_component(settings, name, path, priority)

        for name, value in DEFAULTS.items():
            settings.set(name, value, "addon")
        for pipeline, order in PIPELINES:
            switch = SWITCHED_PIPELINES.get(pipeline)
            if switch is not None and not _switched_on(settings, switch):
                continue
            add("ITEM_PIPELINES", pipeline, order)
        # Last to see a response and the first to see its output, so every request's final outcome
        # (after retries and redirects) is recorded.
        add("DOWNLOADER_MIDDLEWARES", "harvester.report.middleware.FailureRecorderMiddleware", 50)
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, None)
        # Before robots.txt (100): a site profile's User-Agent is the one its rules are matched for.
        add("DOWNLOADER_MIDDLEWARES", "harvester.sites.middleware.SiteProfileMiddleware", 90)
        add("DOWNLOADER_MIDDLEWARES", "harvester.fetch.robots.QuietRobotsTxtMiddleware", 100)
        # Above RetryMiddleware (550), so a host the resolver refused is not retried.
        add("DOWNLOADER_MIDDLEWARES", "harvester.guard.middleware.SSRFGuardMiddleware", 560)
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", HttpCompressionMiddleware, None)
        add("DOWNLOADER_MIDDLEWARES", "harvester.fetch.limits.BoundedHttpCompressionMiddleware", 590)
        # Response order runs from high to low: after decompression (590), before RetryMiddleware (550).
        add("DOWNLOADER_MIDDLEWARES", "harvester.fetch.encodingfix.EncodingFixMiddleware", 586)
        add("DOWNLOADER_MIDDLEWARES", "harvester.fetch.retryafter.RetryAfterMiddleware", 555)
        # Between RetryAfterMiddleware (555) and SSRFGuardMiddleware (560), below HttpProxyMiddleware
        # (750): the guard judges a request after its proxy pre-check, a fallback comes at the
        # first failure rather than after the direct retries; ProxyModeMiddleware says why.
        add("DOWNLOADER_MIDDLEWARES", "harvester.proxy.middleware.ProxyModeMiddleware", 557)
        add("SPIDER_MIDDLEWARES", "harvester.extract.middleware.ExtractionMiddleware", 100)
        add("SPIDER_MIDDLEWARES", "harvester.urls.middleware.ServedUrlMiddleware", 900)
        add("SPIDER_MIDDLEWARES", "harvester.urls.middleware.CrawlTrapMiddleware", 700)
        # Our subclass takes AutoThrottle's place (the built-in sits in EXTENSIONS_BASE).
        settings.setdefault_in_component_priority_dict("EXTENSIONS", AutoThrottle, None)
        for switch, extension in SWITCHED_EXTENSIONS:
            if not _switched_on(settings, switch):
                _drop_base_component(settings, "EXTENSIONS", extension)
        add("EXTENSIONS", "harvester.fetch.throttle.CrawlDelayThrottle", 0)
        add("EXTENSIONS", "harvester.report.extension.RunReport", 500)
        # Before the crawl's threads allocate (harvester.memory).
        add("EXTENSIONS", "harvester.memory.extension.MallocTuning", 10)
        try:
            cluster = settings.getbool("HARVESTER_CLUSTER")
        except ValueError:
            cluster = False  # check_settings names the bad value
        if cluster:
            apply_cluster_settings(settings)
        # Before RunReport: built first, so its spider_closed handler (pruning) runs first.
        add("EXTENSIONS", "harvester.recrawl.extension.Recrawl", 450)
        # Before Scrapy's FeedExporter (0): prunes before the feeds close, for the removed lines.
        add("EXTENSIONS", "harvester.recrawl.extension.EarlyPrune", -1)
        # Past RedirectMiddleware (600) and RetryMiddleware (550): sees every request it sends.
        add("DOWNLOADER_MIDDLEWARES", "harvester.recrawl.middleware.ConditionalRequestMiddleware", 650)
        # Output runs from high to low: above DepthMiddleware and ServedUrlMiddleware (900), so the
        # links it replays pass every rule a callback's links pass (traps, scope, depth, budget).
        add("SPIDER_MIDDLEWARES", "harvester.recrawl.middleware.StoredLinksMiddleware", 950)
        # Before ConditionalRequestMiddleware (650), which asks no validators of rendered pages.
        add("DOWNLOADER_MIDDLEWARES", "harvester.render.middleware.RenderRequestMiddleware", 540)
        _configure_browser(settings)
        if self._crawler is not None:
            try:
                check_settings(settings)
            except InvalidSettings as exc:
                logger.error("harvester: error: invalid setting: %s", exc)
                raise


def _drop_base_component(settings: BaseSettings, name: str, path: str) -> None:
    """Take a component that is off out of Scrapy's ``<name>_BASE``: Scrapy imports every
    component it lists to learn that it is off (the remote-control server imports aiohttp, a tenth
    of a second of every crawl's start), and every key of ``<name>`` too, even one set to None:
    leaving it out of the base is the only way to have it off without the import. Naming it in
    ``<name>`` still builds it."""
    base = settings.getdict(f"{name}_BASE")
    if base.pop(path, None) is not None:
        settings.set(f"{name}_BASE", base, settings.getpriority(f"{name}_BASE") or 0)


def _switched_on(settings: BaseSettings, name: str) -> bool:
    try:
        return settings.getbool(name)
    except ValueError:
        return True  # check_settings names the bad value


def _configure_browser(settings: BaseSettings) -> None:
    """scrapy-playwright's handler and launch options, only when a page may be rendered and a
    browser is there (harvester.config.checks refuses ``render=always`` without one; ``auto`` warns)."""
    if settings.get("HARVESTER_RENDER") == "never":
        return
    from harvester.render.middleware import HANDLER, render_problem

    if render_problem(settings) is not None:
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
