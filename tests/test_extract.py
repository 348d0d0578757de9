"""Tests for harvester.extract.page and the modules it runs (no network, no Scrapy).

Real pages come from Debian's python-flask-doc package (Sphinx, pallets
theme); those tests are skipped when it is not installed. Small inline
snippets cover the converter rules and the fallbacks.
"""
from __future__ import annotations

import os
import re
import time

import pytest

from harvester.extract import page as extract_mod
from harvester.extract.converters.conventions import tidy_markdown
from harvester.extract.page import ExtractedPage, NoContent, extract_page
from tests.conftest import missing_prerequisite

FLASK_DOCS = "/usr/share/doc/python-flask-doc/html"
BASE = "http://127.0.0.1:18300"
FILLER = (
    "This paragraph exists so that the page carries enough words to count as real content "
    "for the extractor's minimum length check."
)


def _flask_page(name: str) -> str:
    path = os.path.join(FLASK_DOCS, name)
    if not os.path.exists(path):
        if os.path.exists(path + ".gz"):
            import gzip

            with gzip.open(path + ".gz", "rt", encoding="utf-8") as fh:
                return fh.read()
        missing_prerequisite(f"{path} not installed (apt-get install python-flask-doc)")
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _doc(body: str, *, title: str = "Test page", head: str = "") -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>{head}"
            f"</head><body>{body}</body></html>")


def _fences(md: str) -> list[str]:
    return [line for line in md.split("\n") if line.lstrip().startswith("```")]


def _assert_tidy(md: str) -> None:
    assert md.endswith("\n") and not md.endswith("\n\n")
    assert "\n\n\n" not in md
    outside_code, fence = [], False
    for line in md.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            outside_code.append(line)
    assert all(line == line.rstrip() for line in outside_code)


# --------------------------------------------------------------------------
# Real Sphinx pages (Flask documentation)
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def quickstart() -> ExtractedPage:
    return extract_page(_flask_page("quickstart.html"), f"{BASE}/quickstart.html")


def test_quickstart_metadata(quickstart: ExtractedPage) -> None:
    assert quickstart.title == "Quickstart"  # " — Flask Documentation (2.2.x)" suffix stripped
    assert quickstart.lang == "en"
    assert quickstart.breadcrumbs == ["Flask Documentation (2.2.x)", "Quickstart"]
    assert quickstart.degraded is False
    assert 0.8 <= quickstart.quality <= 1.0


@pytest.mark.parametrize(("title", "expected"), [
    ("Release day - ", "Release day"),  # a theme's separator before an empty site name
    ("Release day | Acme blog", "Release day"),
    ("Release day | ", "Release day"),
    ("Q&A - the C++ - way", "Q&A - the C++ - way"),
])
def test_a_title_loses_the_site_name_and_a_dangling_separator(title: str, expected: str) -> None:
    html = f"<html><head><title>{title}</title></head><body><main><h1>Release day</h1><p>{'Text. ' * 40}</p></main></body></html>"
    assert extract_page(html, "http://127.0.0.1:8000/x/").title == expected


def test_a_title_loses_the_site_name_its_header_or_meta_gives() -> None:
    """Pelican's simple theme writes "Site - Post" and the site's name as an h1 linking home; a site
    that names itself in og:site_name loses that name after the last separator."""
    body = f"<main><article><h2>Release day</h2><p>{'Text. ' * 40}</p></article></main>"
    home = '<header><h1><a href="./">Acme Blog</a></h1></header>'
    html = f"<html><head><title>Acme Blog - Release day</title></head><body>{home}{body}</body></html>"
    assert extract_page(html, "http://127.0.0.1:8000/release-day.html").title == "Release day"
    meta = '<meta property="og:site_name" content="Acme Blog">'
    html = f"<html><head><title>Release day | News | Acme Blog</title>{meta}</head><body>{body}</body></html>"
    assert extract_page(html, "http://127.0.0.1:8000/release-day.html").title == "Release day | News"
    # An h1 whose only link is its own permalink is the page's title, not the site's name.
    own = '<h1>Release day<a class="headerlink" href="#release-day">¶</a></h1>'
    html = f"<html><head><title>Release day — Acme docs</title></head><body><main>{own}{body}</main></body></html>"
    assert extract_page(html, "http://127.0.0.1:8000/release-day.html").title == "Release day"


def test_quickstart_headings_are_atx_with_levels(quickstart: ExtractedPage) -> None:
    md = quickstart.markdown
    assert md.startswith("# Quickstart\n")
    assert "\n## A Minimal Application\n" in md
    assert "\n### Variable Rules\n" in md
    assert "\n### Unique URLs / Redirection Behavior\n" in md
    assert not re.search(r"^=+$", md, re.M)  # no setext underlines
    assert "Quickstart\n---" not in md and "A Minimal Application\n---" not in md
    assert quickstart.headings[0] == {"level": 1, "text": "Quickstart"}
    assert {"level": 3, "text": "Variable Rules"} in quickstart.headings
    assert all("¶" not in h["text"] for h in quickstart.headings)


