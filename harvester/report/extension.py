"""The run report: one summary block at the end of every crawl, in the log, the stats and a file."""

from __future__ import annotations

import json
import logging
import resource
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from harvester.items import PageChange
from harvester.signals import (
    host_refused,
    page_aggregate,
    page_aliased,
    page_failed,
    page_low_quality,
    page_near_duplicate,
    page_skipped,
)
from harvester.state import crawl_state

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class RunReport:
    """Collects what happened to every page and reports it when the spider closes.

    Settings: ``HARVESTER_REPORT_ENABLED``, ``HARVESTER_REPORT_DIR`` (a JSON report per run with
    every skipped and failed URL and its reason; empty to write none).
    Stats written: ``harvester/summary/{pages_crawled,pages_stored,pages_skipped,pages_failed,
    pages_low_quality,chunks_stored,elapsed_seconds}``, the dedup figures
    ``harvester/summary/{aliases,near_duplicates,boilerplate_chunks,embeddings_saved}`` and
    ``harvester/summary/report_file``. The report file also maps each stored page to its aliases
    (``alias_urls``) and each near duplicate to its original (``near_duplicate_urls``).
    With the Recrawl extension, the summary has a ``recrawl`` block (new, updated, unchanged,
    deleted and pruned pages, chunks embedded and reused, the pruned URLs). ``site_profiles``
    maps each host a site profile served to the profiles' names (``harvester.sites``).
    ``aggregate_pages`` counts the pages found to be aggregates of others; the report file's
    ``aggregate_urls`` maps each to the kept pages that hold its text (most first).
    ``template_removals`` maps each host whose learned template removed anything to the pages it
    cleaned and the template blocks it removed (``harvester.extract.template``).
    """

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HARVESTER_REPORT_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self._report_dir = crawler.settings.get("HARVESTER_REPORT_DIR")
        self._started = time.monotonic()
        self._skipped: dict[str, list[str]] = defaultdict(list)
        self._failed: dict[str, list[str]] = defaultdict(list)
        self._low_quality: dict[str, float] = {}
        self._aliases: dict[str, list[str]] = defaultdict(list)
        self._near_duplicates: dict[str, dict[str, Any]] = {}
        self._aggregates: dict[str, list[str]] = {}
        self._refused_hosts: dict[str, str] = {}
        self._stored = 0
        self._chunks = 0
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self._item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(self._page_skipped, signal=page_skipped)
        crawler.signals.connect(self._page_failed, signal=page_failed)
        crawler.signals.connect(self._page_low_quality, signal=page_low_quality)
        crawler.signals.connect(self._page_aliased, signal=page_aliased)
        crawler.signals.connect(self._page_near_duplicate, signal=page_near_duplicate)
        crawler.signals.connect(self._page_aggregate, signal=page_aggregate)
        crawler.signals.connect(self._host_refused, signal=host_refused)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _spider_opened(self, spider: Spider) -> None:
        self._started = time.monotonic()

    def _item_scraped(self, item: Any, **kwargs: Any) -> None:
        if isinstance(item, PageChange):
            return  # a re-crawl's feed line for a page not stored again
        self._stored += 1
        self._chunks += len(getattr(item, "chunks", None) or ())

    def _item_dropped(self, item: Any, exception: BaseException, **kwargs: Any) -> None:
        reason = _snake(type(exception).__name__)
        self._skipped[reason].append(getattr(item, "url", "?"))

    def _page_skipped(self, url: str, reason: str, **kwargs: Any) -> None:
        self._skipped[reason].append(url)

    def _page_failed(self, url: str, reason: str, **kwargs: Any) -> None:
        self._failed[reason].append(url)

    def _page_low_quality(self, url: str, quality: float, **kwargs: Any) -> None:
        self._low_quality[url] = round(quality, 3)

    def _page_aliased(self, url: str, alias: str, **kwargs: Any) -> None:
        self._aliases[url].append(alias)

    def _page_near_duplicate(self, url: str, original: str, similarity: float, **kwargs: Any) -> None:
        self._near_duplicates[url] = {"of": original, "similarity": similarity}

    def _page_aggregate(self, url: str, held_by: list[str] = (), **kwargs: Any) -> None:
        self._aggregates[url] = list(held_by)

    def _host_refused(self, host: str, reason: str, **kwargs: Any) -> None:
        self._refused_hosts[host] = reason

    def summary(self, reason: str) -> dict[str, Any]:
        """The figures of this run so far."""
        stats = self.crawler.stats
        return {
            "spider": self.crawler.spider.name,
            "finish_reason": reason,
            "pages_crawled": stats.get_value("harvester/pages/crawled", 0),
            "pages_stored": self._stored,
            "pages_skipped": sum(len(v) for v in self._skipped.values()),
            "skipped_by_reason": {k: len(v) for k, v in self._skipped.items()},
            "pages_failed": sum(len(v) for v in self._failed.values()),
            "failed_by_reason": {k: len(v) for k, v in self._failed.items()},
            "pages_low_quality": len(self._low_quality),
            "chunks_stored": self._chunks,
            **dedup_figures(stats, self._aliases, self._near_duplicates),
            "aggregate_pages": len(self._aggregates),
            "elapsed_seconds": round(time.monotonic() - self._started, 2),
            "hosts_refused": len(self._refused_hosts),
            # The crawler's peak, and the largest of its ended children's (the embedding process).
            "peak_rss_mib": _peak_rss_mib(resource.RUSAGE_SELF),
            "peak_rss_children_mib": _peak_rss_mib(resource.RUSAGE_CHILDREN),
            **self._recrawl_summary(),
            **_site_profiles(self.crawler),
            **template_removals(stats),
            **site_markdown(stats),
        }

    def _recrawl_summary(self) -> dict[str, Any]:
        from harvester.recrawl.extension import Recrawl

        recrawl = self.crawler.get_extension(Recrawl)
        return {"recrawl": recrawl.summary()} if recrawl is not None else {}

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        summary = self.summary(reason)
        report_file = self._write_report(summary)
        stats = self.crawler.stats
        for key in ("pages_crawled", "pages_stored", "pages_skipped", "pages_failed",
                    "pages_low_quality", "chunks_stored", "elapsed_seconds", *DEDUP_FIGURES):
            stats.set_value(f"harvester/summary/{key}", summary[key])
        if report_file:
            stats.set_value("harvester/summary/report_file", report_file)
        logger.info("%s", format_summary(summary, report_file))

    def _write_report(self, summary: dict[str, Any]) -> str | None:
        if not self._report_dir:
            return None
        directory = Path(self._report_dir)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        path = directory / f"{summary['spider']}-{stamp}.json"
        body = {**summary, "skipped": dict(self._skipped), "failed": dict(self._failed),
                "low_quality": self._low_quality, "alias_urls": dict(self._aliases),
                "near_duplicate_urls": self._near_duplicates, "aggregate_urls": self._aggregates,
                "refused_hosts": self._refused_hosts}
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")
        except OSError as exc:
            logger.warning("Cannot write the run report to %s: %s", path, exc)
            return None
        return str(path)


