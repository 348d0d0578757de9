"""harvester.extract.converters.html_to_markdown: the html-to-markdown converter follows the project's
Markdown conventions (checked on the text and, where it matters, by parsing the
output back with markdown-it)."""
from __future__ import annotations

import importlib
import sys

import lxml.html
import pytest

from tests.conftest import import_prerequisite, missing_prerequisite

import_prerequisite("html_to_markdown")

from harvester.extract.converters import html_to_markdown as htmd  # noqa: E402

try:
    from markdown_it import MarkdownIt
except ImportError:  # pragma: no cover
    MarkdownIt = None


def md(html: str) -> str:
    return htmd.convert(lxml.html.fragment_fromstring(html, create_parent="div"))


def tokens(text: str):
    if MarkdownIt is None:
        missing_prerequisite("markdown-it-py is not installed")
    return MarkdownIt("commonmark").enable("table").parse(text)


def inline_text(text: str) -> str:
    """Rendered plain text of all inline content (escapes resolved)."""
    out = []
    for tok in tokens(text):
        if tok.type == "inline":
            out += [c.content for c in tok.children if c.type in ("text", "code_inline")]
    return "".join(out)


# --------------------------------------------------------------------------
# Headings
# --------------------------------------------------------------------------

def test_headings_are_atx_at_every_level():
    out = md("".join(f"<h{n}>Level {n}</h{n}><p>body {n}</p>" for n in range(1, 7)))
    for n in range(1, 7):
        assert f"\n{'#' * n} Level {n}\n" in "\n" + out
    heads = [t for t in tokens(out) if t.type == "heading_open"]
    assert [t.tag for t in heads] == ["h1", "h2", "h3", "h4", "h5", "h6"]
    assert all(t.markup.startswith("#") for t in heads)  # setext markup would be '=' / '-'


def test_heading_with_inline_markup_stays_on_one_line():
    out = md('<h2>The <code>app_ctx</code>\n object <a href="#x">here</a></h2>')
    assert out.splitlines()[0] == "## The `app_ctx` object [here](#x)"


@pytest.mark.parametrize("html", [
    "<div>Title\n---</div>",
    "<p>Title<br>---</p>",
    "<div>Name\n===</div>",
])
def test_literal_underline_never_makes_a_setext_heading(html):
    out = md(html)
    assert not [t for t in tokens(out) if t.type == "heading_open"], out
    assert "Title" in out or "Name" in out


def test_thematic_break_is_kept():
    out = md("<p>before</p><hr><p>after</p>")
    assert [t.type for t in tokens(out) if t.type == "hr"] == ["hr"]


# --------------------------------------------------------------------------
# Code blocks
# --------------------------------------------------------------------------

CODE = "def f(a_b, *args):\n    x = a_b[0]  # **not** bold\n\n\treturn `x` <y> \\z   "


def fences(out: str):
    return [(t.info, t.content) for t in tokens(out) if t.type == "fence"]


@pytest.mark.parametrize(("html", "lang"), [
    ('<pre><code class="language-python">{}</code></pre>', "python"),
    ('<pre class="language-rust">{}</pre>', "rust"),
    ('<div class="highlight-python3 notranslate"><div class="highlight"><pre>{}</pre></div></div>', "python"),
    ('<div class="highlight-default"><div class="highlight"><pre>{}</pre></div></div>', "python"),
    ('<pre data-lang="bash">{}</pre>', "bash"),
    ("<pre>{}</pre>", ""),
])
def test_code_block_is_fenced_with_language_and_exact_text(html, lang):
    esc = CODE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = md("<p>Intro</p>" + html.format(esc) + "<p>Outro</p>")
    assert fences(out) == [(lang, CODE + "\n")]
    assert out.count("```") == 2
    # Nothing inside the block is escaped.
    assert "\\_" not in out.split("```")[1] and "\\*" not in out.split("```")[1]


def test_highlighted_code_with_spans_and_links_is_plain_text():
    html = ('<div class="highlight-python"><div class="highlight"><pre>'
            '<span class="kn">import</span> <span class="nn">os</span>\n'
            '<a href="api.html#x">x</a> <span class="o">=</span> <span class="mi">1</span></pre></div></div>')
    assert fences(md(html)) == [("python", "import os\nx = 1\n")]


def test_nested_pre_gives_one_fence():
    out = md("<pre><pre>inner\n  line</pre></pre>")
    assert fences(out) == [("", "inner\n  line\n")]
    assert out.count("```") == 2


def test_fence_is_longer_than_backticks_inside():
    out = md("<pre>```\nquoted fence\n````</pre>")
    assert fences(out) == [("", "```\nquoted fence\n````\n")]
    assert out.splitlines()[0] == "`````"


def test_br_inside_pre_is_a_newline():
    assert fences(md("<pre>one<br>two</pre>")) == [("", "one\ntwo\n")]


def test_blank_pre_is_dropped():
    out = md("<pre>   \n </pre><p>text</p>")
    assert "```" not in out and out.strip() == "text"


def test_pre_in_table_cell_is_inline_code():
    out = md("<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td><pre>x = 1\ny = 2</pre></td></tr></table>")
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert len(rows) == 3 and "`x = 1 y = 2`" in rows[2]


def test_inline_code_is_not_escaped():
    out = md("<p>Call <code>a_b(*args)[0]</code> now</p>")
    assert "`a_b(*args)[0]`" in out
    assert inline_text(out) == "Call a_b(*args)[0] now"


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------

def table_cells(out: str):
    rows, row = [], None
    toks = tokens(out)
    for i, t in enumerate(toks):
        if t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            row.append(toks[i + 1].content if toks[i + 1].type == "inline" else "")
        elif t.type == "tr_close":
            rows.append(row)
    return rows