def test_quickstart_code_blocks_fenced_with_language_and_indentation(quickstart: ExtractedPage) -> None:
    md = quickstart.markdown
    assert (
        "```python\n"
        "from flask import Flask\n"
        "\n"
        "app = Flask(__name__)\n"
        "\n"
        '@app.route("/")\n'
        "def hello_world():\n"
        '    return "<p>Hello, World!</p>"\n'
        "```\n"
    ) in md
    # Sphinx's highlight-text blocks keep their language tag and exact text.
    assert "```text\n$ flask --app hello run\n * Serving Flask app 'hello'\n" in md
    assert len(_fences(md)) % 2 == 0
    assert "````" not in md  # no doubled fences


def test_quickstart_has_no_chrome(quickstart: ExtractedPage) -> None:
    md = quickstart.markdown
    assert "¶" not in md
    for chrome in ("Quick search", "Navigation", "Previous: Installation", "Next: Tutorial",
                   "Related Topics", "modules |", "Show Source"):
        assert chrome not in md, chrome
    _assert_tidy(md)


def test_quickstart_links_absolute_and_tables(quickstart: ExtractedPage) -> None:
    md = quickstart.markdown
    assert "[Installation](http://127.0.0.1:18300/installation.html)" in md
    assert "](http://127.0.0.1:18300/api.html#flask.Flask)" in md
    assert not re.search(r"\]\((?!https?://|mailto:)", md)  # every link target absolute
    assert "| `string` | (default) accepts any text without a slash |\n| --- | --- |\n" in md
    assert "![The interactive debugger in action.](http://127.0.0.1:18300/_images/debugger.png)" in md


def test_api_page_signatures_and_escaping() -> None:
    page = extract_page(_flask_page("api.html"), f"{BASE}/api.html")
    md = page.markdown
    assert page.title == "API"
    assert "\n## Application Object\n" in md
    # Signatures are code spans (no escaped emphasis); literal underscores
    # in prose are escaped, never inside code.
    assert "`class flask.Flask(import_name, static_url_path=None," in md
    assert "*class* flask.Flask" not in md
    assert "**import\\_name** (*str*)" in md
    assert page.generator == "sphinx"
    # Code inside a definition (dd) keeps its exact text under the
    # definition's uniform 4-space indent.
    assert "    ```python\n    from flask import Flask\n    app = Flask(__name__)\n    ```" in md
    assert "`__init__.py`" in md
    assert "Quick search" not in md and "¶" not in md
    assert len(_fences(md)) % 2 == 0


def test_big_page_is_reasonably_fast() -> None:
    html = _flask_page("quickstart.html")
    extract_page(html, f"{BASE}/quickstart.html")  # warm imports
    start = time.perf_counter()
    extract_page(html, f"{BASE}/quickstart.html")
    # Typically ~25 ms; the bound only catches pathological regressions.
    assert time.perf_counter() - start < 1.0


# --------------------------------------------------------------------------
# Converter rules on small snippets
# --------------------------------------------------------------------------

def test_table_cells_with_pipes_are_escaped() -> None:
    html = _doc(
        "<main><h1>Operators</h1><p>" + FILLER + "</p>"
        "<table><thead><tr><th>Operator</th><th>Meaning</th></tr></thead><tbody>"
        "<tr><td><code>a | b</code></td><td>union of a or b</td></tr>"
        "<tr><td>x || y</td><td>logical or</td></tr></tbody></table></main>")
    md = extract_page(html, "https://example.org/ops.html").markdown
    assert "| Operator | Meaning |\n| --- | --- |\n" in md
    assert "| `a \\| b` | union of a or b |" in md
    assert "| x \\|\\| y | logical or |" in md


def test_nested_pre_gives_one_fence() -> None:
    html = _doc(
        "<div role='main'><h1>Nested</h1><p>" + FILLER + "</p>"
        "<div class='highlight-python notranslate'><div class='highlight'>"
        "<pre><span></span><span class='k'>def</span> <span class='nf'>f</span>():\n"
        "    <span class='k'>return</span> 1\n</pre></div></div>"
        "<pre><code class='language-js'>const a = 1;\n  if (a) {}</code></pre>"
        "<pre><pre>inner = True</pre></pre></div>")
    md = extract_page(html, "https://example.org/n.html").markdown
    assert "```python\ndef f():\n    return 1\n```" in md
    assert "```js\nconst a = 1;\n  if (a) {}\n```" in md
    assert "```\ninner = True\n```" in md
    # Exactly one opening and one closing fence per block, nothing doubled.
    assert _fences(md) == ["```python", "```", "```js", "```", "```", "```"]


def test_headings_are_atx_never_setext() -> None:
    html = _doc("<main><h1>Title</h1><p>" + FILLER + "</p><h2>Second level</h2><p>Body.</p>"
                "<h6>Sixth level</h6><p>Deep.</p></main>")
    md = extract_page(html, "https://example.org/").markdown
    assert md.startswith("# Title\n") and "\n## Second level\n" in md and "\n###### Sixth level\n" in md
    assert not re.search(r"^(?:=+|-{3,})$", md, re.M)


def test_code_containing_backticks_gets_longer_fence() -> None:
    html = _doc("<div role='main'><p>" + FILLER + "</p><pre>Write ```python\nblocks```</pre></div>")
    md = extract_page(html, "https://example.org/").markdown
    assert "````\nWrite ```python\nblocks```\n````" in md


