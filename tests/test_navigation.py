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
    "mkdocs-material": ('<footer><nav class="md-footer__inner"><a class="md-footer__link md-footer__link--prev" '
                        'href="../intro/">Intro</a><a class="md-footer__link md-footer__link--next" href="../next/">'
                        'Next</a></nav></footer>', {"../intro/", "../next/"}),
    "docusaurus": ('<nav class="pagination-nav"><a class="pagination-nav__link pagination-nav__link--next" '
                   'href="/docs/b">B</a></nav>', {"/docs/b"}),
    "mdbook": ('<nav class="nav-wrapper"><a rel="prev" href="a.html" class="mobile-nav-chapters previous">'
               '&lt;</a><a rel="next prefetch" href="c.html" class="mobile-nav-chapters next">&gt;</a></nav>',
               {"a.html", "c.html"}),
    "vitepress": ('<div class="VPDocFooter"><nav class="prev-next"><div class="pager"><a class="VPLink link '
                  'pager-link next" href="/guide/b.html">Next</a></div></nav></div>', {"/guide/b.html"}),
    "docbook": ('<div class="navfooter"><table><tr><td><a accesskey="p" href="ch01.html">Prev</a></td><td>'
                '<a accesskey="n" href="ch03.html">Next</a></td></tr></table></div>', {"ch01.html", "ch03.html"}),
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
