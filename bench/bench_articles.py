"""Articles: Harvester's generic path against trafilatura on trafilatura's own evaluation pages.

The pages are trafilatura's evaluation corpus (adbar/trafilatura, Apache-2.0): about a thousand
news, blog and help pages in `tests/cache/` and `tests/eval/`, each with hand-picked snippets in
`tests/evaldata.json` that the article must hold (`with`) and must not (`without`: comments,
related lists, share boxes, bylines, footers...). They are too large for this repository; get them
with a clone (or the mirror a session fetched) and pass its `tests` folder:

    git clone --depth 1 https://github.com/adbar/trafilatura /tmp/trafilatura
    .venv/bin/python bench/bench_articles.py /tmp/trafilatura/tests [--json-out bench/results/articles.json]

Each page is extracted by `extract_page` (the visible text of its Markdown, as it is chunked) and by
`trafilatura.extract` alone with the settings of trafilatura's own evaluation (`tests/eval_common.py`:
no comments, tables, no formatting). Scored as trafilatura scores it: a `with` snippet found is a
true positive, one missing a false negative, a `without` snippet found a false positive, one
absent a true negative (substring match once markup
characters and whitespace are normalised on both sides, see `norm`); precision, recall, accuracy (the
snippet accuracy) and F1 over all snippets of all pages. CPU: process time of each extraction,
the two interleaved page by page; median and mean per page.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import trafilatura

from harvester.extract.converters.conventions import visible_text
from harvester.extract.page import NoContent, extract_page
from harvester.fetch.encoding import decode_mixed

_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w-]+)""", re.I)


def norm(text: str) -> str:
    r"""Text as compared: the Markdown punctuation `visible_text` drops (``#*_`|>\[]!-``) dropped from
    snippets and both outputs alike, whitespace collapsed."""
    return visible_text(text)


def decode(body: bytes) -> str:
    """The page as text: its declared charset, else UTF-8 with Windows-1252 for stray bytes."""
    found = _CHARSET.search(body[:4096])
    if found:
        try:
            return body.decode(found.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            pass
    return decode_mixed(body)


def harvester_text(body: bytes, url: str) -> str | None:
    try:
        return visible_text(extract_page(decode(body), url).markdown)
    except NoContent:
        return None


def trafilatura_text(body: bytes, url: str) -> str | None:
    return trafilatura.extract(body, url=url, include_comments=False, include_tables=True,
                               include_formatting=False)


METHODS = {"harvester": harvester_text, "trafilatura": trafilatura_text}


def count(item: dict, result: str | None) -> tuple[int, int, int, int]:
    text = norm(result) if result else ""
    tp = sum(1 for w in item["with"] if norm(w) in text)
    fp = sum(1 for w in item["without"] if norm(w) in text)
    return tp, fp, len(item["with"]) - tp, len(item["without"]) - fp


def scores(tp: int, fp: int, fn: int, tn: int) -> dict[str, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    total = tp + fp + fn + tn
    return {"precision": round(precision, 4), "recall": round(recall, 4),
            "accuracy": round((tp + tn) / total, 4) if total else 0.0,
            "f1": round(2 * tp / (2 * tp + fp + fn), 4) if tp + fp + fn else 0.0}


def find(tests: Path, name: str) -> Path | None:
    for sub in ("cache", "eval"):
        if (tests / sub / name).is_file():
            return tests / sub / name
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", type=Path, help="trafilatura's tests folder (evaldata.json, cache/, eval/)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages (by URL)")
    parser.add_argument("--json-out", type=Path, help="write the figures here")
    parser.add_argument("--pages-out", type=Path, help="write each page's counts here (JSON lines)")
    options = parser.parse_args()
    evaldata = json.loads((options.tests / "evaldata.json").read_text(encoding="utf-8"))
    urls = sorted(evaldata)[:options.limit or None]
    totals = {name: [0, 0, 0, 0] for name in METHODS}
    cpu: dict[str, list[float]] = {name: [] for name in METHODS}
    rows = []
    pages = 0
    for url in urls:
        item = evaldata[url]
        path = find(options.tests, item["file"])
        if path is None:
            continue
        body = path.read_bytes()
        pages += 1
        row = {"url": url, "file": item["file"]}
        for name, method in METHODS.items():
            start = time.process_time()
            result = method(body, url)
            cpu[name].append(time.process_time() - start)
            counts = count(item, result)
            totals[name] = [a + b for a, b in zip(totals[name], counts, strict=True)]
            row[name] = {"counts": counts, "chars": len(result or ""),
                         "missing": [w for w in item["with"] if norm(w) not in norm(result or "")],
                         "leaked": [w for w in item["without"] if norm(w) in norm(result or "")]}
        rows.append(row)
    figures = {}
    for name in METHODS:
        tp, fp, fn, tn = totals[name]
        figures[name] = {**scores(tp, fp, fn, tn), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
                         "cpu_ms_median": round(1000 * statistics.median(cpu[name]), 2),
                         "cpu_ms_mean": round(1000 * statistics.fmean(cpu[name]), 2)}
        print(name, json.dumps(figures[name]), flush=True)
    if options.pages_out:
        options.pages_out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    if options.json_out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, check=True,
                                text=True).stdout.strip()
        options.json_out.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "commit": commit,
            "corpus": "adbar/trafilatura tests/evaldata.json", "trafilatura_version": trafilatura.__version__,
            "pages": pages, **figures}, indent=1) + "\n")


if __name__ == "__main__":
    main()
