"""GNU Texinfo (makeinfo): ``<meta name="Generator" content="makeinfo">``, the manuals of GNU and of
many other command-line tools, one node per page.

The node is a division directly under ``<body>`` (``div.chapter``, ``div.section``... in Texinfo 6;
``div.chapter-level-extent``, ``div.section-level-extent``... in Texinfo 7), with the node's
navigation line ("Next: ..., Up: ... [Contents][Index]") above and below it, in ``div.header`` (6)
or ``div.nav-panel`` (7), each set off by an ``<hr>``. Headings carry ``a.copiable-link``
pilcrows (7). The body holds nothing else, so it is the article less those.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _detect(v: PageView) -> bool:
    return v.generated_by("makeinfo", "texi2any")


PROFILE = GeneratorProfile(
    name="texinfo",
    detect=_detect,
    writes_pages_whole=True,
    generators=("makeinfo", "texi2any"),
    main=("body",),
    noise=("a.copiable-link", "hr"),
    pager=("div.header", "div.nav-panel"),
    toc=("div.Contents_element", "div.Overview_element", "div.element-contents", "div.element-shortcontents",
         "div.contents", "div.shortcontents"),
)
