"""Benchmark: the CPU and memory of a crawl, against stock Scrapy with trafilatura, side by side.

For each site, served on loopback, in one run: a stock Scrapy ``CrawlSpider`` + ``LinkExtractor``
+ trafilatura (``bench/stock_spider.py``, Scrapy's defaults) and Harvester's ``site`` spider
(crawl + extract + chunk, embedding and index off, everything else at its defaults), in
alternating order when repeated. The stock spider's LinkExtractor denies what Harvester never
crawls (generated indexes, source listings), so both crawl the same pages; with
``--stock-all-pages`` it also crawls every page it finds, for a second ratio. Each crawl is a
child process: its CPU time (user + sys, from ``os.wait4``), peak RSS, page faults and context
switches are its own, whatever else the machine runs. Per stage (CPU ms per
page): start-up (until the spider opened), parse, links, extraction, chunking, dedup (Harvester's
``harvester/cpu_ms/*`` stats; the stock spider's own timers) and fetch, which is the rest: the
engine, the downloader, the middlewares, the feed. The public scorer judges both feeds of the
corpora it knows (``../shared/eval``) against the extraction floors of ``tests/test_e2e_corpora.py``.
Both crawlers' Python modules are compiled to bytecode first, as an installed package's are: with
``PYTHONDONTWRITEBYTECODE`` set (as on the development machine) and no ``__pycache__``, every
Harvester crawl compiled its ~100 modules from source, 0.1 s of its start-up, where Scrapy's and
trafilatura's came compiled by pip.

    .venv/bin/python bench/bench_crawl.py [--sites flask scrapy python] [--repeats 1]
        [--stock-all-pages] [--with-model] [--memory-profile FRAMES] [--json-out FILE]

Sites: ``flask`` and ``scrapy`` through ``../shared/eval/serve.py``; ``python`` (the Python 3.11
documentation, Sphinx, 495 content pages: ``apt-get install python3-doc``) and ``django``
(``apt-get install python-django-doc``) through a static file server. ``--with-model`` adds a
crawl of the largest site with embedding and the local Qdrant index on (its peak RSS; slow on a
CPU). ``--memory-profile`` adds a crawl of it with tracemalloc (``FRAMES`` frames per allocation)
and prints what held the most memory. Results go to ``--json-out`` (default ``bench/results/crawl_cpu.json``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.crawl import scrapy_env

EVAL = REPO.parent / "shared" / "eval"
SITES: dict[str, dict[str, str]] = {
    "flask": {"corpus": "flask", "root": "/usr/share/doc/python-flask-doc/html", "apt": "python-flask-doc"},
    "scrapy": {"corpus": "scrapy", "root": "/usr/share/doc/python-scrapy-doc/html", "apt": "python-scrapy-doc"},
    "python": {"root": "/usr/share/doc/python3.11/html", "apt": "python3-doc"},
    "django": {"root": "/usr/share/doc/python-django-doc/html", "apt": "python-django-doc"},
}
STAGES = ("startup", "fetch", "parse", "links", "extraction", "chunking", "dedup")
TARGET_RATIO = 0.4
NO_EMBEDDING = {"HARVESTER_EMBEDDING_ENABLED": "0", "HARVESTER_INDEX_ENABLED": "0"}
SERVE_DIR = """
import sys, time
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from tests.servers.sitesrv import SiteServer
with SiteServer(root=Path(sys.argv[1])) as server:
    print(server.url, flush=True)
    while True:
        time.sleep(3600)