def test_gfm_pipe_table_with_pipes_escaped():
    out = md("<table><thead><tr><th>Option</th><th>a|b</th></tr></thead>"
             "<tbody><tr><td>x | y</td><td><code>p|q</code></td></tr></tbody></table>")
    lines = out.strip().splitlines()
    assert lines[0].startswith("| Option |") and set(lines[1].replace(" ", "")) <= set("|-:")
    assert "a\\|b" in lines[0] and "x \\| y" in lines[2] and "`p\\|q`" in lines[2]
    # Two columns per row: the escaped pipes did not split any cell.
    assert table_cells(out) == [["Option", "a|b"], ["x | y", "`p|q`"]]


def test_table_without_th_gets_first_row_as_header():
    out = md("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>")
    assert table_cells(out) == [["a", "b"], ["c", "d"]]


def test_cell_with_paragraphs_stays_on_one_row():
    out = md("<table><tr><th>h</th></tr><tr><td><p>one</p><p>two</p></td></tr></table>")
    assert table_cells(out) == [["h"], ["one two"]]


# --------------------------------------------------------------------------
# Escaping in prose
# --------------------------------------------------------------------------

def test_asterisks_and_underscores_escaped_in_prose():
    out = md("<p>Use *args, **kwargs and __init__ in snake_case</p>")
    assert "\\*args" in out and "\\*\\*kwargs" in out and "\\_\\_init\\_\\_" in out
    assert inline_text(out) == "Use *args, **kwargs and __init__ in snake_case"
    assert not [t for t in tokens(out) if t.type == "inline" and any(c.type == "em_open" for c in t.children)]


def test_brackets_angle_brackets_and_backslashes_escaped_in_prose():
    text = r"Optional[Deferred] [x](y) <div> a\b \* C:\path\[1]"
    out = md("<p>" + text.replace("<", "&lt;").replace(">", "&gt;") + "</p>")
    assert "\\[x\\]\\(y)" in out and "\\<div>" in out
    assert inline_text(out) == text
    kinds = {c.type for t in tokens(out) if t.type == "inline" for c in t.children}
    assert "link_open" not in kinds and "html_inline" not in kinds


def test_escapes_in_link_text_heading_and_cell():
    out = md('<h3>The a_b [x]</h3><p><a href="http://e.org/a_b">snake_name</a></p>'
             "<table><tr><th>c</th></tr><tr><td>*star* _u_</td></tr></table>")
    assert "### The a\\_b \\[x\\]" in out
    assert "[snake\\_name](http://e.org/a_b)" in out  # the URL itself is not escaped
    assert "\\*star\\* \\_u\\_" in out


# --------------------------------------------------------------------------
# Links and images
# --------------------------------------------------------------------------

def test_links_are_kept_inline():
    out = md('<p>See <a href="https://example.org/docs/">the docs</a> and '
             '<a href="https://example.org/">https://example.org/</a>.</p>')
    links = [c.attrs.get("href") for t in tokens(out) if t.type == "inline"
             for c in t.children if c.type == "link_open"]
    assert links == ["https://example.org/docs/", "https://example.org/"]
    assert "[the docs](https://example.org/docs/)" in out


def test_images_keep_alt_text():
    out = md('<p><img src="/img/arch.png" alt="Architecture overview"> and <img alt="Logo only"></p>')
    assert "![Architecture overview](/img/arch.png)" in out
    assert "Logo only" in out and "(<>)" not in out and "![Logo only]" not in out


# --------------------------------------------------------------------------
# Contract
# --------------------------------------------------------------------------

def test_input_element_is_not_modified_and_tail_is_excluded():
    root = lxml.html.fragment_fromstring(
        '<div><pre data-lang="py">x = [1]</pre><p>a [b] <img alt="z"></p></div>')
    root.tail = "TAIL"
    before = lxml.html.tostring(root)
    out = htmd.convert(root)
    assert lxml.html.tostring(root) == before
    assert "TAIL" not in out and out.endswith("\n") and not out.endswith("\n\n")


def test_output_is_tidy():
    out = md("<p>a</p>\n\n\n<div></div><div></div><p>b  </p>")
    assert out == "a\n\nb\n"


def test_lists_and_blockquote():
    out = md("<ul><li>one</li><li>two<ol><li>inner</li></ol></li></ul><blockquote><p>quoted</p></blockquote>")
    types = [t.type for t in tokens(out)]
    assert types.count("bullet_list_open") == 1 and types.count("ordered_list_open") == 1
    assert "blockquote_open" in types and out.startswith("- one\n")


def test_missing_library_raises_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "html_to_markdown", None)
    monkeypatch.delitem(sys.modules, "harvester.extract.converters.html_to_markdown")
    with pytest.raises(ImportError, match="html-to-markdown"):
        importlib.import_module("harvester.extract.converters.html_to_markdown")


def test_adjacent_blockquotes_stay_separate_and_apart_from_paragraphs():
    out = md("<p>Intro text.</p><blockquote><p><strong>Note:</strong> first</p></blockquote>"
             "<blockquote><p><strong>Warning:</strong> second</p></blockquote>"
             "<ul><li>item<blockquote><p>inner</p></blockquote></li></ul>"
             "<table><tr><th>h</th></tr><tr><td>a<blockquote>q</blockquote></td></tr></table>")
    assert "Intro text.\n\n> **Note:** first\n\n> **Warning:** second\n" in out
    types = [t.type for t in tokens(out)]
    assert types.count("blockquote_open") == 3
    assert "\ue010" not in out and "| a q |" in out.replace("> ", "")
