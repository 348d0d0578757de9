"""Documentation-generator profiles.

A :class:`GeneratorProfile` names, for one generator (Sphinx theme, MkDocs, Docusaurus
...), the element that holds the article and the chrome around or inside it:
noise, breadcrumbs, prev/next pager, version switcher and table of contents,
plus the markup of its admonitions and API signatures. Profiles are plain
data (CSS selectors) and one small ``detect`` function each; the extractor
(:mod:`harvester.extract.page`, :mod:`harvester.extract.cleaning`) applies them.

Adding a generator: write ``profiles/<name>.py`` with one or more ``GeneratorProfile``
objects and list them in :data:`REGISTRY` below (specific profiles before the
ones they refine, e.g. Sphinx themes before plain Sphinx).

Detection is cheap on purpose. :func:`detect_profile` first matches
``<meta name="generator">`` against every profile's ``generators`` prefixes
(only ``<head>`` is read); only then does it ask each profile's ``detect``,
which looks at ``<head>`` assets/comments first and at DOM markers (class
tokens, ids) last. DOM markers come from one lazy pass over the structural
elements, shared by all profiles through :class:`PageView`.
"""
from __future__ import annotations

from harvester.extract.profiles.base import GeneratorProfile, PageView, Selector, compile_css

__all__ = ["GENERIC", "REGISTRY", "GeneratorProfile", "PageView", "Selector", "compile_css", "detect_profile", "profile_by_name"]

from harvester.extract.profiles import (
    asciidoc,
    docbook,
    docusaurus,
    doxygen,
    generic,
    gitbook,
    hugo,
    javadoc,
    mdbook,
    mkdocs,
    rustdoc,
    sphinx,
    texinfo,
    vitepress,
)

#: Detection order: the first profile whose generator prefix or ``detect``
#: matches wins. Refinements (a Sphinx theme) come before their base.
REGISTRY: list[GeneratorProfile] = [
    *sphinx.PROFILES,
    *mkdocs.PROFILES,
    docusaurus.PROFILE,
    vitepress.PROFILE,
    mdbook.PROFILE,
    gitbook.PROFILE,
    docbook.PROFILE,
    asciidoc.PROFILE,
    texinfo.PROFILE,
    doxygen.PROFILE,
    *hugo.PROFILES,
    rustdoc.PROFILE,
    javadoc.PROFILE,
]

#: Used when no profile matches: generic main elements and the chrome of
#: every known profile (the cleaner then keeps elements that hold prose).
GENERIC: GeneratorProfile = generic.build(REGISTRY)


def detect_profile(doc) -> GeneratorProfile | None:
    """The profile of the generator that produced this page, or None.

    ``doc`` is an lxml document (or any element of it) or a :class:`PageView`.
    """
    view = doc if isinstance(doc, PageView) else PageView(doc.getroottree().getroot())
    if view.generator:
        for profile in REGISTRY:
            if profile.generators and view.generated_by(*profile.generators) and profile.detect(view):
                return profile
    for profile in REGISTRY:
        if profile.detect(view):
            return profile
    return None


def profile_by_name(name: str) -> GeneratorProfile:
    """The registered profile called ``name`` (KeyError if none)."""
    for profile in REGISTRY:
        if profile.name == name:
            return profile
    raise KeyError(name)

