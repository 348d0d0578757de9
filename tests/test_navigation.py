from parsel import Selector

from harvester.spiders.navigation import pager_links, toc_links
from tests.conftest import doc_root


def test_sphinx_pallets_page_pager_and_toc():
    html = (doc_root("flask") / "quickstart.html").read_text()
    pager = pager_links(Selector(html))
    assert "tutorial/index.html" in pager and "installation.html" in pager
    toc = toc_links(Selector(html))
    assert "index.html" in toc


SNIPPETS = {
    "mkdocs-material": (('<footer><nav class="md-footer__inner"><a class="md-footer__link md-footer__link--prev" '
                        'href="../intro/">Intro</a><a class="md-footer__link md-footer__link--next" href="../next/">'
                        'Next</a></nav></footer>'), {"../intro/", "../next/"}),
    "docusaurus": (('<nav class="pagination-nav"><a class="pagination-nav__link pagination-nav__link--next" '
                   'href="/docs/b">B</a></nav>'), {"/docs/b"}),
    "mdbook": (('<nav class="nav-wrapper"><a rel="prev" href="a.html" class="mobile-nav-chapters previous">'
               '&lt;</a><a rel="next prefetch" href="c.html" class="mobile-nav-chapters next">&gt;</a></nav>'),
               {"a.html", "c.html"}),
    "vitepress": (('<div class="VPDocFooter"><nav class="prev-next"><div class="pager"><a class="VPLink link '
                  'pager-link next" href="/guide/b.html">Next</a></div></nav></div>'), {"/guide/b.html"}),
    "docbook": (('<div class="navfooter"><table><tr><td><a accesskey="p" href="ch01.html">Prev</a></td><td>'
                '<a accesskey="n" href="ch03.html">Next</a></td></tr></table></div>'), {"ch01.html", "ch03.html"}),
    "head-link": ('<head><link rel="next" href="two.html"><link rel="prev" href="zero.html"></head>',
                  {"two.html", "zero.html"}),
}


def test_pager_links_of_each_generator():
    for name, (html, expected) in SNIPPETS.items():
        assert set(pager_links(Selector(html))) == expected, name


def test_pager_ignores_fragments_and_scripts():
    html = '<a rel="next" href="#top">x</a><a rel="next" href="javascript:void(0)">y</a>'
    assert pager_links(Selector(html)) == []


def test_toc_links_of_sidebars():
    html = ('<nav class="md-nav"><a href="a/">A</a></nav><nav class="sidebar"><ol class="chapter">'
            '<li><a href="b.html">B</a></li></ol></nav><div class="toc"><a href="c.html">C</a></div>'
            '<div class="content"><a href="not-nav.html">body link</a></div>')
    assert toc_links(Selector(html)) == ["a/", "b.html", "c.html"]


def test_content_links_come_from_the_page_body_only():
    from harvester.spiders.navigation import content_links

    html = ('<nav><a href="menu.html">menu</a></nav><div role="main"><p>See <a href="notes.html">notes</a>'
            '</p></div><footer><a href="legal.html">legal</a></footer>')
    assert content_links(Selector(html)) == ["notes.html"]


def _as_cssselect_gives(page: Selector, selectors: tuple[str, ...]) -> list[str]:
    """The lists' meaning: parsel's CSS over all the selectors at once, cleaned as the lists are."""
    seen: dict[str, None] = {}
    for href in page.css(", ".join(selectors)).xpath("@href").getall():
        href = href.strip()
        if href and not href.startswith(("#", "javascript:", "mailto:")):
            seen.setdefault(href, None)
    return list(seen)


def test_the_lists_match_what_css_over_every_selector_gives():
    """Only the selectors a page's class names allow are evaluated, those of one compound joined
    per tag: the same links in the same order as the plain CSS union, on real docs pages, every
    generated fixture and snippets where a class is absent, negated, or only on an ancestor."""
    from pathlib import Path

    from harvester.spiders.navigation import (
        CONTENT_SELECTORS,
        PAGER_SELECTORS,
        TOC_SELECTORS,
        content_links,
        page_classes,
    )

    pages = [Selector(path.read_text(errors="replace"))
             for path in sorted(Path(__file__).parent.joinpath("fixtures").rglob("*.htm*"))]
    pages += [Selector((doc_root(corpus) / name).read_text())
              for corpus, name in (("flask", "api.html"), ("flask", "quickstart.html"), ("scrapy", "index.html"))]
    pages += [Selector(html) for html, _ in SNIPPETS.values()]
    pages += [Selector(html) for html in (
        '<div class="related"><a accesskey="N" href="n.html">n</a></div><a accesskey="N" href="x.html">x</a>',
        ('<div class="pager"><a href="p.html">p</a></div><div class="VPDocFooter"><div class="pager">'
         '<a href="q.html">q</a></div></div>'),
        ('<div class="toc toctree-wrapper"><ul><li><a href="a.html">a</a></li></ul></div><main><a href="b.html">'
         'b</a><div class="body"><a href="b.html">again</a><a href="c.html">c</a></div></main>'),
        '<nav aria-label="Docs"><a href="d.html">d</a></nav><aside><nav><a href=" e.html ">e</a></nav></aside>',
        '<p class="md-footer__link">not a link</p><a class="md-footer__link" href="f.html">f</a>',
    )]
    assert len(pages) > 100
    for page in pages:
        classes = page_classes(page)
        assert pager_links(page, classes) == _as_cssselect_gives(page, PAGER_SELECTORS)
        assert toc_links(page, classes) == _as_cssselect_gives(page, TOC_SELECTORS)
        assert content_links(page) == _as_cssselect_gives(page, CONTENT_SELECTORS)


def test_a_page_of_new_class_names_each_time_does_not_grow_the_compiled_queries():
    from harvester.spiders.navigation import _PAGER

    pagers = ["next-page", "prev-page", "left-prev", "right-next", "md-flex", "nav-chapters", "pager-link",
              "pagination-nav__link"]
    for mask in range(1, 2 ** len(pagers)):
        used = [name for bit, name in enumerate(pagers) if mask >> bit & 1]
        html = "".join(f'<a class="{name}" href="{name}.html">{name}</a>' for name in used)
        assert pager_links(Selector(html)) == [f"{name}.html" for name in used]
    assert len(_PAGER._compiled) <= _PAGER.MAX_COMPILED
