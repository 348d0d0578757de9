"""Bench-only Scrapy extensions, enabled with ``-s EXTENSIONS=...`` by ``bench/bench_crawl.py``.

- ``CpuProbe`` (``PROBE_OUT=/path.json``): the process's CPU time when the spider opened and
  when it closed (``resource.getrusage``), so start-up (imports, settings) is told apart from the
  crawl, and every stat of the crawl, written when the spider closes. Works for any spider.
- ``MemoryProbe`` (``MEMPROBE_OUT=/path.json``, ``MEMPROBE_EVERY=50``): what holds memory. Every
  ``MEMPROBE_EVERY`` responses: the RSS, the memory tracemalloc traces (start the crawl with
  ``PYTHONTRACEMALLOC=N``) and the most common live object types (``gc.get_objects``, as
  objgraph's ``most_common_types`` does); a thread watches the RSS and, under tracemalloc, takes
  a snapshot whenever the traced memory reaches a new high; at the end the top allocation sites
  of the largest snapshot.
"""

from __future__ import annotations

import gc
import json
import linecache
import resource
import threading
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from scrapy import signals


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


class CpuProbe:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.out = crawler.settings.get("PROBE_OUT")
        self.opened = 0.0
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> CpuProbe:
        return cls(crawler)

    def _opened(self, spider: Any) -> None:
        self.opened = cpu_seconds()

    def _closed(self, spider: Any, reason: str) -> None:
        if not self.out:
            return
        stats = {k: v for k, v in self.crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
        report = {"cpu_s_at_open": round(self.opened, 3), "cpu_s_at_close": round(cpu_seconds(), 3),
                  "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "stats": stats}
        Path(self.out).write_text(json.dumps(report, indent=1, default=str))


def object_types(top: int = 25) -> list[tuple[str, int]]:
    return Counter(type(o).__name__ for o in gc.get_objects()).most_common(top)


def top_sites(snapshot: tracemalloc.Snapshot, top: int = 30) -> list[dict[str, Any]]:
    sites = []
    for stat in snapshot.statistics("traceback")[:top]:
        frames = [f"{f.filename.split('site-packages/')[-1]}:{f.lineno} {linecache.getline(f.filename, f.lineno).strip()}"
                  for f in stat.traceback[-6:]]
        sites.append({"mib": round(stat.size / 2**20, 2), "count": stat.count, "where": frames})
    return sites


class MemoryProbe:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.every = crawler.settings.getint("MEMPROBE_EVERY", 50)
        self.out = crawler.settings.get("MEMPROBE_OUT")
        self.responses = 0
        self.samples: list[dict[str, Any]] = []
        self.peak: tuple[float, tracemalloc.Snapshot | None] = (0.0, None)
        self.peak_rss = (0.0, 0)
        crawler.signals.connect(self._response, signal=signals.response_received)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)
        # A thread watches the RSS between samples: the peak comes with one large page.
        self._stop = threading.Event()
        threading.Thread(target=self._watch, name="memprobe", daemon=True).start()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            rss = rss_mib()
            if rss > self.peak_rss[0]:
                self.peak_rss = (rss, self.responses)
            if tracemalloc.is_tracing():
                current = tracemalloc.get_traced_memory()[0] / 2**20
                if current > self.peak[0] + 10:
                    self.peak = (current, tracemalloc.take_snapshot())

    @classmethod
    def from_crawler(cls, crawler: Any) -> MemoryProbe:
        return cls(crawler)

    def _response(self, **kwargs: Any) -> None:
        self.responses += 1
        if self.responses % self.every == 0:
            self._sample()

    def _sample(self) -> None:
        sample: dict[str, Any] = {"responses": self.responses, "rss_mib": round(rss_mib(), 1),
                                  "objects": object_types(12)}
        slot = getattr(getattr(getattr(self.crawler, "engine", None), "scraper", None), "slot", None)
        if slot is not None:  # responses between download and the end of their items' pipelines
            sample["scraper_active"] = len(slot.active)
            sample["scraper_active_mib"] = round(slot.active_size / 2**20, 1)
        if tracemalloc.is_tracing():
            current, _ = tracemalloc.get_traced_memory()
            sample["traced_mib"] = round(current / 2**20, 1)
            if current / 2**20 > self.peak[0]:
                self.peak = (current / 2**20, tracemalloc.take_snapshot())
        self.samples.append(sample)

    def _closed(self, spider: Any, reason: str) -> None:
        self._stop.set()
        self._sample()
        report: dict[str, Any] = {
            "samples": self.samples, "peak_rss_seen_mib": round(self.peak_rss[0], 1),
            "peak_rss_seen_at_response": self.peak_rss[1],
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
        if self.peak[1] is not None:
            report["largest_traced_mib"] = round(self.peak[0], 1)
            report["top_sites"] = top_sites(self.peak[1])
        if self.out:
            Path(self.out).write_text(json.dumps(report, indent=1))
