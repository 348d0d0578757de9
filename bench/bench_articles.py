r"""Articles: Harvester's generic path against trafilatura on two public article corpora.

**trafilatura's evaluation pages** (adbar/trafilatura, Apache-2.0): about a thousand news, blog
and help pages in `tests/cache/` and `tests/eval/`, each with hand-picked snippets in
`tests/evaldata.json` that the article must hold (`with`) and must not (`without`: comments,
related lists, share boxes, bylines, footers...). Scored as trafilatura scores it: a `with` snippet
found is a true positive, one missing a false negative, a `without` snippet found a false positive,
one absent a true negative (substring match once markup characters and whitespace are normalised on
both sides, see `norm`); precision, recall, accuracy (the snippet accuracy) and F1 over all
snippets of all pages. trafilatura runs with the settings of its own evaluation
(`tests/eval_common.py`: no comments, tables, no formatting).

**The article-extraction-benchmark** (scrapinghub/article-extraction-benchmark, MIT): 181 pages,
one per site, with a hand-made `articleBody` each in `ground-truth.json`. Scored as its
`evaluate.py` scores: the text is cut into `\w+` tokens, each page's true and predicted 4-token
shingles (with counts) give its true positives, false positives and false negatives, normalised to
sum to one; precision and recall are the means over the pages that have any, F1 their harmonic
mean, accuracy the share of pages whose tokens match exactly. trafilatura runs as that benchmark
runs it (`extractors/run_trafilatura.py`: the defaults, no comments).

Both are too large for this repository; get them with a clone (or a mirror) and pass their folders:

    git clone --depth 1 https://github.com/adbar/trafilatura /tmp/trafilatura
    git clone --depth 1 https://github.com/scrapinghub/article-extraction-benchmark /tmp/aeb
    .venv/bin/python bench/bench_articles.py --trafilatura /tmp/trafilatura/tests --scrapinghub /tmp/aeb \
        [--json-out bench/results/articles.json]

Each page is extracted by `extract_page` (the visible text of its Markdown, as it is chunked) and by
`trafilatura.extract` alone. CPU: process time of each extraction, the two interleaved page by
page; median and mean per page.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import trafilatura

from harvester.extract.converters.conventions import visible_text
from harvester.extract.page import NoContent, extract_page
from harvester.fetch.encoding import decode_mixed

_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w-]+)""", re.I)


_LINK_TARGET = re.compile(r"\]\((?:[^()\s]++|\([^)\s]*+\))*+(?:\s+\"[^\"]*\")?\)")
_MARKUP = re.compile(r"[#*_`|>\\\[\]!-]+")


def norm(text: str) -> str:
    r"""Text as compared: link targets and the Markdown punctuation ``#*_`|>\[]!-`` dropped from
    snippets and both outputs alike, whitespace collapsed. Dropped, not spaced: a link or emphasis
    that touches punctuation (``[Frankreich](...).``, ``**Moderator**:``) reads as the page shows it."""
    return " ".join(_MARKUP.sub("", _LINK_TARGET.sub("]", text)).split())


def decode(body: bytes) -> str:
    """The page as text: its declared charset, else UTF-8 with Windows-1252 for stray bytes."""
    found = _CHARSET.search(body[:4096])
    if found:
        try:
            return body.decode(found.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            pass
    return decode_mixed(body)


def harvester_markdown(body: bytes, url: str) -> str | None:
    try:
        return extract_page(decode(body), url).markdown
    except NoContent:
        return None


def harvester_text(body: bytes, url: str) -> str | None:
    markdown = harvester_markdown(body, url)
    return visible_text(markdown) if markdown is not None else None


def trafilatura_text(body: bytes, url: str) -> str | None:
    return trafilatura.extract(body, url=url, include_comments=False, include_tables=True,
                               include_formatting=False)


METHODS = {"harvester": harvester_markdown, "trafilatura": trafilatura_text}


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




# --------------------------------------------------------------------------
# trafilatura's evaluation pages
# --------------------------------------------------------------------------

def find(tests: Path, name: str) -> Path | None:
    for sub in ("cache", "eval"):
        if (tests / sub / name).is_file():
            return tests / sub / name
    return None


def run_trafilatura_corpus(tests: Path, limit: int, rows: list[dict]) -> dict:
    evaldata = json.loads((tests / "evaldata.json").read_text(encoding="utf-8"))
    urls = sorted(evaldata)[:limit or None]
    totals = {name: [0, 0, 0, 0] for name in METHODS}
    cpu: dict[str, list[float]] = {name: [] for name in METHODS}
    pages = 0
    for url in urls:
        item = evaldata[url]
        path = find(tests, item["file"])
        if path is None:
            continue
        body = path.read_bytes()
        pages += 1
        row: dict = {"corpus": "trafilatura", "url": url, "file": item["file"]}
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
    figures: dict = {"corpus": "adbar/trafilatura tests/evaldata.json", "pages": pages}
    for name in METHODS:
        tp, fp, fn, tn = totals[name]
        figures[name] = {**scores(tp, fp, fn, tn), "tp": tp, "fp": fp, "fn": fn, "tn": tn, **cpu_figures(cpu[name])}
    return figures


# --------------------------------------------------------------------------
# The article-extraction-benchmark
# --------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+")


def shingles(text: str, n: int = 4) -> Counter:
    """The text's ``n``-token shingles with their counts; a text shorter than ``n`` tokens is one."""
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i:i + n])


