"""Benchmark: what learned site templates cost per page, and what they change.

For each site, every page is extracted twice, interleaved page by page so load bursts hit both
alike, best of ``--repeat`` runs of process CPU time:

  off: ``extract_page`` on the parsed page (learning off);
  on:  what the extraction middleware does with learning on: the learning scope (the profile's
       main element, else the page), the page's blocks and their hashes, the removal of the
       host's template, then ``extract_page``. The template is learned once per host, from the
       first ``--sample`` pages, and dropped when it changes none of their Markdown (as the
       middleware does); that walk over the sampled pages is timed apart ("sample walk").

Parsing is left out of both (a crawl parses once, in the spider). Sites: the three public corpora
(Debian's Flask, Requests and Scrapy docs; scored with ``../shared/eval/score.py``), again with
generator detection switched off ("no profile": the whole page is learned), and once more with the
template kept although it changes nothing (the walk on every page: the worst case for the cost),
the generated
theme sites of ``tests/fixtures/generated`` (scored against their theme-free reference bodies with
``tests/fidelity.py``), and the synthetic site of ``tests/servers/template_site.py`` (no profile, chrome
inside ``<main>``).

    .venv/bin/python bench/bench_template.py [--repeat 3] [--json-out bench/results/template.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import harvester.extract.page as page_module
from harvester.extract.page import NoContent, extract_page, parse_html, template_scope
from harvester.extract.template import TemplateLearner, page_blocks, remove_template, signature
from tests import fidelity
from tests.servers import template_site

EVAL = REPO.parent / "shared" / "eval"
GENERATED = REPO / "tests" / "fixtures" / "generated"
ROOTS = {
    "flask": Path("/usr/share/doc/python-flask-doc/html"),
    "requests": Path("/usr/share/doc/python-requests-doc/html"),
    "scrapy": Path("/usr/share/doc/python-scrapy-doc/html"),
}
BASE = "http://127.0.0.1:18300"
THEMES = ["sphinx-alabaster", "sphinx-classic", "sphinx-nature", "sphinx-agogo", "sphinx-haiku", "sphinx-pyramid",
          "sphinx-bizstyle", "sphinx-scrolls", "sphinx-sphinxdoc", "sphinx-traditional", "sphinx-custom",
          "mkdocs-mkdocs", "mkdocs-readthedocs"]
PAGES = ("index", "install", "usage", "reference")


def corpus_pages(corpus: str) -> list[tuple[str, str]]:
    truth = [json.loads(line) for line in (EVAL / "truth" / f"{corpus}.jsonl").read_text().splitlines()]
    return [(BASE + t["url"], (ROOTS[corpus] / t["file"]).read_bytes().decode("utf-8", "replace"))
            for t in truth if (ROOTS[corpus] / t["file"]).exists()]


def theme_pages(site: str) -> list[tuple[str, str]]:
    return [(BASE + ("/" if p == "index" else f"/{p}.html"), (GENERATED / "site" / site / f"{p}.html").read_text())
            for p in PAGES]


def learned_template(pages: list[tuple[str, str]], sample: int, keep: bool = False):
    """(the template as the middleware keeps it, CPU ms per sampled page of the learning walk)."""
    learner = TemplateLearner(sample)
    sampled, walk = [], 0.0
    for url, html in pages:
        if learner.template("h") is not None:
            break
        doc = parse_html(html)
        t0 = time.process_time()
        blocks = page_blocks(template_scope(doc))
        learner.observe("h", url, signature(blocks))
        walk += time.process_time() - t0
        sampled.append(blocks)
    template = learner.decide("h")
    changed = False
    for (url, html), _blocks in zip(pages, sampled):
        doc = parse_html(html)
        fresh = page_blocks(template_scope(doc))
        try:
            on = extract_page(html, url, doc=doc, template=lambda root, b=fresh: remove_template(b, template)).markdown
        except NoContent:
            on = None
        changed = changed or on != (extract_off(url, html) or None)
    learner.settle("h", changed or keep)
    return learner.template("h"), walk * 1000 / max(1, len(sampled))


def extract_off(url: str, html: str) -> str:
    try:
        return extract_page(html, url, doc=parse_html(html)).markdown
    except NoContent:
        return ""


def run(pages: list[tuple[str, str]], repeat: int, sample: int, keep: bool = False) -> dict:
    template, sample_walk = learned_template(pages, sample, keep)
    off_ms, on_ms, off_md, on_md = [], [], [], []
    for url, html in pages:
        best_off = best_on = float("inf")
        for _ in range(repeat):
            doc = parse_html(html)
            t0 = time.process_time()
            try:
                md = extract_page(html, url, doc=doc).markdown
            except NoContent:
                md = ""
            best_off = min(best_off, time.process_time() - t0)
            doc = parse_html(html)
            t0 = time.process_time()
            blocks = page_blocks(template_scope(doc)) if template else None
            try:
                md_on = extract_page(html, url, doc=doc, template=(lambda root, b=blocks: remove_template(b, template))
                                     if blocks else None).markdown
            except NoContent:
                md_on = ""
            best_on = min(best_on, time.process_time() - t0)
        off_ms.append(best_off * 1000)
        on_ms.append(best_on * 1000)
        off_md.append(md)
        on_md.append(md_on)
    return {
        "pages": len(pages), "template_active": bool(template), "sample_walk_ms": sample_walk,
        "off_ms_median": statistics.median(off_ms), "on_ms_median": statistics.median(on_ms),
        "off_ms_mean": statistics.fmean(off_ms), "on_ms_mean": statistics.fmean(on_ms),
        "cpu_ratio": sum(on_ms) / sum(off_ms), "pages_changed": sum(a != b for a, b in zip(off_md, on_md)),
        "_markdown": (off_md, on_md),
    }


def score_corpus(corpus: str, pages: list[tuple[str, str]], markdown: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        feed = Path(tmp) / "feed.jsonl"
        feed.write_text("".join(json.dumps({"url": url, "title": "", "markdown": md}) + "\n"
                                for (url, _), md in zip(pages, markdown) if md))
        out = subprocess.run([sys.executable, str(EVAL / "score.py"), corpus, str(feed)], capture_output=True,
                             text=True, check=True).stdout
    figures = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return {"recall_med": figures["content"]["recall_med"], "recall_p10": figures["content"]["recall_p10"],
            "precision_med": figures["content"]["precision_med"], "code": figures["code"]["fidelity"],
            "headings": figures["headings"]["fidelity"], "tables": figures["tables"]["fidelity"],
            "leakage": figures["leakage"]}


def score_theme(site: str, markdown: list[str]) -> dict:
    refs = fidelity.load_refs(GENERATED / "reference" / ("mkdocs" if site.startswith("mkdocs") else "sphinx"))
    html = {p: (GENERATED / "site" / site / f"{p}.html").read_text() for p in PAGES}
    figures = fidelity.score_site(dict(zip(PAGES, markdown)), html, refs)
    return {k: figures[k] for k in ("recall_med", "recall_p10", "precision_med", "code", "headings", "tables",
                                    "leakage")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sample", type=int, default=8)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    results = {}
    sites = [(c, corpus_pages(c), "corpus") for c in ROOTS if ROOTS[c].is_dir()]
    sites += [(f"{c} (no profile)", corpus_pages(c), "corpus-noprofile") for c in ROOTS if ROOTS[c].is_dir()]
    # The walk's cost on every page of large real pages: the template kept although it changes nothing.
    sites += [(f"{c} (no profile, template kept)", corpus_pages(c), "corpus-noprofile-kept")
              for c in ROOTS if ROOTS[c].is_dir()]
    sites += [(s, theme_pages(s), "theme") for s in THEMES]
    sites.append(("synthetic (tests/servers/template_site.py)", [(BASE + p, h) for p, h in template_site.pages().items()],
                  "synthetic"))
    print("| site | pages | template kept | sample walk ms/page | off ms median | on ms median | off ms mean | "
          "on ms mean | CPU on/off | pages changed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    detect = page_module.detect_profile
    for name, pages, kind in sites:
        page_module.detect_profile = (lambda view: None) if "noprofile" in kind else detect
        r = run(pages, args.repeat, args.sample, keep=kind.endswith("-kept"))
        off_md, on_md = r.pop("_markdown")
        if kind.startswith("corpus"):
            corpus = name.split()[0]
            r["fidelity_off"], r["fidelity_on"] = score_corpus(corpus, pages, off_md), score_corpus(corpus, pages, on_md)
        elif kind == "theme":
            r["fidelity_off"], r["fidelity_on"] = score_theme(name, off_md), score_theme(name, on_md)
        results[name] = r
        print(f"| {name} | {r['pages']} | {'yes' if r['template_active'] else 'no'} | {r['sample_walk_ms']:.2f} | "
              f"{r['off_ms_median']:.2f} | "
              f"{r['on_ms_median']:.2f} | {r['off_ms_mean']:.2f} | {r['on_ms_mean']:.2f} | {r['cpu_ratio']:.3f} | "
              f"{r['pages_changed']} |", flush=True)
    print()
    print("| site | off: recall med / p10, precision med, code, headings, tables, leakage | on: the same |")
    print("|---|---|---|")
    for name, r in results.items():
        if "fidelity_off" in r:
            fmt = lambda f: " / ".join("n/a" if v is None else f"{v:.3f}" for v in f.values())  # noqa: E731
            print(f"| {name} | {fmt(r['fidelity_off'])} | {fmt(r['fidelity_on'])} |")
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
