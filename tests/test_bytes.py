"""One bad byte never costs a page: control characters, NUL, lone surrogates, U+FFFE/U+FFFF, mixed
encodings and odd attribute names, where text enters (harvester.fetch.encoding) and wherever it
reaches lxml (harvester.extract)."""

from __future__ import annotations

import re

import parsel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvester.chunking.chunker import chunk_markdown, whitespace_counter
from harvester.extract.page import extract_page
from harvester.extract.template import learn, page_blocks, remove_template, signature
from harvester.fetch.encoding import MIXED, clean_body, clean_text, corrected_encoding, decode_mixed

# What the strategies put around the marker words: XML-incompatible characters and a few
# ordinary ones, never markup.
BAD = st.text(alphabet=st.sampled_from(
    [*map(chr, range(0x20)), "\x7f", "\x85", "\ud800", "\udfff", "\udc80", "\ufffe", "\uffff", "\ufffd",
     "a", " ", "é", "€"]), max_size=6)
MARKERS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# The page's own prose: bad characters are a few among thousands of ordinary ones, as on a real
# page (a body that is more than 3% control characters is binary data, harvester.fetch.encoding).
FILLER = "<p>" + " ".join(f"Widgets on board {k} render in order and keep their options." for k in range(40)) + "</p>"


def page(bad: list[str], attr_name: str, n: int = 0) -> str:
    b = bad
    return (f"<html><head><title>T{b[0]}itle</title></head><body>"
            f'<div class="bar"><a href="/">Ho{b[1]}me</a> | <a href="/n">Next {b[2]}</a></div><main>'
            f"<p>Page {n} of the site.</p>"
            f"<h1>Head {b[1]} alpha {n}</h1>"
            f"<p>Some prose about widgets and boards number {n}, long enough to be a page {b[2]} beta of its own, "
            f"with more words after it so that nothing is too short.</p>"
            f'<pre><code class="language-python">x = {n} {b[3]}\ngamma = "{b[4]}"\n</code></pre>'
            f"<table><tr><th>delta {b[5]} {n}</th><th>b</th></tr><tr><td>epsilon{b[6]} {n}</td>"
            "<td>&#1;&#x1b;&#12;</td></tr></table>"
            f'<p title="{b[7]}" {attr_name}="v{b[8]}">zeta {b[9]} closes page {n} of this fixture site.</p>'
            f"{FILLER}"
            f'<p class="foot">The footer {b[3]} of every page of this site, with its {b[4]} licence line.</p>'
            "</main></body></html>")


def check(md: str) -> None:
    assert not UNSAFE.search(md)
    for marker in MARKERS:
        assert marker in md, (marker, md)
    chunks = chunk_markdown(md, whitespace_counter, max_tokens=40)
    assert chunks and all(not UNSAFE.search(c.text) for c in chunks)
    "".join(c.text for c in chunks).encode("utf-8")  # no lone surrogate left


ATTR_NAMES = st.sampled_from(["data-x", "x:y", "1abc", "a\x01b", "on-click", "ünï", "a.b", "_"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BAD, min_size=10, max_size=10), ATTR_NAMES)
def test_bad_characters_anywhere_cost_no_text_from_a_string(bad, attr_name):
    md = extract_page(page(bad, attr_name), "http://h/p.html").markdown
    check(md)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BAD, min_size=10, max_size=10), ATTR_NAMES, st.sampled_from(["utf-8", "cp1252", "latin-1"]))
def test_bad_characters_cost_no_text_through_the_crawl_path(bad, attr_name, label):
    # As a crawl sees it: bytes (lone surrogates as the invalid UTF-8 a broken server sends) with a
    # charset label, fixed and cleaned by the fetch rules, parsed by parsel as the spider does, then
    # the learned template and extraction work on that tree.
    parsed = []
    for n in range(3):
        body = page(bad, attr_name, n).encode("utf-8", "surrogatepass")
        encoding = corrected_encoding(body, label) or label
        cleaned = clean_body(body, encoding)
        if cleaned is not None:
            body = cleaned
            encoding = "utf-8" if encoding == MIXED else encoding
        text = body.decode(encoding, "replace")
        doc = parsel.Selector(text=text).root
        parsed.append((text, doc, page_blocks(doc)))
    template = learn([signature(blocks) for _, _, blocks in parsed])
    text, doc, blocks = parsed[0]
    md = extract_page(text, "http://h/p.html", doc=doc, template=lambda root: remove_template(blocks, template)).markdown
    check(md)
    assert "licence line" not in md  # the template went, bad bytes and all


def test_a_control_character_in_a_code_block_of_a_parsed_tree_keeps_the_page():
    # The reported failure: "All strings must be XML compatible" raised in prepare_code, on a tree
    # parsel built (its parser keeps \x0c and \x1b), and the whole page dropped.
    html = ("<html><body><div role=main><h1>API</h1><p>The function below is documented here, with all "
            "of its arguments and what it returns.</p><pre>def f():\n    \x0c\n    return '\x1b[0m'</pre>"
            "</div></body></html>")
    doc = parsel.Selector(text=html).root
    md = extract_page(html, "http://h/api.html", doc=doc).markdown
    assert "def f():" in md and "return '[0m'" in md


def test_control_character_references_are_dropped():
    html = "<html><body><main><h1>Refs</h1><p>" + "word " * 30 + "a&#1;b&#x1B;c&#12;d</p></main></body></html>"
    md = extract_page(html, "http://h/").markdown
    assert "abcd" in md


def test_mixed_utf8_and_windows_1252_keeps_both():
    body = "café — naïve ".encode() + b"costs 5 \x80 and \x93quoted\x94"
    assert corrected_encoding(body, "utf-8") == MIXED
    assert decode_mixed(body) == "café — naïve costs 5 € and \u201cquoted\u201d"
    assert clean_body(body, MIXED).decode("utf-8") == decode_mixed(body)
    # Mostly Windows-1252 (no valid UTF-8 sequence): the old rule.
    assert corrected_encoding("café naïve".encode("cp1252"), "utf-8") == "cp1252"


def test_clean_body_drops_control_bytes_but_leaves_documents_and_utf16_alone():
    prose = b"<p>" + b"Plain words of a page. " * 20 + b"</p>"
    assert clean_body(prose + b"<p>a\x00b\x0cc\td\n</p>", "utf-8") == prose + b"<p>abc\td\n</p>"
    assert clean_body(b"<p>clean</p>", "utf-8") is None
    assert clean_body(b"%PDF-1.4\n\x00\x01binary", "utf-8") is None
    assert clean_body("<p>x</p>".encode("utf-16"), "utf-16") is None
    assert clean_body(bytes(range(32)) * 40, "latin-1") is None  # binary: extraction refuses it
    assert clean_body(bytes(range(256)) * 40, "cp1252") is None


def test_clean_text():
    assert clean_text("a\x00b\ud800c\ufffed\tE\n") == "abcd\tE\n"
    assert clean_text("plain") == "plain"


@pytest.mark.parametrize("body", [bytes(range(256)) * 40, b"\x89PNG\r\n\x1a\n" + bytes(4000),
                                  b"PK\x03\x04" + bytes(range(200)) * 20, bytes(range(256)) * 3 + b"<html>" * 50])
@pytest.mark.parametrize("encoding", ["utf-8", "cp1252", "latin-1"])
def test_binary_served_as_html_is_not_content(body, encoding):
    from harvester.extract.page import NoContent

    text = body.decode(encoding, "replace")
    with pytest.raises(NoContent) as info:
        extract_page(text, "http://h/blob")
    assert info.value.reason == "not_html"