def shingle_counts(true: str, pred: str) -> tuple[float, float, float]:
    """A page's true positives, false positives and false negatives over shingles, summing to one."""
    want, got = shingles(true), shingles(pred)
    tp = sum((want & got).values())
    fp = sum((got - want).values())
    fn = sum((want - got).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def shingle_scores(counts: list[tuple[float, float, float]], exact: list[bool]) -> dict[str, float]:
    """Precision and recall averaged over the pages, F1 of the two averages."""
    def precision(tp: float, fp: float, fn: float) -> float:
        return 1.0 if fp == fn == 0 else 0.0 if tp == fp == 0 else tp / (tp + fp)

    def recall(tp: float, fp: float, fn: float) -> float:
        return 1.0 if fp == fn == 0 else 0.0 if tp == fn == 0 else tp / (tp + fn)

    p = statistics.fmean(precision(*c) for c in counts if c[0] + c[1] > 0)
    r = statistics.fmean(recall(*c) for c in counts if c[0] + c[2] > 0)
    return {"f1": round(2 * p * r / (p + r), 4) if p + r else 0.0, "precision": round(p, 4), "recall": round(r, 4),
            "accuracy": round(sum(exact) / len(exact), 4) if exact else 0.0}


def run_scrapinghub(folder: Path, limit: int, rows: list[dict]) -> dict:
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    keys = sorted(truth)[:limit or None]
    counts: dict[str, list[tuple[float, float, float]]] = {name: [] for name in METHODS}
    exact: dict[str, list[bool]] = {name: [] for name in METHODS}
    cpu: dict[str, list[float]] = {name: [] for name in METHODS}
    methods = {"harvester": harvester_text, "trafilatura": scrapinghub_trafilatura_text}
    for key in keys:
        body = gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes())
        url = truth[key].get("url") or ""
        want = truth[key].get("articleBody") or ""
        row: dict = {"corpus": "scrapinghub", "url": url, "file": key}
        for name, method in methods.items():
            start = time.process_time()
            result = method(body, url) or ""
            cpu[name].append(time.process_time() - start)
            page = shingle_counts(want, result)
            counts[name].append(page)
            exact[name].append(_TOKEN.findall(want) == _TOKEN.findall(result))
            row[name] = {"counts": [round(x, 4) for x in page], "chars": len(result)}
        rows.append(row)
    figures: dict = {"corpus": "scrapinghub/article-extraction-benchmark ground-truth.json", "pages": len(keys)}
    for name in METHODS:
        figures[name] = {**shingle_scores(counts[name], exact[name]), **cpu_figures(cpu[name])}
    return figures


def scrapinghub_trafilatura_text(body: bytes, url: str) -> str | None:
    return trafilatura.extract(body.decode("utf-8"), include_comments=False)


def cpu_figures(seconds: list[float]) -> dict[str, float]:
    return {"cpu_ms_median": round(1000 * statistics.median(seconds), 2),
            "cpu_ms_mean": round(1000 * statistics.fmean(seconds), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trafilatura", type=Path, help="trafilatura's tests folder (evaldata.json, cache/, eval/)")
    parser.add_argument("--scrapinghub", type=Path, help="the article-extraction-benchmark (ground-truth.json, html/)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages of each corpus")
    parser.add_argument("--json-out", type=Path, help="write the figures here")
    parser.add_argument("--pages-out", type=Path, help="write each page's counts here (JSON lines)")
    options = parser.parse_args()
    if not (options.trafilatura or options.scrapinghub):
        parser.error("give --trafilatura, --scrapinghub or both")
    rows: list[dict] = []
    corpora = {}
    if options.trafilatura:
        corpora["trafilatura"] = run_trafilatura_corpus(options.trafilatura, options.limit, rows)
    if options.scrapinghub:
        corpora["scrapinghub"] = run_scrapinghub(options.scrapinghub, options.limit, rows)
    for corpus, figures in corpora.items():
        for name in METHODS:
            print(corpus, name, json.dumps(figures[name]), flush=True)
    if options.pages_out:
        options.pages_out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    if options.json_out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, check=True,
                                text=True).stdout.strip()
        options.json_out.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "commit": commit,
            "trafilatura_version": trafilatura.__version__, "corpora": corpora}, indent=1) + "\n")


if __name__ == "__main__":
    main()