def test_line_number_gutters_dropped() -> None:
    html = _doc(
        "<div role='main'><p>" + FILLER + "</p>"
        "<div class='highlight-python'><table class='highlighttable'><tr>"
        "<td class='linenos'><div class='linenodiv'><pre>1\n2</pre></div></td>"
        "<td class='code'><div class='highlight'><pre>a = 1\nb = 2</pre></div></td></tr></table></div>"
        "<div class='highlight'><pre><span class='linenos'>1</span>x = 3\n<span class='linenos'>2</span>y = 4\n"
        "</pre></div></div>")
    md = extract_page(html, "https://example.org/").markdown
    assert "```python\na = 1\nb = 2\n```" in md
    assert "```\nx = 3\ny = 4\n```" in md
    assert "1\n2" not in md


@pytest.mark.parametrize("block", [
    # Hexo (highlight.js with line numbers): the language on the figure.
    ("<figure class='highlight js'><table><tr><td class='gutter'><pre><span class='line'>1</span><br>"
     "<span class='line'>2</span><br></pre></td><td class='code'><pre><span class='line'>const a = 1;</span><br>"
     "<span class='line'>const b = 2;</span><br></pre></td></tr></table></figure>"),
    # Jekyll's Rouge with line numbers.
    ("<div class='language-js highlighter-rouge'><div class='highlight'><pre class='highlight'><code>"
     "<table class='rouge-table'><tbody><tr><td class='rouge-gutter gl'><pre class='lineno'>1\n2\n</pre></td>"
     "<td class='rouge-code'><pre>const a = 1;\nconst b = 2;\n</pre></td></tr></tbody></table></code></pre></div></div>"),
], ids=["hexo", "rouge"])
def test_line_numbered_code_tables_become_one_fence(block: str) -> None:
    md = extract_page(_doc(f"<div role='main'><p>{FILLER}</p>{block}</div>"), "https://example.org/").markdown
    assert "```js\nconst a = 1;\nconst b = 2;\n```" in md
    assert "|" not in md and "1\n2" not in md


def test_literal_markdown_characters_escaped_outside_code() -> None:
    html = _doc(
        "<article><h1>Escapes</h1><p>" + FILLER + "</p>"
        "<p>Use snake_case names; 2 * 3 = 6; see Optional[int].</p>"
        "<p>Code stays raw: <code>my_var * 2</code></p><pre>x_y = a * b</pre></article>")
    md = extract_page(html, "https://example.org/").markdown
    assert "Use snake\\_case names; 2 \\* 3 = 6; see Optional\\[int\\]." in md
    assert "`my_var * 2`" in md
    assert "```\nx_y = a * b\n```" in md


def test_spans_are_written_as_their_text() -> None:
    """Spans are dissolved while the converter's tree is built: what they hold, blocks included,
    keeps its place, escaping and code spans are unchanged."""
    html = _doc(
        "<article><h1>Spans</h1><p>" + FILLER + "</p>"
        '<p>Call <a href="/api#open"><code class="xref"><span class="pre">open_file</span><span class="pre">()</span>'
        "</code></a> with a_b<span> and </span><span><em>c_d</em></span>.</p>"
        "<span><p>First paragraph in a span.</p><p>Second one, <span>nested <span>twice</span></span>.</p></span>"
        "</article>")
    md = extract_page(html, "https://example.org/").markdown
    assert "Call [`open_file()`](https://example.org/api#open) with a\\_b and *c\\_d*." in md
    assert "\n\nFirst paragraph in a span.\n\nSecond one, nested twice.\n" in md


def test_text_is_composed_and_ruby_readings_left_out() -> None:
    """Text written with combining marks is stored composed (NFC), as queries are typed, but a
    character NFC would replace on its own (the Kelvin sign) is the one the page means; a ruby's
    reading would split the word it reads."""
    decomposed = "Cafe\u0301 co\u0301n leche, at 300 \u212a"
    html = _doc(f"<article><h1>Cafe\u0301</h1><p>{FILLER}</p><p>{decomposed}.</p>"
                "<p>Read <ruby>漢<rp>(</rp><rt>かん</rt><rp>)</rp>字<rp>(</rp><rt>じ</rt><rp>)</rp></ruby> aloud.</p></article>")
    page = extract_page(html, "https://example.org/")
    assert "Café cón leche, at 300 \u212a." in page.markdown and "\u0301" not in page.markdown
    assert page.headings[0]["text"] == "Café"
    assert "Read 漢字 aloud." in page.markdown