"""


class Server:
    """A site on loopback in a child process (its CPU is not the crawl's)."""

    def __init__(self, name: str) -> None:
        site = SITES[name]
        if not Path(site["root"]).is_dir():
            sys.exit(f"{site['root']} is missing: apt-get install {site['apt']}")
        if "corpus" in site:
            import socket

            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            command = [sys.executable, str(EVAL / "serve.py"), site["corpus"], "--port", str(port), "--quiet"]
            self.url = f"http://127.0.0.1:{port}/"
        else:
            command = [sys.executable, "-c", SERVE_DIR, site["root"], str(REPO)]
            self.url = ""
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if not self.url:
            self.url = self.process.stdout.readline().strip()
        self._wait_ready()

    def _wait_ready(self) -> None:
        import urllib.request

        for _ in range(100):
            try:
                urllib.request.urlopen(self.url, timeout=2).read()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the server at {self.url} did not start")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def compile_bytecode() -> None:
    """Write the bytecode of this checkout's modules (Harvester's, the bench's stock spider and
    probe), which Python reads even where ``PYTHONDONTWRITEBYTECODE`` stops it writing any."""
    import compileall

    for folder in ("harvester", "bench"):
        if not compileall.compile_dir(REPO / folder, quiet=1):
            sys.exit(f"cannot compile {REPO / folder}")


def run_child(command: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float) -> dict[str, Any]:
    """Run a crawl; its own CPU time and peak RSS (os.wait4), wall time and the load around it."""
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
    return {"exit_status": os.waitstatus_to_exitcode(status), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "user_s": round(usage.ru_utime, 2), "sys_s": round(usage.ru_stime, 2),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "wall_s": round(time.monotonic() - started, 1),
            "load_before": round(load_before, 2),
            "context_switches": {"voluntary": usage.ru_nvcsw, "involuntary": usage.ru_nivcsw},
            "page_faults": usage.ru_minflt, "load_after": round(os.getloadavg()[0], 2)}


def probe_settings(probe: Path, extensions: dict[str, int] | None = None) -> list[str]:
    extensions = {"bench.probe.CpuProbe": 0, **(extensions or {})}
    return ["-s", f"EXTENSIONS={json.dumps(extensions)}", "-s", f"PROBE_OUT={probe}"]


def crawl_stock(url: str, work: Path, timeout: float, same_pages: bool = True) -> dict[str, Any]:
    """The stock spider; ``same_pages``: its LinkExtractor denies the URLs Harvester never crawls
    (generated indexes, source listings: ``DEFAULT_SKIP_PATTERNS``), so both crawl the same pages."""
    from harvester.urls.rules import DEFAULT_SKIP_PATTERNS

    work.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(REPO)  # for bench.probe; the crawl runs outside the project
    command = [sys.executable, "-m", "scrapy", "runspider", str(REPO / "bench" / "stock_spider.py"),
               "-a", f"start={url}", "-O", str(work / "pages.jsonl"), "-s", "LOG_LEVEL=INFO",
               *probe_settings(work / "probe.json")]
    if same_pages:
        command += ["-a", f"deny={json.dumps(DEFAULT_SKIP_PATTERNS)}"]
    result = run_child(command, work, env, work / "crawl.log", timeout)
    return _figures(result, work, "stock/cpu_ms/")


def crawl_harvester(url: str, work: Path, timeout: float, settings: dict[str, str],
                    extra_env: dict[str, str] | None = None, extensions: dict[str, int] | None = None) -> dict[str, Any]:
    work.mkdir(parents=True)
    env = scrapy_env(work, **(extra_env or {}))
    env["PYTHONPATH"] = str(REPO)
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start={url}", "-O", str(work / "pages.jsonl"),
               *probe_settings(work / "probe.json", extensions)]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    result = run_child(command, REPO, env, work / "crawl.log", timeout)
    return _figures(result, work, "harvester/cpu_ms/")


def _figures(result: dict[str, Any], work: Path, prefix: str) -> dict[str, Any]:
    if result["exit_status"] != 0 or not (work / "probe.json").exists():
        tail = (work / "crawl.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"crawl failed ({result['exit_status']}) in {work}:\n{tail}")
    probe = json.loads((work / "probe.json").read_text())
    stats = probe["stats"]
    pages = int(stats.get("item_scraped_count", 0))
    stage_ms = {stage: float(stats.get(prefix + stage, 0.0)) for stage in STAGES[2:]}
    stage_ms["startup"] = probe["cpu_s_at_open"] * 1000
    # Fetch: the rest of the process's CPU (engine, downloader, middlewares, feed); the children's
    # (a browser, if one started) is in cpu_s only.
    stage_ms["fetch"] = max(0.0, probe["cpu_s_at_close"] * 1000 - sum(stage_ms.values()))
    result.update(
        pages=pages, responses=int(stats.get("downloader/response_count", 0)),
        chunks=int(stats.get("harvester/chunking/chunks", 0)),
        rendered=int(stats.get("harvester/render/fallback", 0)) + int(stats.get("harvester/render/pages", 0)),
        cpu_ms_per_page=round(result["cpu_s"] * 1000 / max(1, pages), 1),
        cpu_ms_per_page_after_start=round((result["cpu_s"] - probe["cpu_s_at_open"]) * 1000 / max(1, pages), 1),
        stage_ms_per_page={stage: round(stage_ms[stage] / max(1, pages), 1) for stage in STAGES},
        feed=str(work / "pages.jsonl"))
    return result


def score(corpus: str, feed: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(EVAL / "score.py"), corpus, feed], capture_output=True, text=True,
                          check=True, timeout=600)
    figures = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    return {"coverage": figures.get("coverage"), "recall_med": figures["content"]["recall_med"],
            "recall_p10": figures["content"]["recall_p10"], "precision_med": figures["content"]["precision_med"],
            "code": figures["code"]["fidelity"], "headings": figures["headings"]["fidelity"],
            "tables": figures["tables"]["fidelity"], "leakage": figures["leakage"]}


