"""The project's own structure scorer: a crawl's JSONL feed against what a real docs site holds.

The expected structure (``tests/fixtures/structure/CORPUS.json``) is read from the site's HTML with
the standard library's parser, not with Harvester's extractor, so a regression in extraction
cannot move the truth with it. Per content page: the title (the main element's first ``<h1>``),
every heading, the first line of every ``<pre>`` and the header row of every content table.

Rebuild the truth (only when the Debian package changes)::

    .venv/bin/python -m tests.structure flask
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TRUTH_DIR = Path(__file__).resolve().parent / "fixtures" / "structure"
# Sphinx's generated indexes: lists of links, no prose to extract.
NOT_CONTENT = {"genindex.html", "search.html", "py-modindex.html", "404.html"}
# docutils tables that are layout (footnotes, field lists), not data tables.
LAYOUT_TABLE = re.compile(r"\b(footnote|citation|field-list)\b")
QUOTE = re.compile(r"^(\s*>\s?)+")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```+|~~~+)")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def normalise(text: str) -> str:
    """Text as both sides can agree on it: no Markdown emphasis, escapes or link targets, one space."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"[`*_¶]", "", text)
    return " ".join(text.split())


@dataclass
class _Page:
    title: str = ""
    headings: list[tuple[int, str]] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    tables: list[list[str]] = field(default_factory=list)


class _MainElementReader(HTMLParser):
    """Walks ``<div role="main">`` of a Sphinx page: headings, ``<pre>`` blocks, data tables."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = _Page()
        self._div_depth = 0  # depth of <div> inside the main element; 0 = outside
        self._heading: tuple[int, list[str]] | None = None
        self._in_headerlink = False
        self._pre: list[str] | None = None
        self._tables: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "div":
            if self._div_depth:
                self._div_depth += 1
            elif attributes.get("role") == "main":
                self._div_depth = 1
            return
        if not self._div_depth:
            return
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = (int(tag[1]), [])
        elif tag == "a" and "headerlink" in (attributes.get("class") or ""):
            self._in_headerlink = True
        elif tag == "pre" and self._pre is None:
            self._pre = []
        elif tag == "table":
            layout = bool(LAYOUT_TABLE.search(attributes.get("class") or ""))
            self._tables.append({"layout": layout, "rows": 0, "header": [], "cell": None})
        elif tag == "tr" and self._tables:
            self._tables[-1]["rows"] += 1
        elif tag in ("th", "td") and self._tables and self._tables[-1]["rows"] == 1:
            self._tables[-1]["cell"] = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._div_depth:
            self._div_depth -= 1
        if not self._div_depth:
            return
        if re.fullmatch(r"h[1-6]", tag) and self._heading:
            level, parts = self._heading
            text = normalise("".join(parts))
            self.page.headings.append((level, text))
            if level == 1 and not self.page.title:
                self.page.title = text
            self._heading = None
        elif tag == "a":
            self._in_headerlink = False
        elif tag == "pre" and self._pre is not None:
            lines = [line.strip() for line in "".join(self._pre).splitlines() if line.strip()]
            if lines:
                self.page.code.append(lines[0])
            self._pre = None
        elif tag in ("th", "td") and self._tables and self._tables[-1]["cell"] is not None:
            table = self._tables[-1]
            table["header"].append(normalise("".join(table["cell"])))
            table["cell"] = None
        elif tag == "table" and self._tables:
            table = self._tables.pop()
            if not table["layout"] and not self._tables:
                self.page.tables.append(table["header"])

    def handle_data(self, data: str) -> None:
        if not self._div_depth:
            return
        if self._heading and not self._in_headerlink:
            self._heading[1].append(data)
        if self._pre is not None:
            self._pre.append(data)
        if self._tables and self._tables[-1]["cell"] is not None:
            self._tables[-1]["cell"].append(data)


def html_structure(html: str) -> dict[str, Any] | None:
    """A page's expected structure, or None when it has no main element with a title."""
    reader = _MainElementReader()
    reader.feed(html)
    reader.close()
    page = reader.page
    if not page.title:
        return None
    return {"title": page.title, "headings": [list(h) for h in page.headings],
            "code": page.code, "tables": page.tables}


def build_truth(root: Path) -> dict[str, dict[str, Any]]:
    """Every content page under ``root`` (a built Sphinx site) by its path from the site root."""
    pages: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("*.html")):
        relative = path.relative_to(root).as_posix()
        if relative in NOT_CONTENT or relative.startswith(("_", ".")):
            continue
        structure = html_structure(path.read_text(encoding="utf-8"))
        if structure:
            pages["/" + relative] = structure
    return pages


def markdown_structure(markdown: str) -> dict[str, Any]:
    """What a page's Markdown holds: ATX headings, the first line of each fenced block, table headers."""
    headings: list[tuple[int, str]] = []
    code: list[str] = []
    tables: list[list[str]] = []
    lines = markdown.splitlines()
    fence: str | None = None
    quote = ""  # the blockquote prefix of the open fence: admonitions are blockquotes
    first_line: str | None = None
    for number, raw in enumerate(lines):
        if fence is not None:
            line = raw[len(quote):] if raw.startswith(quote) else raw.lstrip(" >")
            closer = FENCE.match(line)
            if closer and closer.group(1).startswith(fence) and not line.strip()[len(closer.group(1)):]:
                code.append(first_line or "")
                fence = None
            elif first_line is None and line.strip():
                first_line = line.strip()
            continue
        prefix = QUOTE.match(raw)
        quote = prefix.group(0) if prefix else ""
        line = raw[len(quote):]
        opener = FENCE.match(line)
        if opener:
            fence, first_line = opener.group(1), None
            continue
        heading = HEADING.match(line)
        if heading:
            headings.append((len(heading.group(1)), normalise(heading.group(2))))
        elif TABLE_RULE.match(line) and number and "|" in lines[number - 1]:
            cells = QUOTE.sub("", lines[number - 1]).strip().strip("|").split("|")
            tables.append([normalise(cell) for cell in cells])
    return {"headings": headings, "code": code, "tables": tables}


def _found(expected: list[Any], actual: list[Any]) -> int:
    """How many of ``expected`` appear in ``actual``, each match used once."""
    remaining = list(actual)
    found = 0
    for value in expected:
        if value in remaining:
            remaining.remove(value)
            found += 1
    return found


def score(truth: dict[str, dict[str, Any]], feed: Path) -> dict[str, Any]:
    """Coverage and structure fidelity of a JSONL feed against ``truth``; ``missing_*`` name examples."""
    items = {urlsplit(item["url"]).path: item
             for item in map(json.loads, feed.read_text(encoding="utf-8").splitlines())}
    totals = {"headings": [0, 0], "code": [0, 0], "tables": [0, 0]}
    missing: dict[str, list[str]] = {"pages": [], "titles": [], "headings": [], "code": [], "tables": []}
    for url, expected in truth.items():
        # A directory's index page is stored under the directory's URL.
        item = items.get(url) or items.get(url.removesuffix("index.html"))
        if item is None:
            missing["pages"].append(url)
            continue
        if normalise(item["title"]) != expected["title"]:
            missing["titles"].append(f"{url}: {item['title']!r} != {expected['title']!r}")
        actual = markdown_structure(item["markdown"])
        pairs = {"headings": ([tuple(h) for h in expected["headings"]], actual["headings"]),
                 "code": (expected["code"], actual["code"]), "tables": (expected["tables"], actual["tables"])}
        for kind, (wanted, got) in pairs.items():
            found = _found(wanted, got)
            totals[kind][0] += found
            totals[kind][1] += len(wanted)
            if found < len(wanted):
                missing[kind].append(f"{url}: {found}/{len(wanted)}")
    pages = len(truth)
    return {
        "pages": pages,
        "coverage": (pages - len(missing["pages"])) / pages,
        "titles": (pages - len(missing["pages"]) - len(missing["titles"])) / pages,
        **{kind: found / total if total else 1.0 for kind, (found, total) in totals.items()},
        "counts": {kind: {"found": found, "expected": total} for kind, (found, total) in totals.items()},
        "missing": missing,
    }


def package_version(corpus: str) -> str | None:
    """The installed version of the corpus's Debian package, or None where dpkg does not know it."""
    try:
        process = subprocess.run(["dpkg-query", "-W", "-f=${Version}", f"python-{corpus}-doc"],
                                 capture_output=True, text=True, check=False)
    except OSError:
        return None
    return process.stdout.strip() if process.returncode == 0 else None


def load_truth(corpus: str) -> dict[str, Any]:
    """``{"package_version": ..., "pages": {path: structure}}`` as committed."""
    loaded: dict[str, Any] = json.loads((TRUTH_DIR / f"{corpus}.json").read_text(encoding="utf-8"))
    return loaded


def main(argv: list[str]) -> None:
    from tests.conftest import DOC_ROOTS

    for corpus in argv or ["flask"]:
        TRUTH_DIR.mkdir(parents=True, exist_ok=True)
        truth = {"package_version": package_version(corpus), "pages": build_truth(DOC_ROOTS[corpus])}
        out = TRUTH_DIR / f"{corpus}.json"
        out.write_text(json.dumps(truth, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{out}: {len(truth['pages'])} pages of python-{corpus}-doc {truth['package_version']}")


if __name__ == "__main__":
    main(sys.argv[1:])