def test_docusaurus_layout() -> None:
    html = _doc(
        "<nav class='navbar'><a href='/'>My Site</a><a href='/blog'>Blog</a></nav>"
        "<main><article><nav aria-label='Breadcrumbs'><ul class='breadcrumbs'>"
        "<li class='breadcrumbs__item'><a class='breadcrumbs__link' href='/docs'>Docs</a></li>"
        "<li class='breadcrumbs__item breadcrumbs__item--active'><span>Intro</span></li></ul></nav>"
        "<div class='theme-doc-markdown markdown'><header><h1>Intro<a class='hash-link' href='#intro'>\u200b</a>"
        "</h1></header><p>" + FILLER + " See <a href='../guide/setup'>the setup guide</a>.</p>"
        "<div class='language-bash codeBlockContainer'><pre class='prism-code language-bash'><code>"
        "<span class='token-line'>npm install</span>\n<span class='token-line'>npm start</span></code>"
        "<button class='copyButton'>Copy</button></pre></div></div>"
        "<footer class='theme-doc-footer'><a href='https://github.com/x/edit/main/intro.md'>Edit this page</a>"
        "</footer></article><nav class='pagination-nav'><a href='/docs/next'>Next: Setup</a></nav></main>")
    page = extract_page(html, "https://example.org/docs/intro/")
    md = page.markdown
    assert md.startswith("# Intro\n")
    assert "[the setup guide](https://example.org/docs/guide/setup)" in md
    assert "```bash\nnpm install\nnpm start\n```" in md
    for chrome in ("Edit this page", "Next: Setup", "My Site", "Copy", "Docs"):
        assert chrome not in md, chrome
    assert page.breadcrumbs == ["Docs", "Intro"]


def test_rtd_theme_and_metadata() -> None:
    head = ("<meta name='description' content='How to use selectors.'>"
            "<link rel='canonical' href='/en/latest/selectors.html'>")
    html = _doc(
        "<div role='navigation' aria-label='Page navigation'><ul class='wy-breadcrumbs'>"
        "<li><a href='index.html' class='icon icon-home' aria-label='Home'></a></li>"
        "<li class='breadcrumb-item active'>Selectors</li>"
        "<li class='wy-breadcrumbs-aside'><a href='_sources/s.rst.txt'>View page source</a></li></ul></div>"
        "<div role='main' class='document'><div itemprop='articleBody'><section id='selectors'>"
        "<h1>Selectors<a class='headerlink' href='#selectors'>¶</a></h1><p>" + FILLER + "</p></section>"
        "</div><footer><div class='rst-footer-buttons'><a href='next.html'>Next</a></div></footer></div>",
        title="Selectors — Scrapy 2.8.0 documentation", head=head)
    page = extract_page(html, "https://docs.example.org/en/latest/selectors.html")
    assert page.title == "Selectors"
    assert page.description == "How to use selectors."
    assert page.canonical_url == "https://docs.example.org/en/latest/selectors.html"
    assert page.breadcrumbs == ["Home", "Selectors"]
    assert page.markdown.startswith("# Selectors\n\nThis paragraph")
    assert "¶" not in page.markdown and "Next" not in page.markdown
    assert "View page source" not in page.markdown


def test_jsonld_breadcrumbs_preferred() -> None:
    ld = ('<script type="application/ld+json">{"@context": "https://schema.org", "@type": "BreadcrumbList",'
          '"itemListElement": [{"@type": "ListItem", "position": 2, "name": "Guide"},'
          '{"@type": "ListItem", "position": 1, "name": "Home"}]}</script>')
    html = _doc("<main><h1>Guide</h1><p>" + FILLER + "</p></main>", head=ld)
    assert extract_page(html, "https://example.org/").breadcrumbs == ["Home", "Guide"]


def test_cookie_banner_removed_but_cookie_section_kept() -> None:
    html = _doc(
        "<div role='main'><div id='cookie-banner'>We use cookies to improve your experience. Accept all</div>"
        "<div class='site-GDPR-Consent-Modal'>Your privacy matters. Reject all</div>"
        "<section id='set-cookie-options'><h2>Set-Cookie options</h2><p>" + FILLER + "</p></section></div>")
    md = extract_page(html, "https://example.org/").markdown
    assert "## Set-Cookie options" in md
    assert "Accept all" not in md
    assert "Reject all" not in md  # named by its class, in capitals


def test_edit_links_are_told_by_their_whole_text() -> None:
    """An edit link is dropped however its words are spaced or cased (zero-width and no-break
    spaces between them); a link that only starts like one is content."""
    html = _doc(
        "<main><h1>Guide</h1><p>" + FILLER + "</p>"
        "<p><a href='/e1'>EDIT\u200bon GitHub</a> <a href='/e2'><b>View</b>&nbsp;page source</a> "
        "<a href='/k'>Editor settings</a> <a href='/r'>Report an issue tracker export</a></p></main>")
    md = extract_page(html, "https://example.org/").markdown
    assert "GitHub" not in md and "page source" not in md
    assert "[Editor settings](https://example.org/k)" in md
    assert "[Report an issue tracker export](https://example.org/r)" in md