def format_summary(summary: dict[str, Any], report_file: str | None) -> str:
    """The human summary block."""
    lines = [
        "Harvester run summary",
        f"  spider:         {summary['spider']} (finished: {summary['finish_reason']})",
        f"  pages crawled:  {summary['pages_crawled']}",
        f"  pages stored:   {summary['pages_stored']}",
        f"  pages skipped:  {summary['pages_skipped']} {_by_reason(summary['skipped_by_reason'])}",
        f"  pages failed:   {summary['pages_failed']} {_by_reason(summary['failed_by_reason'])}",
        f"  low quality:    {summary.get('pages_low_quality', 0)} (stored; listed in the report)",
        f"  chunks stored:  {summary['chunks_stored']}",
        f"  elapsed:        {summary['elapsed_seconds']:.1f} s",
        (f"  peak memory:    {summary.get('peak_rss_mib', 0):.0f} MiB"
        f" (embedding process: {summary.get('peak_rss_children_mib', 0):.0f} MiB)"),
    ]
    if "aliases" in summary:
        lines.append(f"  dedup:          {summary['aliases']} aliases, {summary['near_duplicates']} near duplicates, "
                     f"{summary['boilerplate_chunks']} boilerplate chunks, "
                     f"{summary['embeddings_saved']} embeddings saved")
    if summary.get("aggregate_pages"):
        lines.append(f"  aggregates:     {summary['aggregate_pages']} pages whose text kept pages hold "
                     "(listed in the report with those pages)")
    if summary.get("hosts_refused"):
        lines.append(f"  hosts refused:  {summary['hosts_refused']} (SSRF guard; listed in the report)")
    recrawl = summary.get("recrawl")
    if recrawl:
        lines.append(
            "  re-crawl:       {new} new, {updated} updated, {unchanged_304} unchanged (304), "
            "{unchanged_hash} unchanged (same hash), {deleted} deleted, {pruned} pruned, "
            "{sitemap_lastmod_skipped} skipped by sitemap lastmod".format(**recrawl)
        )
        lines.append(
            "  chunks:         {chunks_embedded} embedded, {chunks_reused} reused".format(**recrawl)
        )
        if recrawl.get("would_prune_urls"):
            lines.append(f"  dry run:        {recrawl['would_prune']} pages would be pruned (listed in the report)")
    if summary.get("template_removals"):
        cleaned = ", ".join(f"{host}: {n['blocks']} blocks on {n['pages']} pages"
                            for host, n in sorted(summary["template_removals"].items()))
        lines.append(f"  template:       {cleaned} (learned, removed)")
    twins = summary.get("site_markdown")
    if twins:
        lines.append(f"  site Markdown:  {twins['used']} twins used, {sum(twins['rejected'].values())} rejected "
                     f"{_by_reason(twins['rejected'])}, {twins['unavailable']} unavailable")
    if summary.get("site_profiles"):
        served = ", ".join(f"{host}: {'+'.join(names)}" for host, names in sorted(summary["site_profiles"].items()))
        lines.append(f"  site profiles:  {served}")
    if report_file:
        lines.append(f"  report:         {report_file} (every skipped and failed URL)")
    return "\n".join(lines)