def floors_hold(figures: dict[str, Any]) -> bool:
    from tests.test_e2e_corpora import FLOORS, MAX_LEAKAGE

    return (all(figures[name] is None or figures[name] >= floor for name, floor in FLOORS.items())
            and figures["leakage"] is not None and figures["leakage"] <= MAX_LEAKAGE)


def bench_site(name: str, repeats: int, work: Path, timeout: float, stock_all_pages: bool = False) -> dict[str, Any]:
    server = Server(name)
    crawlers = ("stock", "harvester", "stock_all_pages") if stock_all_pages else ("stock", "harvester")
    runs: dict[str, list[dict[str, Any]]] = {crawler: [] for crawler in crawlers}
    try:
        for round_ in range(repeats):
            order = crawlers if round_ % 2 == 0 else crawlers[::-1]
            for crawler in order:
                where = work / f"{name}-{crawler}-{round_}"
                print(f"  {name}: {crawler} (round {round_ + 1})", flush=True)
                run = (crawl_harvester(server.url, where, timeout, NO_EMBEDDING) if crawler == "harvester"
                       else crawl_stock(server.url, where, timeout, same_pages=crawler == "stock"))
                runs[crawler].append(run)
    finally:
        server.close()
    result: dict[str, Any] = {"runs": runs}
    for stock, suffix in (("stock", ""), ("stock_all_pages", "_stock_all_pages")):
        if stock not in runs:
            continue
        pairs = list(zip(runs["harvester"], runs[stock]))
        ratios = sorted(h["cpu_ms_per_page"] / s["cpu_ms_per_page"] for h, s in pairs)
        after_start = sorted(h["cpu_ms_per_page_after_start"] / s["cpu_ms_per_page_after_start"] for h, s in pairs)
        result["ratio_cpu_per_page" + suffix] = round(ratios[len(ratios) // 2], 3)
        # Each round's pair, in order: on a shared machine one round's ratio can be 0.1 off another's.
        result["ratios_cpu_per_page" + suffix] = [round(h["cpu_ms_per_page"] / s["cpu_ms_per_page"], 3)
                                                  for h, s in pairs]
        result["ratio_cpu_per_page_after_start" + suffix] = round(after_start[len(after_start) // 2], 3)
    corpus = SITES[name].get("corpus")
    if corpus and (EVAL / "score.py").exists():
        result["fidelity"] = {crawler: score(corpus, runs[crawler][-1]["feed"]) for crawler in runs}
        result["floors_hold"] = floors_hold(result["fidelity"]["harvester"])
    return result


def with_model(name: str, work: Path, timeout: float) -> dict[str, Any]:
    """The whole pipeline (model in the crawler process, local Qdrant) on one site: its peak RSS."""
    server = Server(name)
    try:
        print(f"  {name}: harvester with the model", flush=True)
        run = crawl_harvester(server.url, work / f"{name}-with-model", timeout, {})
    finally:
        server.close()
    return run


def memory_profile(name: str, work: Path, timeout: float, frames: int) -> dict[str, Any]:
    server = Server(name)
    try:
        print(f"  {name}: harvester under tracemalloc ({frames} frames)", flush=True)
        out = work / f"{name}-memory" / "memory.json"
        run = crawl_harvester(server.url, out.parent, timeout, {**NO_EMBEDDING, "MEMPROBE_OUT": str(out)},
                              extra_env={"PYTHONTRACEMALLOC": str(frames)}, extensions={"bench.probe.MemoryProbe": 0})
    finally:
        server.close()
    return {"run": run, "memory": json.loads(out.read_text())}


def print_table(results: dict[str, Any]) -> None:
    header = (f"{'site':8} {'crawler':10} {'pages':>5} {'CPU s':>7} {'ms/page':>8} "
              + " ".join(f"{s:>10}" for s in STAGES) + f" {'peak RSS':>9} {'load':>5}")
    print(header)
    for name, site in results["sites"].items():
        for crawler, runs in site["runs"].items():
            for run in runs:
                stages = " ".join(f"{run['stage_ms_per_page'][s]:>10.1f}" for s in STAGES)
                print(f"{name:8} {crawler:10} {run['pages']:>5} {run['cpu_s']:>7.1f} {run['cpu_ms_per_page']:>8.1f} "
                      f"{stages} {run['peak_rss_mib']:>8.0f}M {run['load_before']:>5.1f}")
        line = (f"{name:8} Harvester/stock CPU per page: {site['ratio_cpu_per_page']} "
                f"(after start-up: {site['ratio_cpu_per_page_after_start']}; target <= {TARGET_RATIO})")
        if len(site.get("ratios_cpu_per_page", ())) > 1:
            line += f"; by round: {', '.join(map(str, site['ratios_cpu_per_page']))}"
        if "ratio_cpu_per_page_stock_all_pages" in site:
            line += f"; against stock on all its pages: {site['ratio_cpu_per_page_stock_all_pages']}"
        if "fidelity" in site:
            fid = site["fidelity"]["harvester"]
            line += (f"; fidelity floors {'hold' if site['floors_hold'] else 'MISSED'} (recall {fid['recall_med']}, "
                     f"precision {fid['precision_med']}, code {fid['code']}, headings {fid['headings']}, "
                     f"tables {fid['tables']}, leakage {fid['leakage']})")
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", nargs="+", default=["flask", "scrapy", "python"], choices=sorted(SITES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--stock-all-pages", action="store_true",
                        help="also the stock spider on every page it finds (indexes and source listings too)")
    parser.add_argument("--with-model", action="store_true", help="peak RSS of a crawl of the last site with the model")
    parser.add_argument("--model-only", action="store_true", help="with --with-model: skip the CPU runs")
    parser.add_argument("--memory-profile", type=int, metavar="FRAMES", default=0,
                        help="a crawl of the last site under tracemalloc, FRAMES frames per allocation")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--keep", type=Path, help="keep the crawls' feeds and logs in this folder")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    compile_bytecode()
    today = datetime.date.today().isoformat()
    results: dict[str, Any] = {"date": today, "cpus": os.cpu_count(), "load_at_start": os.getloadavg(),
                               "python": sys.version.split()[0], "sites": {}}
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    try:
        for name in ([] if args.model_only else args.sites):
            results["sites"][name] = bench_site(name, args.repeats, work, args.timeout, args.stock_all_pages)
        largest = args.sites[-1]
        if args.with_model:
            results["with_model"] = {largest: with_model(largest, work, args.timeout)}
        if args.memory_profile:
            results["memory_profile"] = {largest: memory_profile(largest, work, args.timeout, args.memory_profile)}
    finally:
        results["load_at_end"] = os.getloadavg()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print_table(results)
    if "with_model" in results:
        run = results["with_model"][largest]
        print(f"{largest}: with the model: {run['pages']} pages, {run['chunks']} chunks, peak RSS "
              f"{run['peak_rss_mib']:.0f} MiB, {run['wall_s']} s")
    if "memory_profile" in results:
        memory = results["memory_profile"][largest]["memory"]
        print(f"{largest}: under tracemalloc: peak RSS {memory['peak_rss_mib']} MiB, largest traced "
              f"{memory.get('largest_traced_mib')} MiB; top allocation sites:")
        for site in memory.get("top_sites", [])[:10]:
            print(f"  {site['mib']:7.2f} MiB {site['count']:>7} blocks  {site['where'][-1]}")
    out = args.json_out or REPO / "bench" / "results" / "crawl_cpu.json"
    out.write_text(json.dumps(results, indent=1, default=str))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