def test_heading_self_links_keep_their_words_and_lose_their_glyphs() -> None:
    """A heading's fragment link keeps its words (mdBook's ``a.header``) and loses a bare glyph
    (Sphinx's pilcrow), once, even in a heading nested in another (broken markup); a link to
    another page stays a link."""
    import lxml.html

    from harvester.extract.rewrites import unwrap_heading_anchors

    main = lxml.html.fragment_fromstring(
        "<div><h2><a href='#setup'>Setup</a> <a href='#setup'>¶</a></h2>"
        "<h2>Outer <h3><a href='#inner'>Inner</a><a href='#inner'>#</a></h3></h2>"
        "<h3>See <a href='other.html'>Other</a></h3><p><a href='#setup'>¶</a></p>"
        "<h2 id='usage'>Usage <a class='heading-link' href='#usage'><i title='Link to heading'></i>"
        "<span class='sr-only'>Link to heading</span></a></h2></div>")
    unwrap_heading_anchors(main)
    html = lxml.html.tostring(main, encoding="unicode")
    assert "<h2>Setup </h2>" in html and "<h3>Inner</h3>" in html
    assert "Link to heading" not in html and "Usage" in html  # a permalink beside the heading's words
    assert '<a href="other.html">Other</a>' in html and '<p><a href="#setup">¶</a></p>' in html


def test_tidy_markdown_collapses_blank_lines_outside_code() -> None:
    md = tidy_markdown("a  \n\n\n\nb\n```\nx  \n\n\n\ny\n```\n\n\n")
    assert md == "a\n\nb\n```\nx  \n\n\n\ny\n```\n"


# --------------------------------------------------------------------------
# Fallbacks and failures
# --------------------------------------------------------------------------

BLOG = _doc(
    "<div id='header'><a href='/'>Acme</a><ul class='menu'><li><a href='/blog/'>Blog</a></li>"
    "<li><a href='/about/'>About us</a></li></ul></div>"
    "<div id='sidebar'><h3>Recent posts</h3><ul><li><a href='/a'>Scaling our queue workers to a million jobs"
    "</a></li><li><a href='/b'>How we test our billing code</a></li></ul></div>"
    "<div id='content'><h1>Why we moved to Postgres</h1>"
    "<p>For five years our product ran on a document store. This post explains why we moved every table "
    "to Postgres in 2023, what broke along the way, and what we would do differently next time.</p>"
    "<h2>The problem with documents</h2><p>Our reporting queries needed joins across customers, invoices "
    "and payments. The document store could not express them, so we copied data into nightly batch jobs "
    "that were slow and often stale.</p><p>Read the <a href='/docs/migration'>migration guide</a> for the "
    "details of the cut-over, including the dual-write period and how we verified row counts.</p>"
    "<h2>What we learned</h2><p>Plan the schema before the migration, keep the old system readable for a "
    "month, and measure query latency before and after every change you make to the indexes.</p></div>"
    "<div id='footer'><p>Copyright 2024 Acme Inc. All rights reserved. Privacy policy. Terms of service.</p>"
    "</div>",
    title="Why we moved to Postgres | Acme Engineering Blog")


def test_trafilatura_fallback_for_unknown_layout() -> None:
    page = extract_page(BLOG, "https://acme.example/blog/postgres/")
    md = page.markdown
    assert page.degraded is False
    assert page.title == "Why we moved to Postgres"
    assert "## The problem with documents" in md
    assert "nightly batch jobs" in md
    assert "[migration guide](https://acme.example/docs/migration)" in md
    for chrome in ("Recent posts", "Copyright 2024", "About us", "billing code"):
        assert chrome not in md, chrome
    assert {"level": 2, "text": "What we learned"} in page.headings


def test_plain_text_last_resort(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract_mod, "_trafilatura", lambda doc, url: "")
    page = extract_page(BLOG, "https://acme.example/blog/postgres/")
    assert page.degraded is True
    assert "nightly batch jobs" in page.markdown
    assert "Recent posts" not in page.markdown  # chrome containers are dropped even here
    assert page.quality <= 0.5


@pytest.mark.parametrize("html", ["", "   \n", "<html><head><title>x</title></head><body></body></html>",
                                  "<html><body><script>document.write('hi')</script></body></html>",
                                  "<!-- only a comment -->"])
def test_empty_pages_raise_empty(html: str) -> None:
    with pytest.raises(NoContent) as exc:
        extract_page(html, "https://example.org/")
    assert exc.value.reason == "empty"


def test_short_page_raises_too_short() -> None:
    html = _doc("<div role='main'><h1>Hi</h1><p>Tiny page.</p></div>")
    with pytest.raises(NoContent) as exc:
        extract_page(html, "https://example.org/")
    assert exc.value.reason == "too_short"
    # The same page passes with a lower threshold.
    assert extract_page(html, "https://example.org/", min_chars=5).markdown == "# Hi\n\nTiny page.\n"


def test_a_short_page_names_the_generator_that_recognised_it_an_empty_one_none() -> None:
    """The render policy never starts a browser for a short page of a generator that writes its
    pages whole, and still does for one whose HTML held nothing (it may be written by a script)."""
    head = '<meta name="generator" content="Sphinx 7.2.6"><script src="_static/doctools.js"></script>'
    short = (f"<html><head><title>Stub</title>{head}</head><body><div class='body' role='main'>"
             "<h1>Stub</h1><p>See the guide.</p></div></body></html>")
    with pytest.raises(NoContent) as exc:
        extract_page(short, "https://example.org/stub.html")
    assert (exc.value.reason, exc.value.generator) == ("too_short", "sphinx")
    empty = f"<html><head><title>Stub</title>{head}</head><body><div class='body' role='main'></div></body></html>"
    with pytest.raises(NoContent) as exc:
        extract_page(empty, "https://example.org/stub.html")
    assert (exc.value.reason, exc.value.generator) == ("empty", None)


