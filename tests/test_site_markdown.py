"""The site's own Markdown: llms.txt read as a page list, Markdown twins found, verified against the
HTML and used or rejected; one crawl of a site that serves both."""

from __future__ import annotations

import asyncio

import pytest

from harvester.site_markdown.llms import (
    LlmsEntry,
    announced_twin,
    html_url_of,
    linked_twin,
    llms_sources,
    negotiates,
    parse_llms,
)
from harvester.site_markdown.verify import check_twin, code_blocks, table_cells, twin_markdown
from tests.conftest import qdrant_points
from tests.crawl import crawl
from tests.servers.sitesrv import Route, SiteServer

LLMS = """# Example

> Example's documentation.

## Docs

- [Good](https://ex.test/docs/good.html.md): The good page.
- [Plain page](/docs/plain.html)
- [Index](https://ex.test/docs/guide/index.md "Guide"): The guide.
- [Good again](https://ex.test/docs/good.html): a second mention.

```
- [Not a link](https://ex.test/in-code.html): inside code
```

## Optional

- [Mail](mailto:docs@ex.test): not a page
"""


def test_llms_txt_lists_pages_with_their_twins_and_descriptions():
    assert parse_llms(LLMS, "https://ex.test/llms.txt") == [
        LlmsEntry("https://ex.test/docs/good.html", "https://ex.test/docs/good.html.md", "Good", "The good page."),
        LlmsEntry("https://ex.test/docs/plain.html", None, "Plain page", None),
        LlmsEntry("https://ex.test/docs/guide/", "https://ex.test/docs/guide/index.md", "Index", "The guide."),
    ]
    full = "# Quickstart\nSource: https://ex.test/docs/quickstart\n\nText with - [a](b) nowhere.\n"
    assert [e.url for e in parse_llms(full, "https://ex.test/llms-full.txt")] == ["https://ex.test/docs/quickstart"]
    assert html_url_of("https://ex.test/a/page.md") == "https://ex.test/a/page"
    assert html_url_of("https://ex.test/a/page.html") is None
    assert llms_sources("https://ex.test/docs/intro.html") == ["https://ex.test/docs/llms.txt", "https://ex.test/llms.txt"]
    assert llms_sources("https://ex.test/llms-full.txt") == ["https://ex.test/llms-full.txt"]


def test_twins_are_found_from_the_page_and_its_headers():
    page = b'<html><head><link rel="stylesheet" href="a.css"><link href="p.md" type="text/markdown" rel="alternate">'
    assert announced_twin(page, "https://ex.test/d/p.html") == "https://ex.test/d/p.md"
    assert announced_twin(b'<link rel="alternate" type="application/rss+xml" href="f.xml">', "https://ex.test/") is None
    assert linked_twin('</d/p.md>; rel="alternate"; type="text/markdown"', "https://ex.test/d/p") == \
        "https://ex.test/d/p.md"
    assert linked_twin('</style.css>; rel="preload"', "https://ex.test/") is None
    assert negotiates("Accept-Encoding, Accept") and not negotiates("Accept-Encoding") and not negotiates(None)


HTML_MD = """# Install

Install the package with pip and then import it in your application module.

```python
import example
example.setup(debug=True)
```

| Option | Default |
| --- | --- |
| `debug` | `False` |
| timeout | 30 |

A second paragraph explains what the options do, where they are read from at start, and which of them change later.
"""


def test_a_twin_is_used_only_where_it_holds_what_the_html_shows():
    # Other markup, same text: accepted.
    twin = twin_markdown("---\ntitle: Install\n---\n" + HTML_MD.replace("import example", "import  example")
                         .replace("| Option | Default |\n| --- | --- |", "|Option|Default|\n|:-|-:|"))
    assert twin.startswith("# Install") and check_twin(HTML_MD, twin).accepted
    # A twin written with combining marks is composed, as the HTML's text is, and says the same.
    decomposed = twin_markdown(HTML_MD.replace("explains", "explains the cafe\u0301's"))
    assert "café's" in decomposed and check_twin(HTML_MD.replace("explains", "explains the café's"), decomposed).accepted
    assert code_blocks(HTML_MD) == ["import example\nexample.setup(debug=True)"]
    assert table_cells(HTML_MD) == [["Option", "Default", "`debug`", "`False`", "timeout", "30"]]
    no_code = HTML_MD.replace("example.setup(debug=True)\n", "")  # a tab left out
    assert check_twin(HTML_MD, no_code).reason == "code"
    unfenced = HTML_MD.replace("```python\n", "").replace("```\n", "")  # the code's words, as prose
    assert check_twin(HTML_MD, unfenced).reason == "code"
    no_row = HTML_MD.replace("| timeout | 30 |\n", "")
    assert check_twin(HTML_MD, no_row).reason == "table"
    no_include = HTML_MD.split("A second paragraph", maxsplit=1)[0]
    verdict = check_twin(HTML_MD, no_include)
    assert verdict.reason == "passage" and verdict.missing_run >= 20
    short = "".join(f"Step {n} sets option {n} here.\n\n" for n in range(10))
    scattered = check_twin(short, short.replace("Step 3 sets option 3 here.", "").replace("Step 7 sets", "Then"))
    assert scattered.reason == "coverage" and scattered.missing_run < 20
    assert check_twin(short, short.replace("Step 3 sets option 3 here.", ""), min_coverage=0.5).accepted
    assert check_twin(HTML_MD, "---\n---\n").reason == "empty"


