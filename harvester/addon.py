"""HarvesterAddon: every Harvester default, and the components wired in, in one place.

Defaults are set at "addon" priority, so ``harvester/settings.py``, the ``settings/`` overlays,
spider arguments and ``-s`` all override them; call sites read settings without defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.extensions.throttle import AutoThrottle

from harvester import PROJECT_URL, __version__
from harvester.chunking.pipeline import ChunkingPipeline
from harvester.cluster import apply_cluster_settings
from harvester.dedup.boilerplate import BoilerplatePipeline
from harvester.dedup.pipeline import DedupPipeline
from harvester.embedding.models import DEFAULT_MODEL
from harvester.embedding.pipeline import EmbeddingPipeline
from harvester.extract.middleware import ExtractionMiddleware
from harvester.fetch.limits import BoundedHttpCompressionMiddleware, EncodingFixMiddleware
from harvester.fetch.retryafter import RetryAfterMiddleware
from harvester.fetch.robots import QuietRobotsTxtMiddleware
from harvester.fetch.throttle import CrawlDelayThrottle
from harvester.guard.middleware import SSRFGuardMiddleware
from harvester.index.pipeline import IndexPipeline
from harvester.items import EXPORTED_FIELDS
from harvester.proxy.middleware import ProxyModeMiddleware
from harvester.recrawl.extension import Recrawl
from harvester.recrawl.middleware import ConditionalRequestMiddleware, StoredLinksMiddleware
from harvester.render.middleware import HANDLER, RenderRequestMiddleware, render_problem
from harvester.report.extension import RunReport
from harvester.report.middleware import FailureRecorderMiddleware
from harvester.sites.middleware import SiteProfileMiddleware
from harvester.urls.canonical import DEFAULT_STRIP_PARAMS
from harvester.urls.middleware import CrawlTrapMiddleware, ServedUrlMiddleware
from harvester.urls.rules import DEFAULT_SKIP_PATTERNS

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DEFAULTS: dict[str, Any] = {
    # Politeness: robots.txt (and its Crawl-delay), AutoThrottle, an honest User-Agent.
    "ROBOTSTXT_OBEY": True,
    "AUTOTHROTTLE_ENABLED": True,
    "AUTOTHROTTLE_START_DELAY": 0.5,
    "AUTOTHROTTLE_TARGET_CONCURRENCY": 4.0,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "USER_AGENT": f"Harvester/{__version__} (+{PROJECT_URL})",
    "HARVESTER_CRAWL_DELAY_ENABLED": True,
    "HARVESTER_CRAWL_DELAY_MAX": 60.0,
    "DOWNLOAD_TIMEOUT": 30,
    "RETRY_TIMES": 2,
    # Nothing listens on a port unless a user asks for it.
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    # Discovery.
    "HARVESTER_SKIP_URL_PATTERNS": list(DEFAULT_SKIP_PATTERNS),
    "HARVESTER_SITE_MAX_DEPTH": 10,
    "HARVESTER_MAX_PAGES": 0,
    # One URL per page (harvester/urls/canonical.py), one copy of each content.
    "HARVESTER_URL_STRIP_PARAMS": list(DEFAULT_STRIP_PARAMS),
    "REQUEST_FINGERPRINTER_CLASS": "harvester.urls.fingerprint.CanonicalRequestFingerprinter",
    "HARVESTER_VERSION_PATTERN": None,
    "HARVESTER_VERSION_KEEP": "first",
    "HARVESTER_DEDUP_FEED_DUPLICATES": False,
    "HARVESTER_NEAR_DUPLICATE_THRESHOLD": 0.9,
    "HARVESTER_NEAR_DUPLICATE_MODE": "keep",
    "HARVESTER_NEAR_DUPLICATE_SHINGLE": 5,
    "HARVESTER_BOILERPLATE_MODE": "once",
    "HARVESTER_BOILERPLATE_SHARE": 0.3,
    "HARVESTER_BOILERPLATE_MIN_PAGES": 5,
    # Extraction.
    "HARVESTER_EXTRACTION_ENABLED": True,
    "HARVESTER_EXTRACTION_MIN_CHARS": 80,
    "HARVESTER_CONTENT_SELECTOR": None,
    "HARVESTER_CONTENT_SELECTORS": {},
    "HARVESTER_MARKDOWN_CONVERTER": "markdownify",
    "HARVESTER_LOW_QUALITY_THRESHOLD": 0.35,
    # Pipelines.
    "HARVESTER_DEDUP_ENABLED": True,
    "HARVESTER_CHUNKING_ENABLED": True,
    "HARVESTER_CHUNK_MAX_TOKENS": 0,
    "HARVESTER_CHUNK_OVERLAP_TOKENS": 32,
    "HARVESTER_EMBEDDING_ENABLED": True,
    "HARVESTER_EMBEDDING_MODEL": DEFAULT_MODEL,
    "HARVESTER_EMBEDDING_DEVICE": None,
    "HARVESTER_EMBEDDING_BACKEND": "torch",
    "HARVESTER_ONNX_CACHE_DIR": None,
    "HARVESTER_EMBEDDING_BATCH_SIZE": 64,
    "HARVESTER_EMBEDDING_CACHE_SIZE": 20000,
    "HARVESTER_EMBEDDING_THREADS": 0,
    "HARVESTER_EMBEDDING_PROCESS": False,
    "HARVESTER_INDEX_ENABLED": True,
    "HARVESTER_QDRANT_PATH": ".harvester/qdrant",
    "HARVESTER_QDRANT_COLLECTION": "harvester",
    "HARVESTER_QDRANT_BATCH_SIZE": 256,
    "QDRANT_URL": None,
    "QDRANT_API_KEY": None,
    # Safety: the SSRF guard (its resolver is set in harvester/settings.py) and resource limits.
    "HARVESTER_SSRF_GUARD_ENABLED": True,
    "HARVESTER_ALLOWED_HOSTS": [],
    "DOWNLOAD_MAXSIZE": 32 * 1024 * 1024,  # also caps decompressed bodies (HttpCompressionMiddleware)
    "DOWNLOAD_WARNSIZE": 8 * 1024 * 1024,
    "REDIRECT_MAX_TIMES": 10,
    "URLLENGTH_LIMIT": 2083,
    # The docs spider's next-page chains add one level per page, so this is only a backstop.
    "DEPTH_LIMIT": 5000,
    "HARVESTER_TRAP_DETECTION_ENABLED": True,
    "HARVESTER_TRAP_MAX_SEGMENT_REPEATS": 3,
    "HARVESTER_TRAP_MAX_DATE_VARIANTS": 50,
    "HARVESTER_TRAP_MAX_QUERY_VARIANTS": 100,
    "HARVESTER_MAX_PAGES_PER_HOST": 100000,
    "HARVESTER_RETRY_AFTER_MAX": 120.0,
    # robots.txt per RFC 9309 (harvester/fetch/robots.py).
    "HARVESTER_ROBOTSTXT_MAX_BYTES": 500 * 1024,
    "HARVESTER_ROBOTSTXT_CACHE_SECONDS": 24 * 3600,
    "HARVESTER_ROBOTSTXT_UNREACHABLE_SECONDS": 600,
    # Re-crawls: conditional requests, chunk diffs, pruning (harvester/recrawl/extension.py).
    "HARVESTER_RECRAWL_ENABLED": True,
    "HARVESTER_CONDITIONAL_REQUESTS": True,
    "HARVESTER_SITEMAP_LASTMOD_SKIP": True,
    "HARVESTER_PRUNE_ENABLED": True,
    "HARVESTER_PRUNE_DRY_RUN": False,
    # JavaScript rendering (scrapy-playwright, extra "js") and its fallback policy; per-site
    # profiles (harvester/sites) override these for their sites.
    "HARVESTER_RENDER": "auto",
    "HARVESTER_RENDER_WAIT_UNTIL": "load",
    "HARVESTER_RENDER_WAIT_FOR": None,
    "HARVESTER_RENDER_DELAY": 0.0,
    "HARVESTER_RENDER_TIMEOUT_MS": 30000,
    "HARVESTER_PROCESS_IFRAMES": False,
    "HARVESTER_BROWSER_LOCALE": None,
    "HARVESTER_BROWSER_TIMEZONE": None,
    "HARVESTER_FALLBACK_ENABLED": True,
    "HARVESTER_FALLBACK_ON_EMPTY": True,
    "HARVESTER_FALLBACK_ON_BLOCKED": False,
    "HARVESTER_SITE_PROFILES_DIR": None,
    # PDF responses become pages (harvester/extract/pdf.py), and links to .pdf files are followed.
    "HARVESTER_PDF_ENABLED": True,
    "HARVESTER_RENDER_LEARN_AFTER": 3,
    "HARVESTER_RENDER_CONCURRENCY": 4,
    "HARVESTER_BROWSER_PATH": None,
    "HARVESTER_BROWSER_ARGS": [],
    # An outbound proxy for HTTP requests and the browser: none, fallback or proxy.
    "HARVESTER_PROXY": None,
    "HARVESTER_PROXY_MODE": "none",
    # Reporting and feeds.
    "HARVESTER_REPORT_ENABLED": True,
    "HARVESTER_REPORT_DIR": ".harvester/reports",
    "FEED_EXPORT_FIELDS": EXPORTED_FIELDS,
    "FEED_EXPORT_ENCODING": "utf-8",
    # Cluster mode (harvester/cluster): a shared Redis frontier and cluster-wide politeness.
    "HARVESTER_CLUSTER": False,
    "HARVESTER_CLUSTER_CRAWL": "default",
    "HARVESTER_CLUSTER_LEASE": 30.0,
    "HARVESTER_CLUSTER_DELAY": 0.25,
    "REDIS_URL": None,
}

PIPELINES = ((DedupPipeline, 100), (ChunkingPipeline, 200), (EmbeddingPipeline, 300), (IndexPipeline, 400),
             (BoilerplatePipeline, 250))


class HarvesterAddon:
    """Sets Harvester's defaults and registers its components."""

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
            cluster = False  # harvester.config.checks.check_settings names the bad value
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
