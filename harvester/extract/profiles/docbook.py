"""DocBook XSL: ``<meta name="generator" content="DocBook XSL Stylesheets V1.79.2">``.

Chunked DocBook HTML puts the article in one division (``div.chapter``,
``div.sect1``...) directly under ``<body>``, between ``div.navheader`` and
``div.navfooter`` tables (prev/up/next). Admonitions are ``div.note`` etc.
with an ``h3.title`` (or a table when admon graphics are on).
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView

_DIVISIONS = ("book", "part", "chapter", "appendix", "preface", "article", "refentry", "sect1", "section",
              "reference", "glossary", "index", "colophon", "set", "bibliography", "sect2", "simplesect")


def _detect(v: PageView) -> bool:
    return v.generated_by("docbook") or v.has_class("navheader", "navfooter")


PROFILE = GeneratorProfile(
    name="docbook",
    detect=_detect,
    writes_pages_whole=True,
    generators=("docbook",),
    # One comma list: the first division in document order, directly under
    # <body> or under one wrapper (some sites add a layout div).
    main=(", ".join([f"body > div.{d}" for d in _DIVISIONS] + [f"body > div > div.{d}" for d in _DIVISIONS]),),
    noise=("div.navheader", "div.navfooter", "a.indexterm"),
    pager=("div.navheader", "div.navfooter"),
    toc=("div.toc", "div.list-of-figures", "div.list-of-tables", "div.list-of-examples"),
    admonitions=("div.note", "div.warning", "div.tip", "div.important", "div.caution"),
    admonition_titles=("h3.title", "th[align=left]", "div.title"),
)