def _page(name: str, head: str = "") -> tuple[str, str]:
    """A page's HTML and its complete Markdown twin (with a line only the twin has)."""
    prose = " ".join(f"The {name} page explains step {n} of the setup in plain words for readers." for n in range(6))
    include = (f"This included part of {name} says how the settings file is found and read on start. "
               "It is shared by several pages of the site.")
    html = (f"<!DOCTYPE html><html><head><title>{name}</title>{head}</head><body><main><h1>{name}</h1>"
            f"<p>{prose}</p><pre><code>import {name}\n{name}.run(port=8080)</code></pre>"
            f"<table><thead><tr><th>Setting</th><th>Meaning</th></tr></thead>"
            f"<tbody><tr><td>port</td><td>where {name} listens</td></tr></tbody></table>"
            f"<p>{include}</p></main></body></html>")
    markdown = (f"# {name}\n\nWritten in Markdown.\n\n{prose}\n\n```python\nimport {name}\n{name}.run(port=8080)\n```\n\n"
                f"| Setting | Meaning |\n|---|---|\n| port | where {name} listens |\n\n{include}\n")
    return html, markdown


@pytest.mark.e2e
def test_a_site_with_llms_txt_and_twins_is_stored_once_from_its_best_copy(tmp_path, tiny_model):
    routes: dict[str, Route] = {}
    for name in ("good", "nocode", "notable", "noinclude"):
        html, markdown = _page(name)
        routes[f"/docs/{name}.html"] = Route(html)
        cut = {"good": markdown, "nocode": markdown.replace(f"{name}.run(port=8080)\n", ""),
               "notable": markdown.replace(f"| port | where {name} listens |\n", ""),
               "noinclude": markdown.split("This included part")[0]}[name]
        routes[f"/docs/{name}.html.md"] = Route(cut, headers={"Content-Type": "text/markdown"})
    html, markdown = _page("linked", '<link rel="alternate" type="text/markdown" href="linked/index.md">')
    routes["/docs/linked.html"] = Route(html)
    routes["/docs/linked/index.md"] = Route(markdown, headers={"Content-Type": "text/markdown"})
    html, markdown = _page("negotiated")
    routes["/docs/negotiated.html"] = Route(html, headers={"Vary": "Accept"}, markdown=markdown)
    routes["/llms.txt"] = Route(
        "# Site\n\n## Docs\n\n" + "".join(f"- [{n}](/docs/{n}.html.md): About {n}.\n"
                                          for n in ("good", "nocode", "notable", "noinclude"))
        + "- [linked](/docs/linked.html): About linked.\n- [negotiated](/docs/negotiated.html)\n"
        + "- [blog](/blog/out.html): Out of scope.\n")
    with SiteServer(routes=routes) as server:
        result = crawl("sitemap", server.url + "docs/", tmp_path, settings={"HARVESTER_EMBEDDING_MODEL": tiny_model})
        requested = server.paths()
    assert result.returncode == 0, result.output[-3000:]
    docs = server.url + "docs/"
    items = {item["url"].removeprefix(docs): item for item in result.items}
    assert sorted(items) == ["good.html", "linked.html", "negotiated.html", "nocode.html", "noinclude.html",
                             "notable.html"]
    assert "/blog/out.html" not in requested and "/llms.txt" in requested
    assert items["good.html"]["description"] == "About good." and items["linked.html"]["description"] == "About linked."
    for used in ("good", "linked", "negotiated"):
        assert "Written in Markdown." in items[f"{used}.html"]["markdown"], used
    for rejected in ("nocode", "notable", "noinclude"):
        item = items[f"{rejected}.html"]
        assert "Written in Markdown." not in item["markdown"], rejected
        assert f"{rejected}.run(port=8080)" in item["markdown"] and "where" in item["markdown"]
        assert "included part" in item["markdown"]
    assert items["good.html"]["aliases"] == [docs + "good.html.md"]
    assert items["linked.html"]["aliases"] == [docs + "linked/index.md"]
    assert result.report["site_markdown"] == {"used": 3, "unavailable": 0,
                                              "rejected": {"code": 1, "table": 1, "passage": 1}}
    sources = {point.payload["metadata"]["source_url"] for point in qdrant_points(tmp_path / "qdrant")}
    assert sources == {docs + name for name in items}, "a twin stored as a page of its own"
    assert {name: requested.count(f"/docs/{name}") for name in items} == {
        **dict.fromkeys(items, 1), "negotiated.html": 2}, "a page fetched again, but for its Markdown"


def test_a_host_that_never_answers_with_markdown_is_not_asked_again():
    from scrapy.http import HtmlResponse

    from harvester.site_markdown.twins import NEGOTIATION_TRIES, SiteMarkdown
    from tests.components import crawler_with, page

    asked: list[str] = []

    async def fetch(url: str) -> str | None:
        asked.append(url)
        return None

    twins = SiteMarkdown.from_crawler(crawler_with())
    twins._fetch = fetch
    for number in range(NEGOTIATION_TRIES + 2):
        url = f"http://h/{number}.html"
        response = HtmlResponse(url, body=b"<html><body>text</body></html>", headers={"Vary": "Accept"})
        asyncio.run(twins.use_twin(page(url), response))
    announced = HtmlResponse("http://h/a.html", body=b'<link rel="alternate" type="text/markdown" href="a.md">')
    asyncio.run(twins.use_twin(page("http://h/a.html"), announced))
    assert asked == [f"http://h/{n}.html" for n in range(NEGOTIATION_TRIES)] + ["http://h/a.md"]
