"""VitePress: ``<meta name="generator" content="VitePress v1.3.4">``.

The article is ``div.vp-doc`` inside ``main``; the footer (edit link, last
updated, prev/next) and the outline aside are siblings. Custom containers
(``::: tip``) are ``div.custom-block`` with a ``p.custom-block-title``.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView


def _detect(v: PageView) -> bool:
    return v.generated_by("vitepress") or v.has_class("VPDoc", "vp-doc")


PROFILE = GeneratorProfile(
    name="vitepress",
    detect=_detect,
    # A prerendered client-side app: a route may be client-only, its HTML a shell.
    writes_pages_whole=False,
    generators=("vitepress",),
    main=("div.vp-doc", "main.main"),
    noise=("a.header-anchor", "button.copy", "span.lang", "div.edit-info", "div.edit-link",
           "p.last-updated"),
    pager=("nav.prev-next", "footer.VPDocFooter"),
    version_switcher=("div.VPFlyout",),
    toc=("aside.aside", "div.VPDocAside", "nav.VPDocAsideOutline", "div.VPLocalNav"),
    admonitions=("div.custom-block", "details.custom-block"),
    admonition_titles=("p.custom-block-title", "summary"),
)
