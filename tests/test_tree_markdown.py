"""The default converter ("lxml", harvester.extract.converters.lxml) writes what markdownify writes.

It restates markdownify's rules over the lxml tree for speed; the library itself (with the
project's options, harvester.extract.converters.markdownify) is the reference: every main element
of three real docs sites, and thousands of random trees of every tag either converter has a rule
for, must come out byte-identical.
"""
from __future__ import annotations

import contextlib
import copy
import random
import subprocess
import sys
from pathlib import Path

import lxml.html
import pytest
from lxml import etree

from harvester.extract import converters
from harvester.extract.converters import lxml as lxml_converter
from harvester.extract.converters import markdownify as markdownify_converter
from harvester.extract.page import NoContent, extract_page

SITES = ["/usr/share/doc/python-flask-doc/html", "/usr/share/doc/python-requests-doc/html",
         "/usr/share/doc/python-scrapy-doc/html"]


def _main_elements(site: str) -> list:
    """The cleaned main elements extract_page hands its converter, for every page of ``site``."""
    mains = []

    def capture(root):
        mains.append(copy.deepcopy(root))
        return lxml_converter.element_to_markdown(root)

    converters.register_converter("capture-for-test", lambda: capture)
    for page in sorted(Path(site).rglob("*.html")):
        if "_static" in page.parts:
            continue
        with contextlib.suppress(NoContent):
            extract_page(page.read_text(errors="replace"), f"http://docs.test/{page.name}",
                         converter="capture-for-test")
    return mains


@pytest.mark.parametrize("site", SITES)
def test_the_tree_converter_writes_what_markdownify_writes_on_real_docs(site: str) -> None:
    mains = _main_elements(site)
    assert len(mains) >= 15
    for main in mains:
        expected = markdownify_converter.element_to_markdown(main)
        assert lxml_converter.element_to_markdown(main) == expected, lxml.html.tostring(main)[:300]


_TAGS = ["p", "div", "span", "a", "code", "pre", "em", "strong", "b", "i", "ul", "ol", "li", "dl", "dt", "dd",
         "table", "thead", "tbody", "tfoot", "tr", "td", "th", "h1", "h2", "h3", "h7", "blockquote", "br", "hr",
         "img", "kbd", "samp", "del", "s", "sub", "sup", "q", "section", "article", "caption", "figcaption",
         "figure", "video", "source", "script", "style", "list", "u", "aside", "nav"]
_TEXTS = ["", " ", "  ", "\n", " \n\t ", "word", "a_b", "x*y", "[link]", "&lt;tag>", "back\\slash", "`tick`",
          "``", "|pipe|", "http://x.y/a_b", "\u00a0", "--", "# h", "1. one", "é", "\r\n"]
_ATTRIBUTES = {
    "a": [("href", ["", "http://x.y/a_b", "word", "#"]), ("title", ["", 't"q'])],
    "img": [("src", ["", "i.png"]), ("alt", ["", "alt"]), ("title", ["", "t"])],
    "ol": [("start", ["", "3", "x"])], "td": [("colspan", ["", "2", "x"])], "th": [("colspan", ["2"])],
    "pre": [("data-lang", ["", "py"])], "video": [("src", ["", "v.mp4"]), ("poster", ["", "p.png"])],
    "source": [("src", ["s.mp4"])],
}


def _random_html(rng: random.Random, depth: int) -> str:
    out = []
    for _ in range(rng.randint(0, 4)):
        if depth <= 0 or rng.random() < 0.35:
            out.append(rng.choice(_TEXTS))
            continue
        tag = rng.choice(_TAGS)
        attributes = "".join(f' {name}="{rng.choice(values)}"' for name, values in _ATTRIBUTES.get(tag, [])
                             if rng.random() < 0.7)
        if tag in ("br", "hr", "img", "source"):
            out.append(f"<{tag}{attributes}>")
        else:
            out.append(f"<{tag}{attributes}>{_random_html(rng, depth - 1)}</{tag}>")
        if rng.random() < 0.1:
            out.append("<!-- a comment -->")
    return "".join(out)


def test_the_tree_converter_writes_what_markdownify_writes_on_random_trees() -> None:
    compared = 0
    for seed in range(3000):
        rng = random.Random(seed)
        top = rng.choice(["div", "tbody", "tr", "table", "pre", "li", "ol", "thead", "h2", "td", "dl", "span"])
        try:
            root = lxml.html.fragment_fromstring(f"<{top}>{_random_html(rng, 5)}</{top}>")
        except etree.ParserError:  # lxml refuses some fragments (several roots): nothing to compare
            continue
        before = lxml.html.tostring(root)
        expected = markdownify_converter.element_to_markdown(root)
        assert lxml_converter.element_to_markdown(root) == expected, (seed, before)
        assert lxml.html.tostring(root) == before  # the element is left as it was
        compared += 1
    assert compared > 2500


def test_the_default_converter_loads_neither_markdownify_nor_bs4() -> None:
    code = ("import sys; from harvester.extract.page import extract_page; "
            "page = extract_page(open(sys.argv[1]).read(), 'http://docs.test/quickstart.html'); "
            "assert page.markdown.startswith('# Quickstart'), page.markdown[:80]; "
            "print([m for m in ('markdownify', 'bs4') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code, f"{SITES[0]}/quickstart.html"], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"
    assert converters.DEFAULT_CONVERTER == "lxml"
    assert set(converters.available_converters()) >= {"lxml", "markdownify"}
