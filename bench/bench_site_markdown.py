"""Benchmark: Markdown-first (a page's own Markdown twin, verified) against HTML-only, on a local
copy of Debian's Flask docs that serves both.

The site: the package's HTML, each content page announcing a Markdown twin
(``<link rel="alternate" type="text/markdown">``) and listed in an ``llms.txt`` with a one-line
description, and a ``sitemap.xml`` (so the HTML-only crawl finds the same pages). The twins are
written the way a docs plugin writes them: the main element (``div[role=main]``) converted by the
markdownify library, not by Harvester. Each page with a table loses one (an API table); of the
others, one in three keeps its complete twin, one loses a code block (a tab left out) and one a
quarter of its paragraphs from the middle (an include); a page with no code block loses
paragraphs instead.

Both crawls (``sitemap`` spider, embedding and index off) run as the real command, interleaved
``--repeat`` times; CPU is the crawl process's (best run), with the extraction and site-Markdown
stages from the crawl's stats. Fidelity is the project's structure scorer
(``tests/structure.py``: headings, code blocks' first lines, table header rows against the HTML)
on each feed, and on the twins as published ("twins, unverified": storing every twin as it is).

    .venv/bin/python bench/bench_site_markdown.py [--repeat 3] [--json-out bench/results/site_markdown.json]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import structure
from tests.crawl import NO_EMBEDDING
from tests.crawl import cli_crawl as crawl
from tests.servers.sitesrv import SiteServer

ROOT = Path("/usr/share/doc/python-flask-doc/html")
GAPS = ("none", "code", "table", "include")
CYCLE = ("none", "code", "include")  # pages without a table; every page with one loses a table
_STAT = re.compile(r"'(harvester/cpu_ms/[a-z_]+|response_received_count|harvester/site_markdown/[a-z_/]+)': ([0-9.]+)")


def main_element_markdown(html: str) -> str:
    """The twin a docs plugin would publish: the main element, converted by markdownify."""
    import lxml.html
    from markdownify import markdownify

    doc = lxml.html.fromstring(html)
    main = doc.cssselect('div[role="main"]')
    for link in (main[0] if main else doc).cssselect("a.headerlink"):
        link.drop_tree()
    body = lxml.html.tostring(main[0] if main else doc, encoding="unicode")
    markdown = markdownify(body, heading_style="ATX", code_language="python")
    return re.sub(r"\n{3,}", "\n\n", markdown).strip() + "\n"


def cut(markdown: str, gap: str) -> tuple[str, str]:
    """``markdown`` without one part, and the gap actually cut (a page without the part loses
    paragraphs instead)."""
    lines = markdown.split("\n")
    if gap == "code":
        fences = [i for i, line in enumerate(lines) if line.startswith("```")]
        if len(fences) >= 2:
            return "\n".join(lines[:fences[0]] + lines[fences[1] + 1:]), "code"
        gap = "include"
    if gap == "table":
        rows = [i for i, line in enumerate(lines) if line.startswith("|")]
        if rows:
            end = rows[0]
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            return "\n".join(lines[:rows[0]] + lines[end:]), "table"
        gap = "include"
    if gap == "include":
        paragraphs = markdown.split("\n\n")
        quarter = max(1, len(paragraphs) // 4)
        start = len(paragraphs) // 2
        return "\n\n".join(paragraphs[:start] + paragraphs[start + quarter:]), "include"
    return markdown, "none"


def build_site(site: Path, base: str) -> tuple[dict[str, str], dict[str, str]]:
    """The site under ``site``: its pages' twins (by path) and the gap each twin has."""
    shutil.copytree(ROOT, site, symlinks=False, dirs_exist_ok=True)
    truth = structure.load_truth("flask")["pages"]
    twins, gaps = {}, {}
    for number, path in enumerate(sorted(truth)):
        page = site / path.lstrip("/")
        html = page.read_text(encoding="utf-8")
        complete = main_element_markdown(html)
        has_table = any(line.startswith("|") for line in complete.splitlines())
        twin, gap = cut(complete, "table" if has_table else CYCLE[number % len(CYCLE)])
        twins[path], gaps[path] = twin, gap
        (site / (path.lstrip("/") + ".md")).write_text(twin, encoding="utf-8")
        name = Path(path).name + ".md"
        page.write_text(html.replace("</head>", f'<link rel="alternate" type="text/markdown" href="{name}"></head>', 1),
                        encoding="utf-8")
    (site / "llms.txt").write_text("# Flask\n\n## Docs\n\n" + "".join(
        f"- [{truth[p]['title']}]({base}{p}): {truth[p]['title']}, in Flask's documentation.\n" for p in sorted(truth)),
        encoding="utf-8")
    (site / "sitemap.xml").write_text(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{base}{p}</loc></url>" for p in sorted(truth)) + "</urlset>", encoding="utf-8")
    return twins, gaps


def run_arm(base: str, workdir: Path, markdown_first: bool) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = crawl("sitemap", base + "/", workdir, settings={
        **NO_EMBEDDING, "HARVESTER_SITE_MARKDOWN_ENABLED": int(markdown_first), "HARVESTER_FEEDS_ENABLED": 0})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(result.output[-3000:])
    stats = {key: float(value) for key, value in _STAT.findall(result.output)}
    pages = len(result.items)
    return {"pages": pages,
            "cpu_ms_per_page": (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000 / pages,
            "extraction_ms_per_page": stats.get("harvester/cpu_ms/extraction", 0.0) / pages,
            "site_markdown_ms_per_page": stats.get("harvester/cpu_ms/site_markdown", 0.0) / pages,
            "responses": int(stats.get("response_received_count", 0)),
            "twins_used": int(stats.get("harvester/site_markdown/used", 0)),
            "twins_rejected": {key.rsplit("/", 1)[-1]: int(value) for key, value in stats.items()
                               if key.startswith("harvester/site_markdown/rejected/")},
            "feed": workdir / "pages.jsonl"}


def fidelity(feed: Path) -> dict:
    scored = structure.score(structure.load_truth("flask")["pages"], feed)
    return {key: round(scored[key], 4) for key in ("coverage", "titles", "headings", "code", "tables")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json-out", type=Path)
    options = parser.parse_args()
    if not ROOT.exists():
        raise SystemExit(f"{ROOT} is missing: apt-get install python-flask-doc")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        with SiteServer(root=tmp_path / "site") as server:
            base = server.url.rstrip("/")
            twins, gaps = build_site(tmp_path / "site", base)
            runs: dict[str, list[dict]] = {"html_only": [], "markdown_first": []}
            for repeat in range(options.repeat):
                for arm, arm_runs in runs.items():
                    workdir = tmp_path / f"{arm}-{repeat}"
                    arm_runs.append(run_arm(base, workdir, arm == "markdown_first"))
                    print(arm, repeat, {k: v for k, v in arm_runs[-1].items() if k != "feed"}, flush=True)
            published = tmp_path / "twins.jsonl"
            truth = structure.load_truth("flask")["pages"]
            published.write_text("".join(json.dumps({"url": base + path, "title": truth[path]["title"],
                                                     "markdown": twin}) + "\n" for path, twin in twins.items()))
            results = {"site": "flask (python-flask-doc)", "pages": len(twins),
                       "twin_gaps": {gap: list(gaps.values()).count(gap) for gap in GAPS},
                       "repeat": options.repeat}
            for arm, arm_runs in runs.items():
                best = min(arm_runs, key=lambda run: run["cpu_ms_per_page"])
                results[arm] = {**{k: (round(v, 2) if isinstance(v, float) else v) for k, v in best.items()
                                   if k != "feed"},
                                "cpu_ms_per_page_runs": [round(run["cpu_ms_per_page"], 2) for run in arm_runs],
                                "fidelity": fidelity(best["feed"])}
            results["twins_unverified"] = {"fidelity": fidelity(published)}
            results["cpu_ratio_markdown_first_over_html_only"] = round(
                results["markdown_first"]["cpu_ms_per_page"] / results["html_only"]["cpu_ms_per_page"], 3)
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=REPO, check=False).stdout.strip()
            results["commit"] = commit
    print(json.dumps(results, indent=1))
    if options.json_out:
        options.json_out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
