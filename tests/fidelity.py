r"""Fidelity of extracted Markdown against a theme-free reference body (tests and bench only).

The generated theme sites (``tests/fixtures/generated/site/<theme>/``) all render the same source.
``tests/fixtures/generated/reference/<generator>/<page>.html`` holds each page's body as the
generator renders it with no theme around it (Sphinx's JSON builder, MkDocs' page content), so
what the author wrote is known without asking the extractor. The figures follow the public
scorer's definitions (``../shared/eval/README.md``), re-implemented here on these small sites:

* **recall / precision**: multiset overlap of case-folded ``\w+`` words between the reference
  body's text and the Markdown's text (fence lines, link targets, escapes and markup removed),
  over the reference's words (recall) or the output's (precision);
* **code**: share of reference ``<pre>`` blocks whose lines are a run of lines inside one fenced
  block of the output;
* **headings**: share of reference h1-h3 texts found as ATX headings;
* **tables**: share of reference tables with one pipe table holding >= 90% of their cells;
* **leakage**: share of pages whose Markdown holds a boilerplate string: the text (>= 2 words) of
  a block outside the reference body that occurs on at least half of the site's pages and is not
  part of that page's reference.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html

WORD = re.compile(r"\w+")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_TABLE_RULER = re.compile(r"^\s*\|?[\s:|-]+\|[\s:|-]*$")
_BLOCKS = ("p", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "td", "th", "a", "caption",
           "figcaption", "blockquote", "div", "span", "footer", "header", "nav", "aside", "label", "button")
_SKIP = ("script", "style", "noscript", "template", "svg", "head", "title")


def words(text: str) -> list[str]:
    return [w.casefold() for w in WORD.findall(text)]


def norm(text: str) -> str:
    return " ".join(words(text))


def markdown_text(md: str) -> str:
    """The words a reader sees: fence lines, table rulers, link targets and escapes dropped."""
    out = []
    for line in md.split("\n"):
        if _FENCE.match(line) or _TABLE_RULER.match(line):
            continue
        out.append(_LINK_TARGET.sub("]", line).replace("\\", ""))
    return "\n".join(out)


def fenced_blocks(md: str) -> list[list[str]]:
    """Each fenced block's lines, whitespace-collapsed, blank lines dropped."""
    blocks, current, fence = [], None, None
    for line in md.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence, current = m.group(1), []
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and not line.strip()[len(m.group(1)):]:
            blocks.append(current)
            fence, current = None, None
        elif fence is not None and line.strip():
            current.append(" ".join(line.split()))
    return blocks


def atx_headings(md: str) -> list[str]:
    out, fence = [], False
    for line in md.split("\n"):
        if _FENCE.match(line):
            fence = not fence
            continue
        m = None if fence else re.match(r"^\s*#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            out.append(norm(m.group(1)))
    return out


def pipe_tables(md: str) -> list[list[str]]:
    """Each pipe table's cells (normalised)."""
    tables, current = [], None
    for line in md.split("\n"):
        s = line.strip()
        if s.startswith("|") and s.endswith("|"):
            if current is None:
                current = []
                tables.append(current)
            if not _TABLE_RULER.match(s):
                current.extend(norm(c) for c in re.split(r"(?<!\\)\|", s)[1:-1])
        else:
            current = None
    return tables


@dataclass
class Reference:
    text: str
    words: Counter
    code: list[list[str]] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    tables: list[list[str]] = field(default_factory=list)


def reference(html: str) -> Reference:
    root = lxml.html.fragment_fromstring(html, create_parent="div")
    for a in root.xpath(".//a[contains(@class, 'headerlink')]"):
        a.drop_tree()
    text = root.text_content()
    code = [[" ".join(line.split()) for line in pre.text_content().split("\n") if line.strip()]
            for pre in root.iter("pre")]
    headings = [norm(h.text_content()) for h in root.iter("h1", "h2", "h3")]
    tables = [[norm(c.text_content()) for c in t.iter("td", "th")] for t in root.iter("table")]
    return Reference(text=text, words=Counter(words(text)), code=code, headings=headings, tables=tables)


@dataclass
class PageScore:
    recall: float
    precision: float
    code: tuple[int, int]
    headings: tuple[int, int]
    tables: tuple[int, int]
    leaks: list[str]


def score_page(md: str, ref: Reference, boilerplate: list[str] = ()) -> PageScore:
    out = Counter(words(markdown_text(md)))
    overlap = sum((out & ref.words).values())
    recall = overlap / max(1, sum(ref.words.values()))
    precision = overlap / max(1, sum(out.values()))
    fences = fenced_blocks(md)
    code_ok = sum(1 for block in ref.code if any(_is_run(block, f) for f in fences))
    found = Counter(atx_headings(md))
    heads_ok = sum((found & Counter(ref.headings)).values())
    tables = pipe_tables(md)
    tables_ok = sum(1 for t in ref.tables
                    if any(sum(1 for c in t if c and c in got) >= 0.9 * sum(1 for c in t if c) for got in tables))
    flat = " " + norm(markdown_text(md)) + " "
    own = " " + norm(ref.text) + " "
    leaks = [b for b in boilerplate if f" {b} " in flat and f" {b} " not in own]
    return PageScore(recall, precision, (code_ok, len(ref.code)), (heads_ok, len(ref.headings)),
                     (tables_ok, len(ref.tables)), leaks)


def _is_run(lines: list[str], block: list[str]) -> bool:
    n = len(lines)
    return any(block[i:i + n] == lines for i in range(len(block) - n + 1)) if n else True


def boilerplate(pages_html: dict[str, str], refs: dict[str, Reference]) -> list[str]:
    """Block texts (>= 2 words) outside the reference bodies found on at least half the pages."""
    seen: Counter = Counter()
    for page, html in pages_html.items():
        root = lxml.html.document_fromstring(html)
        own = " " + norm(refs[page].text) + " "
        texts = set()
        for el in root.iter(*_BLOCKS):
            if any(anc.tag in _SKIP for anc in el.iterancestors()):
                continue
            t = norm(el.text_content())
            if len(t.split()) >= 2 and f" {t} " not in own:
                texts.add(t)
        seen.update(texts)
    need = max(2, (len(pages_html) + 1) // 2)
    return sorted(t for t, n in seen.items() if n >= need)


def p10(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(0.1 * (len(ordered) - 1)))] if ordered else 0.0


def score_site(outputs: dict[str, str], pages_html: dict[str, str], refs: dict[str, Reference]) -> dict:
    """Figures over one site: ``outputs`` and ``pages_html`` map page names to Markdown and HTML."""
    boiler = boilerplate(pages_html, refs)
    scores = {page: score_page(outputs.get(page, ""), refs[page], boiler) for page in refs}

    def share(attr: str) -> float | None:
        ok = sum(getattr(s, attr)[0] for s in scores.values())
        total = sum(getattr(s, attr)[1] for s in scores.values())
        return ok / total if total else None

    recalls = [s.recall for s in scores.values()]
    return {
        "pages": len(scores),
        "recall_med": statistics.median(recalls),
        "recall_p10": p10(recalls),
        "precision_med": statistics.median(s.precision for s in scores.values()),
        "code": share("code"),
        "headings": share("headings"),
        "tables": share("tables"),
        "leakage": sum(1 for s in scores.values() if s.leaks) / max(1, len(scores)),
        "leaks": {page: s.leaks for page, s in scores.items() if s.leaks},
        "boilerplate_strings": len(boiler),
    }


def load_refs(folder: Path) -> dict[str, Reference]:
    return {p.stem: reference(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.html"))}