@pytest.mark.parametrize("payload", ['{"a": 1}', "plain text without any markup at all", "%PDF-1.7 ..."])
def test_non_html_raises_not_html(payload: str) -> None:
    with pytest.raises(NoContent) as exc:
        extract_page(payload, "https://example.org/")
    assert exc.value.reason == "not_html"


def test_malformed_html_does_not_crash() -> None:
    html = ("<html><body><div role=main><h1>Broken<p>first paragraph <b>bold <i>italic " + FILLER
            + "<ul><li>one<li>two</div><table><tr><td>cell<pre>code <x")
    page = extract_page(html, "https://example.org/")
    assert page.markdown.startswith("# Broken")
    assert "first paragraph" in page.markdown
    assert "- one\n- two" in page.markdown


def test_xml_declaration_and_base_href() -> None:
    html = ('<?xml version="1.0" encoding="utf-8"?>\n<html><head><base href="/docs/v2/"></head><body>'
            "<main><p>" + FILLER + " <a href='page.html'>Page</a></p></main></body></html>")
    page = extract_page(html, "https://example.org/docs/v2/sub/index.html")
    assert "[Page](https://example.org/docs/v2/page.html)" in page.markdown


def test_links_resolve_per_page_though_joins_are_remembered_per_directory() -> None:
    """Link targets are joined once per directory and crawl, without their fragment; each page
    still gets its own absolute URLs: same-page anchors against the page, others against its
    directory, fragments kept, a <base> honoured."""
    links = ('<a href="os.html#os.path.join">join</a> <a href="#top">top</a> <a href="../x.html#">x</a> '
             '<a href="?q=1#r">query</a> <a href="https://other.example/a#b">other</a>')
    body = f"<main><h1>Links</h1><p>{FILLER}</p><p>{links}</p></main>"
    first = extract_page(_doc(body), "https://docs.example/lib/a.html").markdown
    second = extract_page(_doc(body), "https://docs.example/tut/b.html").markdown
    based = extract_page(_doc(body, head='<base href="https://mirror.example/v2/">'),
                         "https://docs.example/lib/a.html").markdown
    assert "[join](https://docs.example/lib/os.html#os.path.join)" in first
    assert "[top](https://docs.example/lib/a.html#top)" in first
    assert "[x](https://docs.example/x.html)" in first
    assert "[query](https://docs.example/lib/a.html?q=1#r)" in first
    assert "[other](https://other.example/a#b)" in first
    assert "[join](https://docs.example/tut/os.html#os.path.join)" in second
    assert "[top](https://docs.example/tut/b.html#top)" in second
    assert "[join](https://mirror.example/v2/os.html#os.path.join)" in based


def test_visible_text_drops_link_targets_as_the_backtracking_pattern_did() -> None:
    from harvester.extract.converters import conventions
    from tests.conftest import doc_root

    backtracking = re.compile(r"\]\((?:[^()\s]|\([^)\s]*\))*(?:\s+\"[^\"]*\")?\)")
    texts = ['[a](b.html) [c](d(e).html) [f](g(h i).html) [j](k "title") [l](m "t" ) [n](o(p)',
             '](x(y)) ]((() ](a b) ]("q") ](u "v"w") ](((a)b)c) ]() ](()) ](a)(b) ]](c)', "](" * 200]
    for path in sorted((doc_root("scrapy") / "topics").glob("*.html"))[:12]:
        texts.append(extract_page(path.read_text(encoding="utf-8"), "http://127.0.0.1/" + path.name).markdown)
    for text in texts:
        assert conventions._LINK_TARGET.sub("]", text) == backtracking.sub("]", text)
    assert sum(text.count("](") for text in texts) > 500


def test_a_page_without_a_main_element_keeps_the_text_after_its_code_links() -> None:
    """trafilatura (the fallback for layouts no rule recognises) drops the text after an element
    nested in inline code: the page's code is rewritten for it first."""
    prose = " ".join(["The server reads its configuration from several files at start-up."] * 4)
    html = (
        "<html><head><title>Files</title></head><body><div id='page'><div class='top'><a href='/'>Home</a></div>"
        f"<div id='text'><h1>Configuration files</h1><p>{prose}</p>"
        "<p>You can change the name of the file using the <code class='directive'><a href='/core.html#name'>"
        "AccessFileName</a></code> directive. For example, with <code>a <b>bold</b> word</code> inside "
        "(or <code>nested <code><b>code</b></code></code>), you can put the following in your server "
        "configuration file.</p>"
        f"<p>{prose}</p></div></div></body></html>")
    md = extract_page(html, "https://docs.example.org/files.html").markdown
    assert "[`AccessFileName`](https://docs.example.org/core.html#name) directive. For example, with" in md
    assert "`a bold word` inside (or `nested code`), you can put" in md


