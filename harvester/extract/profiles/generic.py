"""The fallback profile for pages of unknown generators.

Its main elements are the generic ones (schema.org ``articleBody``,
``[role=main]``, ``main``, a single ``article``); its chrome is the chrome of
every registered profile plus common widget classes, because unknown sites
often reuse a theme without its generator markers. The extractor only drops
such generic matches when they do not hold prose (see ``extract._holds_prose``).
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile

# Widget classes no particular generator owns.
_COMMON_NOISE = ("a.anchorjs-link", "a.anchor-link", "button.copy-button", "div.copy-button",
                 "div.edit-this-page", "a.edit-page-link", "div.editthispage", "a.skip-link",
                 "a.skip-to-content", "div.searchbox", "div.toc-mobile", "div.mobile-nav",
                 "nav.breadcrumbs", "div.breadcrumbs", "ol.breadcrumb", "ul.breadcrumb", "div.prev-next-bottom",
                 "div.pagination-nav", "div.share-buttons", "div.social-share")


# Chrome only inside its own generator's pages; on an unknown site each matches content or its
# frame (Texinfo's navigation line is div.header, Doxygen's article div.contents).
_PROFILE_ONLY = frozenset({"main", "div.col-md-3", "hr", "div.header", "div.contents", "div#top"})


def _never(_view) -> bool:
    return False


def _union(profiles, attr: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for p in profiles:
        for sel in getattr(p, attr):
            if sel not in _PROFILE_ONLY:
                seen.setdefault(sel, None)
    return tuple(seen)


def build(profiles) -> GeneratorProfile:
    """The generic profile, derived from the registered ones."""
    return GeneratorProfile(
        name="generic",
        detect=_never,
        # No generator recognised: nothing is known of how its pages are written.
        writes_pages_whole=False,
        main=("[itemprop=articleBody]",),
        noise=_COMMON_NOISE + _union(profiles, "noise"),
        pager=_union(profiles, "pager"),
        version_switcher=_union(profiles, "version_switcher"),
        toc=_union(profiles, "toc"),
        admonitions=_union(profiles, "admonitions"),
        admonition_titles=_union(profiles, "admonition_titles"),
        signatures=_union(profiles, "signatures"),
    )
