"""Benchmark: extraction CPU time and fidelity, by converter (lxml, markdownify, html-to-markdown).

For each public corpus (Debian's static Flask / Requests / Scrapy docs, page
list from ``../shared/eval/truth/CORPUS.jsonl``), per page and without any
crawler:

  a. trafilatura alone (its own Markdown, tables and links on);
  b. ``extract_page`` as shipped (main element -> markdownify);
  c. ``extract_page`` with the converter swapped for
     :func:`harvester.extract.converters.html_to_markdown.convert` (monkeypatched here only);
  d. ``extract_page`` with the default converter ("lxml": markdownify's rules written straight
     from the lxml tree; the same Markdown as b);

How c swaps the converter depends on extract.py: when ``extract_page`` takes
``converter=`` (the registry of :mod:`harvester.extract.converters`), c passes
``converter="html-to-markdown"``; otherwise the name extract.py calls the
converter by (``element_to_markdown``) is monkeypatched in this process only.

CPU time is ``time.process_time``, best of ``--repeat`` runs per page, the
methods interleaved (a b c a b c ...) so that load bursts hit them alike. The
converter step alone is also timed on the very main elements ``extract_page``
prepared in (b) (captured by wrapping the converter), since that is the only
part that differs between b and c. b and c (and a, for reference) are scored
with the public scorer (``../shared/eval/score.py``).

    .venv/bin/python bench/bench_extraction.py [--corpora flask requests scrapy] [--repeat 3]
                                              [--out-dir DIR] [--no-trafilatura]
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import gzip
import inspect
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import harvester.extract.page as extract_mod
from harvester.extract.page import NoContent, extract_page

EVAL = REPO.parent / "shared" / "eval"
ROOTS = {
    "flask": Path("/usr/share/doc/python-flask-doc/html"),
    "requests": Path("/usr/share/doc/python-requests-doc/html"),
    "scrapy": Path("/usr/share/doc/python-scrapy-doc/html"),
}
BASE_URL = "http://127.0.0.1:18300"
# Without a converter registry: the name extract.py calls the main-element
# converter by (``md = element_to_markdown(main)`` in extract_page).
CONVERTER_NAME = "element_to_markdown"
HAS_REGISTRY = "converter" in inspect.signature(extract_page).parameters
CAPTURE = "bench-capture"


# --------------------------------------------------------------------------
# Pages
# --------------------------------------------------------------------------

def load_pages(corpus: str) -> list[dict]:
    root = ROOTS[corpus]
    truth = EVAL / "truth" / f"{corpus}.jsonl"
    pages = []
    with truth.open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            path = root / rec["file"]
            if path.exists():
                raw = path.read_bytes()
            elif path.with_name(path.name + ".gz").exists():
                with gzip.open(path.with_name(path.name + ".gz")) as gz:
                    raw = gz.read()
            else:
                print(f"  ! {corpus}: {rec['file']} missing, skipped", file=sys.stderr)
                continue
            pages.append({"path": rec["url"], "url": BASE_URL + rec["url"],
                          "html": raw.decode("utf-8", "replace")})
    return pages


# --------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------

def run_trafilatura(page: dict) -> tuple[str, str]:
    import trafilatura
    md = trafilatura.extract(page["html"], output_format="markdown", include_tables=True,
                             include_links=True, url=page["url"])
    return "", md or ""


def extractor(conv: str | None):
    """extract_page with converter ``conv`` (a registry name; None = default)."""
    kwargs = {"converter": conv} if HAS_REGISTRY and conv else {}

    def run(page: dict) -> tuple[str, str]:
        try:
            res = extract_page(page["html"], page["url"], **kwargs)
        except NoContent:
            return "", ""
        return res.title, res.markdown
    return run


@contextlib.contextmanager
def patched(fn):
    """Without a registry: swap the converter extract.py calls for ``fn``."""
    if fn is None or HAS_REGISTRY:
        yield
        return
    if not hasattr(extract_mod, CONVERTER_NAME):
        raise SystemExit(f"harvester.extract.page has neither a converter registry nor "
                         f"{CONVERTER_NAME!r}: update bench/bench_extraction.py to the way "
                         "extract_page calls the converter now")
    orig = getattr(extract_mod, CONVERTER_NAME)
    setattr(extract_mod, CONVERTER_NAME, fn)
    try:
        yield
    finally:
        setattr(extract_mod, CONVERTER_NAME, orig)


def markdownify_converter():
    if HAS_REGISTRY:
        from harvester.extract.converters import get_converter
        return get_converter("markdownify")
    return getattr(extract_mod, CONVERTER_NAME)


def get_tree_converter():
    """The default "lxml" converter, where this checkout has it."""
    if not HAS_REGISTRY:
        return None
    from harvester.extract.converters import available_converters, get_converter
    return get_converter("lxml") if "lxml" in available_converters() else None


def best_cpu(fn, arg, repeat: int):
    """(best process CPU seconds of ``repeat`` calls, last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn(arg)
        best = min(best, time.process_time() - t0)
    return best, out


def pctl(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    vals = sorted(values)
    k = (len(vals) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


# --------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------

def write_jsonl(path: Path, pages: list[dict], results: list[tuple[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for page, (title, md) in zip(pages, results):
            fh.write(json.dumps({"url": page["url"], "title": title, "markdown": md},
                                ensure_ascii=False) + "\n")


def score(corpus: str, feed: Path) -> subprocess.Popen:
    res = feed.with_suffix(".res.json")
    details = feed.with_suffix(".pages.jsonl")
    return subprocess.Popen(
        [sys.executable, str(EVAL / "score.py"), corpus, str(feed), "--json-out", str(res),
         "--details", str(details)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def read_score(feed: Path) -> dict:
    res = json.loads(feed.with_suffix(".res.json").read_text(encoding="utf-8"))
    c = res["content"]
    return {"recall_med": c["recall_med"], "precision_med": c["precision_med"],
            "code": res["code"]["fidelity"], "headings": res["headings"]["fidelity"],
            "tables": res["tables"]["fidelity"], "leakage": res["leakage"],
            "code_text": res["code"]["text_present"], "level_exact": res["headings"]["level_exact"],
            "cells": res["tables"]["mean_cell_recall"], "recall_micro": c["recall_micro"],
            "precision_micro": c["precision_micro"]}


def per_page(feed: Path) -> dict[str, dict]:
    out = {}
    with feed.with_suffix(".pages.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if "url" in d and "recall" in d:
                out[d["url"]] = d
    return out


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def fmt(v, digits=3) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.{digits}f}"
    return str(v)


def table(corpus: str, n: int, rows: list[tuple[str, list[float], dict | None]]) -> str:
    head = ("| method | CPU ms med | CPU ms p90 | recall med | precision med | code | headings "
            "| tables | leakage |")
    lines = [f"### {corpus} ({n} pages)", "", head, "|" + "---|" * 9]
    for name, times, sc in rows:
        ms = [t * 1000 for t in times]
        cells = [name, fmt(statistics.median(ms), 1), fmt(pctl(ms, 90), 1)]
        keys = ("recall_med", "precision_med", "code", "headings", "tables", "leakage")
        cells += [fmt(sc[k]) if sc else "" for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", nargs="+", default=list(ROOTS), choices=list(ROOTS))
    ap.add_argument("--repeat", type=int, default=3, help="runs per page and method; the best counts")
    ap.add_argument("--out-dir", help="keep the JSONL feeds and scorer results here")
    ap.add_argument("--no-trafilatura", action="store_true", help="skip method a")
    ap.add_argument("--diff", type=int, default=5, help="list up to N pages where c scores below b")
    args = ap.parse_args(argv)

    from harvester.extract.converters import html_to_markdown as htmd

    out_dir = Path(args.out_dir) if args.out_dir else Path(tempfile.mkdtemp(prefix="bench_extraction_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"html-to-markdown {htmd.library_version()}, markdownify {version('markdownify')}, "
          f"trafilatura {version('trafilatura')}, lxml {version('lxml')}; best of {args.repeat}, "
          f"process CPU time; feeds in {out_dir}\n")

    reports = []
    for corpus in args.corpora:
        if not ROOTS[corpus].is_dir():
            print(f"{corpus}: {ROOTS[corpus]} missing (apt-get install python-{corpus}-doc), skipped")
            continue
        pages = load_pages(corpus)
        t_start = time.process_time()

        # Pass 0: extract_page + markdownify once, capturing the prepared
        # main elements for the converter-only timing.
        markdownify_convert = markdownify_converter()
        mains: list = []

        def capture(el):
            mains.append(copy.deepcopy(el))
            return markdownify_convert(el)

        if HAS_REGISTRY:
            from harvester.extract.converters import register_converter
            register_converter(CAPTURE, lambda: capture)
        with patched(capture):
            run_capture = extractor(CAPTURE)
            for page in pages:
                run_capture(page)
        if not mains:
            raise SystemExit("no main element reached the converter: the capture missed")

        calls = {"n": 0}

        def htmd_counted(el):
            calls["n"] += 1
            return htmd.convert(el)

        methods = []
        if not args.no_trafilatura:
            methods.append(("a", "a. trafilatura alone", run_trafilatura, None))
        methods.append(("b", "b. extract_page + markdownify", extractor("markdownify"), None))
        methods.append(("c", "c. extract_page + html-to-markdown", extractor("html-to-markdown"), htmd_counted))
        if HAS_REGISTRY:
            methods.append(("d", "d. extract_page + lxml (default)", extractor("lxml"), None))

        # Methods are interleaved per page and run (a b c a b c ...), so a
        # burst of load on the shared machine hits all of them alike.
        times: dict[str, list[float]] = {key: [] for key, *_ in methods}
        outputs: dict[str, list[tuple[str, str]]] = {key: [] for key, *_ in methods}
        for _key, _, fn, conv in methods:
            with patched(conv):
                fn(pages[0])  # warm-up (imports, caches)
        for page in pages:
            best = {key: float("inf") for key, *_ in methods}
            last = {}
            for _ in range(args.repeat):
                for key, _, fn, conv in methods:
                    with patched(conv):
                        t, last[key] = best_cpu(fn, page, 1)
                    best[key] = min(best[key], t)
            for key, seconds in best.items():
                times[key].append(seconds)
                outputs[key].append(last[key])
        if calls["n"] == 0 and not HAS_REGISTRY:
            raise SystemExit("the html-to-markdown converter was never called: the swap "
                             "missed; check how extract.py calls its converter")
        if "a" in outputs:
            # trafilatura has no title of its own here; reuse extract_page's.
            outputs["a"] = [(outputs["b"][i][0], md) for i, (_, md) in enumerate(outputs["a"])]

        # Converter step alone, on the same prepared main elements.
        tree_convert = get_tree_converter()
        conv_times = {"mdfy": [], "htmd": [], "tree": []}
        for el in mains:
            bm = bh = bt = float("inf")
            for _ in range(args.repeat):
                bm = min(bm, best_cpu(markdownify_convert, el, 1)[0])
                bh = min(bh, best_cpu(htmd.convert, el, 1)[0])
                if tree_convert is not None:
                    bt = min(bt, best_cpu(tree_convert, el, 1)[0])
            conv_times["mdfy"].append(bm)
            conv_times["htmd"].append(bh)
            conv_times["tree"].append(bt)

        procs = {}
        for key, output in outputs.items():
            feed = out_dir / f"{corpus}.{key}.jsonl"
            write_jsonl(feed, pages, output)
            procs[key] = (feed, score(corpus, feed))
        scores = {}
        for key, (feed, proc) in procs.items():
            _, err = proc.communicate()
            if proc.returncode:
                raise SystemExit(f"score.py failed on {feed}:\n{err}")
            scores[key] = read_score(feed)

        rows = [(label, times[key], scores[key]) for key, label, _, _ in methods]
        rows.append(("converter only: markdownify", conv_times["mdfy"], None))
        rows.append(("converter only: html-to-markdown", conv_times["htmd"], None))
        if tree_convert is not None:
            rows.append(("converter only: lxml (default)", conv_times["tree"], None))
        rep = [table(corpus, len(pages), rows), ""]
        tot_m, tot_h = sum(conv_times["mdfy"]), sum(conv_times["htmd"])
        rep.append(f"Converter step: {len(mains)} main elements, markdownify {tot_m * 1000:.0f} ms, "
                   f"html-to-markdown {tot_h * 1000:.0f} ms in all "
                   f"({tot_m / tot_h if tot_h else float('nan'):.1f}x).")
        sb, sc_ = scores["b"], scores["c"]
        rep.append("Secondary (b / c): code text present {} / {}, heading level exact {} / {}, "
                   "table cell recall {} / {}, recall micro {} / {}, precision micro {} / {}.".format(
                       fmt(sb["code_text"]), fmt(sc_["code_text"]), fmt(sb["level_exact"]),
                       fmt(sc_["level_exact"]), fmt(sb["cells"]), fmt(sc_["cells"]),
                       fmt(sb["recall_micro"]), fmt(sc_["recall_micro"]),
                       fmt(sb["precision_micro"]), fmt(sc_["precision_micro"])))
        same = sum(1 for x, y in zip(outputs["b"], outputs["c"]) if x[1] == y[1])
        rep.append(f"Identical Markdown from b and c on {same} of {len(pages)} pages.")
        if "d" in outputs:
            same_d = sum(1 for x, y in zip(outputs["b"], outputs["d"]) if x == y)
            rep.append(f"Identical title and Markdown from b and d on {same_d} of {len(pages)} pages; "
                       f"converter step alone: lxml {sum(conv_times['tree']) * 1000:.0f} ms in all "
                       f"({tot_m / sum(conv_times['tree']):.1f}x less than markdownify).")
        if args.diff:
            pb, pc = per_page(procs["b"][0]), per_page(procs["c"][0])
            worse = []
            for url, db in pb.items():
                dc = pc.get(url)
                if not dc:
                    continue
                drops = []
                for k in ("recall", "precision", "code", "headings", "tables"):
                    vb, vc = db.get(k), dc.get(k)
                    if isinstance(vb, (int, float)) and isinstance(vc, (int, float)) and vc < vb - 1e-9:
                        drops.append(f"{k} {vb:.3f}->{vc:.3f}")
                if drops:
                    worse.append((url, drops))
            if worse:
                rep.append(f"Pages where c scores below b ({len(worse)}):")
                rep += [f"  - {u}: {', '.join(d)}" for u, d in worse[:args.diff]]
        rep.append(f"({time.process_time() - t_start:.0f} s CPU for this corpus)")
        text = "\n".join(rep)
        print(text + "\n", flush=True)
        reports.append(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
