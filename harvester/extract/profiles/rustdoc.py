"""rustdoc API pages: ``<meta name="generator" content="rustdoc">``.

The item lives in ``section#main-content``; item and member signatures are
``pre.item-decl`` and ``h3/h4.code-header`` (rendered as code, the headings
keep their level). ``.rightside`` holds version badges and "Source" links.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _detect(v: PageView) -> bool:
    return v.generated_by("rustdoc") or "rustdoc" in v.top_classes


PROFILE = GeneratorProfile(
    name="rustdoc",
    detect=_detect,
    writes_pages_whole=True,
    generators=("rustdoc",),
    main=("section#main-content", "main"),
    noise=("a.anchor", "span.rightside", "div.rightside", "button#copy-path", "span.out-of-band",
           "a.src", "a.srclink", "summary.hideme", "div.search-form", "rustdoc-toolbar", "a.tooltip",
           # older rustdoc's tooltips: "Notable traits", written inside the signature it follows, and
           # the bare "ⓘ" over an example that panics or does not compile
           "span.notable-traits", "div.information > div.tooltip",
           # the "Run" button after each example: a playground link holding the whole example again
           "a.test-arrow"),
    breadcrumbs=("div.rustdoc-breadcrumbs",),
    version_switcher=("div.version", "span.version"),
    toc=("nav.sidebar", "section#rustdoc-toc", "div.sidebar-elems"),
    admonitions=("div.stab", "div.warning"),
    signatures=("h3.code-header", "h4.code-header"),
)