def test_lists_and_tables_that_lay_out_sections_become_plain_blocks() -> None:
    """A list item or a table cell that holds a heading is layout: kept as a list or a table, its
    heading would no longer start a line and the chunks under it would lose their heading path."""
    html = _doc(
        "<main><h1>Widgets</h1>"
        "<table width='100%'><tr><td><h2>GtkButton</h2><p>GtkButton — A widget that emits a signal.</p></td>"
        "<td><img src='button.png' alt=''></td></tr></table>"
        f"<p>{FILLER}</p>"
        "<ul class='blockList'><li class='blockList'><h3>Method Summary</h3><p>All the methods.</p></li>"
        "<li class='blockList'><p>A note between the sections.</p></li>"
        "<li class='blockList'><h3>Method Detail</h3><ul><li>an item of a real list</li><li>another</li></ul>"
        "</li></ul>"
        "<ol><li>First step</li><li>Second step</li></ol></main>")
    md = extract_page(html, "https://docs.example.org/widgets.html").markdown
    assert "\n## GtkButton\n\nGtkButton — A widget that emits a signal.\n" in md
    assert "|" not in md
    assert ("\n### Method Summary\n\nAll the methods.\n\nA note between the sections.\n\n### Method Detail\n\n"
            "- an item of a real list\n- another\n") in md
    assert "\n1. First step\n2. Second step\n" in md


def test_a_row_holding_only_a_heading_cuts_its_table_and_empty_rows_go() -> None:
    """Doxygen titles the rows of a member table with a heading in a full-width row."""
    html = _doc(
        f"<main><h1>Test Class Reference</h1><p>{FILLER}</p>"
        "<table class='memberdecls'>"
        "<tr class='heading'><td colspan='2'><h2 class='groupheader'>Public Member Functions</h2></td></tr>"
        "<tr><td>void</td><td><b>member</b> ()</td></tr>"
        "<tr><td></td><td>a member function.</td></tr>"
        "<tr class='separator'><td class='memSeparator' colspan='2'>&#160;</td></tr>"
        "<tr class='heading'><td colspan='2'><h2 class='groupheader'>Protected Attributes</h2></td></tr>"
        "<tr><td>int</td><td>value</td></tr></table></main>")
    md = extract_page(html, "https://docs.example.org/class_test.html").markdown
    assert md.endswith(
        "## Public Member Functions\n\n| void | **member** () |\n| --- | --- |\n|  | a member function. |\n\n"
        "## Protected Attributes\n\n| int | value |\n| --- | --- |\n")


def test_headings_that_label_a_tables_columns_stay_its_header_cells() -> None:
    html = _doc(
        f"<main><h1>Plans</h1><p>{FILLER}</p><table><thead><tr><th><h4>Feature</h4></th><th><h4>Free</h4></th>"
        "<th><h4>Pro</h4></th></tr></thead><tbody><tr><td>Seats</td><td>1</td><td>10</td></tr></tbody></table></main>")
    md = extract_page(html, "https://docs.example.org/plans.html").markdown
    assert md.endswith("| Feature | Free | Pro |\n| --- | --- | --- |\n| Seats | 1 | 10 |\n")


def test_a_caption_goes_before_its_table_which_keeps_its_header_line() -> None:
    html = _doc(
        f"<main><h1>Limits</h1><p>{FILLER}</p>"
        "<table><caption>Nested <b>Classes</b></caption><colgroup><col><col></colgroup>"
        "<tr><th>Modifier and Type</th><th>Class</th></tr><tr><td>static class</td><td>Anchor</td></tr>"
        "</table></main>")
    md = extract_page(html, "https://docs.example.org/limits.html").markdown
    assert md.endswith("Nested **Classes**\n\n| Modifier and Type | Class |\n| --- | --- |\n"
                       "| static class | Anchor |\n")


def test_a_one_cell_table_does_not_keep_chrome_as_content() -> None:
    """Removals by class or role spare what holds a data table; a one-cell table only frames."""
    html = _doc(
        "<main><div role='banner'><table><tr><td><div>MyProject 2.1</div></td></tr></table></div>"
        f"<h1>Guide</h1><p>{FILLER}</p>"
        "<div role='complementary'><table><tr><th>Option</th><th>Default</th></tr>"
        "<tr><td>port</td><td>8080</td></tr></table></div></main>")
    md = extract_page(html, "https://docs.example.org/guide.html").markdown
    assert "MyProject" not in md
    assert "| port | 8080 |" in md


def test_code_blocks_are_spaced_as_a_browser_copies_them() -> None:
    html = _doc(f"<main><h1>Assert</h1><p>{FILLER}</p>"
                "<pre>public&nbsp;static void assertTrue\u200b(java.lang.String&#160;message, boolean condition)"
                "</pre></main>")
    md = extract_page(html, "https://docs.example.org/Assert.html").markdown
    assert "```\npublic static void assertTrue(java.lang.String message, boolean condition)\n```" in md


