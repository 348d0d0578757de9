"""Benchmark: JavaScript rendering only when needed, and the browser's memory over a long crawl.

In one run, on a generated site served on loopback where one page in ten is an app shell (its
text is written by a script; the other nine are plain HTML):
  1. ``HARVESTER_RENDER=auto`` against ``HARVESTER_RENDER=always`` on the same pages: wall time,
     pages/s, the pages the browser rendered, and the peak memory of the crawl's whole process tree
     (the crawler, Playwright's driver, every Chromium process);
  2. a rendered crawl of ``--long`` pages (default 1,000, ``always``): the same memory sampled over
     time, to show it stays bounded (first quarter against last quarter of the crawl).
Pages/s count from engine start to finish (Scrapy's ``elapsed_time_seconds``), so the
process's start-up (about as long as the short crawls on a busy machine) is left out; the browser's
launch is in. Memory is the sum over the process tree of PSS (``/proc/PID/smaps_rollup``: shared pages are split
between the processes sharing them, so Chromium's many processes are not counted many times)
and, for comparison, of RSS. Embedding and indexing are off: this measures fetching and rendering.

    .venv/bin/python bench/bench_render.py [--pages 300] [--long 1000] [--json-out F]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.crawl import NO_EMBEDDING, scrapy_env
from tests.servers.sitesrv import Route, SiteServer

BROWSER_ARGS = json.dumps(["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
PROSE = ("Harvester turns documentation into a searchable index. This paragraph gives each page "
         "enough text to be stored, with words about settings, crawling and storage. ") * 4
HTML = {"Content-Type": "text/html; charset=utf-8"}


def generated_site(pages: int) -> dict[str, Route]:
    """``/`` links every page; page ``n`` is an app shell when ``n % 10 == 0``."""
    routes = {"/": Route("<html><head><title>Index</title></head><body><main><h1>Index</h1>"
                         + "".join(f'<p><a href="/p{n}.html">Page {n}</a></p>' for n in range(pages))
                         + "</main></body></html>", 200, HTML)}
    for n in range(pages):
        body = f"<main><h1>Page {n}</h1><p>Page {n}. {PROSE}</p></main>"
        if n % 10 == 0:
            html = ('<div id="root"></div><noscript>You need to enable JavaScript.</noscript><script>'
                    f"document.getElementById('root').innerHTML = {json.dumps(body)};</script>")
        else:
            html = body
        routes[f"/p{n}.html"] = Route(f"<html><head><title>Page {n}</title></head><body>{html}</body></html>", 200, HTML)
    return routes


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def tree_memory_mib(root: int) -> tuple[float, float, int]:
    """(PSS, RSS, process count) of ``root`` and all its descendants."""
    pss = rss = 0
    pids = _tree(root)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1])
        except OSError:
            continue
    return pss / 1024, rss / 1024, len(pids)


def sampled_crawl(url: str, work: Path, settings: dict[str, str], interval: float = 0.5) -> dict[str, object]:
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"start={url}", "-O", str(work / "pages.jsonl")]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=scrapy_env(work), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    samples: list[tuple[float, float, float, int]] = []
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    while process.poll() is None:
        pss, rss, count = tree_memory_mib(process.pid)
        samples.append((time.perf_counter() - started, pss, rss, count))
        time.sleep(interval)
    wall = time.perf_counter() - started
    reader.join(10)
    text = "".join(output)
    assert process.returncode == 0, text[-3000:]
    items = [json.loads(line) for line in (work / "pages.jsonl").read_text().splitlines()]
    rendered = sum(1 for item in items if item["rendered"])
    # Scrapy's own figure: engine start to finish, without the process's start-up (imports).
    crawl_s = float(re.search(r"'elapsed_time_seconds': ([\d.]+)", text)[1])  # type: ignore[index]
    return {"wall_s": round(wall, 2), "crawl_s": round(crawl_s, 2), "pages": len(items), "rendered": rendered,
            "pages_per_s": round(len(items) / crawl_s, 2),
            "peak_pss_mib": round(max(s[1] for s in samples), 1), "peak_rss_mib": round(max(s[2] for s in samples), 1),
            "peak_processes": max(s[3] for s in samples), "samples": samples}


def quarters(samples: list[tuple[float, float, float, int]]) -> dict[str, float]:
    """Peak PSS in each quarter of the crawl's run time (the first seconds are start-up)."""
    end = samples[-1][0]
    result = {}
    for q in range(4):
        part = [s[1] for s in samples if q * end / 4 <= s[0] <= (q + 1) * end / 4]
        result[f"q{q + 1}_peak_pss_mib"] = round(max(part), 1) if part else 0.0
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--long", type=int, default=1000)
    parser.add_argument("--concurrency", default="4")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    settings = {**NO_EMBEDDING, "HARVESTER_BROWSER_ARGS": BROWSER_ARGS, "HARVESTER_RENDER_CONCURRENCY": args.concurrency,
                "AUTOTHROTTLE_ENABLED": "0", "HARVESTER_REPORT_ENABLED": "0", "LOG_LEVEL": "INFO"}
    results: dict[str, object] = {"load_average_at_start": os.getloadavg(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        with SiteServer(routes=generated_site(args.pages)) as site:
            for mode in ("auto", "always"):
                work = Path(tmp) / mode
                work.mkdir()
                run = sampled_crawl(site.url, work, {**settings, "HARVESTER_RENDER": mode})
                run.pop("samples")
                results[mode] = run
                print(mode, run, flush=True)
        auto, always = results["auto"], results["always"]
        results["auto_vs_always_pages_per_s"] = round(auto["pages_per_s"] / always["pages_per_s"], 2)  # type: ignore[index]
        results["auto_vs_always_peak_pss"] = round(auto["peak_pss_mib"] / always["peak_pss_mib"], 2)  # type: ignore[index]
        if args.long:
            with SiteServer(routes=generated_site(args.long)) as site:
                work = Path(tmp) / "long"
                work.mkdir()
                run = sampled_crawl(site.url, work, {**settings, "HARVESTER_RENDER": "always"}, interval=1.0)
                samples = run.pop("samples")
                run.update(quarters(samples))  # type: ignore[arg-type]
                run["pss_timeline_mib"] = [(round(t), round(p)) for t, p, _, _ in samples[:: max(1, len(samples) // 20)]]
                results["long_always"] = run
                print("long", run, flush=True)
    results["load_average_at_end"] = os.getloadavg()
    print(json.dumps(dict(results.items()), indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