DEDUP_FIGURES = ("aliases", "near_duplicates", "boilerplate_chunks", "embeddings_saved")


def dedup_figures(stats: Any, aliases: dict[str, list[str]], near: dict[str, Any]) -> dict[str, int]:
    """Aliases and near duplicates seen; boilerplate chunk copies recognised; embeddings not
    computed because a boilerplate copy was left out or the embedding cache had the text."""
    return {
        "aliases": sum(len(v) for v in aliases.values()),
        "near_duplicates": len(near),
        "boilerplate_chunks": stats.get_value("harvester/boilerplate/chunks", 0),
        "embeddings_saved": stats.get_value("harvester/boilerplate/embeddings_saved", 0)
        + stats.get_value("harvester/embedding/cache_hits", 0),
    }


def template_removals(stats: Any) -> dict[str, Any]:
    """``{"template_removals": {host: {"pages": n, "blocks": n}}}`` from the extraction middleware's
    per-host stats, for the hosts whose learned template removed something."""
    hosts: dict[str, dict[str, int]] = {}
    for key, value in (stats.get_stats() or {}).items():
        for what in ("pages", "blocks"):
            prefix = f"harvester/template/{what}/"
            if key.startswith(prefix):
                hosts.setdefault(key[len(prefix):], {"pages": 0, "blocks": 0})[what] = value
    return {"template_removals": hosts} if hosts else {}


def site_markdown(stats: Any) -> dict[str, Any]:
    """``{"site_markdown": {...}}``: the pages' Markdown twins used, rejected by reason and
    unavailable (``harvester.site_markdown.middleware``), when a page had one."""
    values = stats.get_stats() or {}
    prefix = "harvester/site_markdown/rejected/"
    rejected = {key[len(prefix):]: value for key, value in values.items() if key.startswith(prefix)}
    figures = {"used": values.get("harvester/site_markdown/used", 0), "rejected": rejected,
               "unavailable": values.get("harvester/site_markdown/unavailable", 0)}
    return {"site_markdown": figures} if figures["used"] or rejected or figures["unavailable"] else {}


def _site_profiles(crawler: Any) -> dict[str, Any]:
    """``{"site_profiles": {host: [profile names]}}`` for the hosts a site profile served."""
    profiles = crawl_state(crawler).site_profiles
    if profiles is None or not profiles.served:
        return {}
    return {"site_profiles": {host: sorted(names) for host, names in profiles.served.items()}}


def _peak_rss_mib(who: int) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)  # Linux reports KiB


def _by_reason(counts: dict[str, int]) -> str:
    return "(" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + ")" if counts else ""


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