def test_touching_runs_of_the_same_inline_markup_read_as_one() -> None:
    """Sphinx writes a parameter's type one token an element: as Markdown each would be its own
    emphasis, a string of markers no renderer reads back as the type."""
    html = _doc(
        f"<main><h1>API</h1><p>{FILLER}</p><ul>"
        "<li><strong>static_folder</strong> (<em>Optional</em><em>[</em><em>Union</em><em>[</em><em>str</em>"
        "<em>, </em><em>PathLike</em><em>]</em><em>]</em>) – the folder.</li>"
        "<li><em>float</em> <em>or</em> <em>tuple</em>, and the pattern <code>*</code><code>/test/</code>"
        "<code>*</code></li></ul></main>")
    md = extract_page(html, "https://docs.example.org/api.html").markdown
    assert "- **static\\_folder** (*Optional\\[Union\\[str, PathLike\\]\\]*) – the folder.\n" in md
    assert "- *float* *or* *tuple*, and the pattern `*/test/*`\n" in md


def _manual_page(content: str, *, head: str = "") -> str:
    """A hand-made manual page: no main element and no generator, the content in a named div."""
    return _doc(
        "<div id='page-header'><p class='menu'><a href='/mod/'>Modules</a> | <a href='/glossary.html'>Glossary</a>"
        "</p><p class='apache'>Apache HTTP Server Version 2.4</p></div>"
        "<div id='path'><a href='/'>Apache</a> &gt; <a href='/docs/'>Docs</a></div>"
        f"<div id='page-content'>{content}</div>"
        "<div id='footer'><p class='apache'>Copyright 2024 The Apache Software Foundation.</p></div>",
        head=head)


_MANUAL_SECTIONS = (
    "<h1>Apache Module mod_example</h1><p>" + FILLER + "</p>"
    "<h2>Invocation modes</h2><p>" + FILLER + "</p>"
    "<pre class='prettyprint lang-config'>&lt;Location \"/protected/\"&gt;\n  AuthType Basic\n&lt;/Location&gt;</pre>"
    "<h2>Limitations</h2><p>" + FILLER + "</p><h2>Logging</h2><p>" + FILLER + "</p>")


def test_a_page_without_a_main_element_is_cut_to_the_container_it_names_as_its_content() -> None:
    """trafilatura, the fallback, dropped such a manual's headings and broke its code blocks."""
    md = extract_page(_manual_page(_MANUAL_SECTIONS), "https://httpd.example.org/mod/mod_example.html").markdown
    assert md.startswith("# Apache Module mod\\_example\n")
    assert "\n## Invocation modes\n" in md and "\n## Logging\n" in md
    assert '```config\n<Location "/protected/">\n  AuthType Basic\n</Location>\n```' in md
    assert "Glossary" not in md and "Copyright" not in md and "Version 2.4" not in md


def test_a_named_container_is_taken_only_for_a_document_holding_most_of_the_text() -> None:
    from harvester.extract.main_element import named_container

    def container(html: str):
        root = extract_mod.parse_html(html)
        found = named_container(root)
        return None if found is None else found.get("id") or found.get("class")

    assert container(_manual_page(_MANUAL_SECTIONS)) == "page-content"
    # The innermost named container that holds most of the text.
    assert container(_manual_page(f"<div class='post-content'>{_MANUAL_SECTIONS}</div>")) == "post-content"
    # A story without code whose subheadings head link lists (a sidebar's widgets) is left to trafilatura.
    widgets = "".join(f"<h3>Upcoming events {i}</h3><ul><li><a href='/e{i}'>Event {i}</a></li></ul>" for i in range(4))
    assert container(_manual_page(f"<p>{FILLER * 3}</p>{widgets}")) is None
    # A container with a minority of the text, or named for what sits beside the content.
    assert container(_doc(f"<div id='content'><p>{FILLER}</p><pre>x = 1</pre></div><div><p>{FILLER * 4}</p></div>")) \
        is None
    assert container(_doc(f"<div class='sidebar-content'><p>{FILLER * 3}</p><pre>x = 1</pre></div>")) is None


def test_an_article_without_a_main_element_keeps_the_article_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """News and blog pages keep trafilatura, which tells their related-story boxes from the story."""
    article_head = "<meta property='og:type' content='article'>"
    calls = []
    original = extract_mod._trafilatura
    monkeypatch.setattr(extract_mod, "_trafilatura", lambda doc, url: calls.append(url) or original(doc, url))
    extract_page(_manual_page(_MANUAL_SECTIONS, head=article_head), "https://news.example.org/story.html")
    extract_page(_manual_page(_MANUAL_SECTIONS), "https://httpd.example.org/mod/mod_example.html")
    assert calls == ["https://news.example.org/story.html"]


def test_images_with_an_empty_alt_are_decorative_and_go() -> None:
    html = _doc(
        f"<main><h1>Topics</h1><p>{FILLER}</p><ul><li><img alt='' src='/images/down.gif'> "
        "<a href='#modes'>Invocation modes</a></li></ul>"
        "<p><img alt='The initial layout' src='/img/layout.png'></p><p><img src='/img/unlabelled.png'></p></main>")
    md = extract_page(html, "https://docs.example.org/topics.html").markdown
    assert "- [Invocation modes](https://docs.example.org/topics.html#modes)\n" in md
    assert "down.gif" not in md
    assert "![The initial layout](https://docs.example.org/img/layout.png)" in md
    assert "![](https://docs.example.org/img/unlabelled.png)" in md  # no alt at all: not said to be decorative
