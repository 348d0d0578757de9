"""AsciiDoc and Asciidoctor: ``<meta name="generator" content="AsciiDoc 10.2.0">`` (or
``"Asciidoctor 2.0.20"``).

A page is ``<body>`` holding ``div#header``, ``div#content`` and ``div#footer`` ("Last updated
..."). The header is the document's own: its title ``h1``, in a manual page the NAME section (the
command's one-line summary, what most questions about it match), and in Asciidoctor the author
and revision line (``div.details``) and, by default, the table of contents (``div#toc``). So the
article is the body less the footer, the contents and the revision line. Admonitions are
``div.admonitionblock`` tables whose ``td.icon`` holds the label.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _detect(v: PageView) -> bool:
    return v.generated_by("asciidoc") or (v.has_id("footer-text") and v.has_id("header") and v.has_id("content"))


PROFILE = GeneratorProfile(
    name="asciidoc",
    detect=_detect,
    writes_pages_whole=True,
    generators=("asciidoc",),
    main=("body",),
    noise=("div#footer", "div#header > div.details", "div#footnotes > hr"),
    toc=("div#toc",),
    admonitions=("div.admonitionblock",),
    admonition_titles=("td.icon",),
)
