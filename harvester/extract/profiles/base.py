"""The profile data type, compiled CSS selectors and the shared page view the profiles detect
with (the registry and detection are in ``harvester.extract.profiles``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import cssselect
from cssselect.parser import Attrib, Class, CombinedSelector, Hash
from cssselect.parser import Element as CElement
from lxml import etree
from lxml.cssselect import CSSSelector


@dataclass(frozen=True)
class GeneratorProfile:
    """How one documentation generator lays out a page.

    Every selector field is a tuple of CSS selectors. ``main`` is tried in
    order (first entry that matches an element with text wins; an entry may be
    a comma list, matched in document order). The other fields are matched
    inside the main element and removed, except ``breadcrumbs`` (read from the
    whole page first), ``admonitions`` (rewritten to labelled blockquotes,
    their title found with ``admonition_titles``), ``signatures`` (API
    entry signatures rewritten as code) and ``layout`` (wrappers kept as plain blocks).

    ``writes_pages_whole``: the generator writes every page complete into its HTML, with no
    client-side framework that could render a route of its own (the render policy never sends such
    a page to the browser). Every profile states it: it is what a new generator's author must know.
    """

    name: str
    detect: Callable[[PageView], bool]
    main: tuple[str, ...]
    writes_pages_whole: bool
    noise: tuple[str, ...] = ()
    breadcrumbs: tuple[str, ...] = ()
    pager: tuple[str, ...] = ()
    version_switcher: tuple[str, ...] = ()
    toc: tuple[str, ...] = ()
    admonitions: tuple[str, ...] = ()
    admonition_titles: tuple[str, ...] = ()
    signatures: tuple[str, ...] = ()
    # Lists and other wrappers that only lay the page out: kept as plain blocks, not as Markdown lists.
    layout: tuple[str, ...] = ()
    # Lower-case prefixes of <meta name="generator" content=...>.
    generators: tuple[str, ...] = ()

    @property
    def chrome(self) -> tuple[str, ...]:
        """Every selector whose match is removed from the main element."""
        return self.noise + self.breadcrumbs + self.pager + self.version_switcher + self.toc


@lru_cache(maxsize=512)
def compile_css(selectors: str | tuple[str, ...]) -> Selector:
    """A compiled, cached matcher for a CSS selector (or several, joined
    with ','): call it with an element to get the matching elements of its
    subtree (itself included) in document order. Raises ValueError for
    invalid CSS."""
    css = selectors if isinstance(selectors, str) else ", ".join(selectors)
    return Selector(css)


class Selector:
    """CSS matching tuned for profile selectors.

    lxml's CSSSelector turns every comma-separated selector into its own
    XPath traversal with a contains(concat(...)) test per element, slow on a
    large API page and slower still for a profile's chrome list. Profile selectors are simple and name their tag (``div.body``,
    ``dl.py > dt``), so they are parsed with cssselect's own parser and
    matched in Python during one ``iter()`` over just those tag names (a
    C-level filter), comparing class-token sets. Anything else (untagged,
    pseudo-classes...) uses lxml's CSSSelector, so any valid CSS works.
    """

    def __init__(self, css: str) -> None:
        self.css = css
        try:
            parsed = cssselect.parse(css)
        except cssselect.SelectorError as exc:
            raise ValueError(f"invalid CSS selector {css!r}: {exc}") from exc
        self._by_tag: dict[str, list[tuple]] | None = {}
        try:
            for sel in parsed:
                if sel.pseudo_element is not None:
                    raise _Unsupported
                chain = _chain(sel.parsed_tree)
                if chain[0][0] is None:
                    raise _Unsupported
                self._by_tag.setdefault(chain[0][0], []).append(chain)
        except _Unsupported:
            self._by_tag = None
            self._xpath = CSSSelector(css, translator="html")
            return
        self._tags = tuple(self._by_tag)
        # Per tag, the classes of which an element needs one to match, when every selector for
        # the tag names a class (None otherwise): most elements are told apart by that alone,
        # before the selectors are tried one by one (a <dt> against ~20).
        self._needs_class: dict[str, frozenset[str] | None] = {
            tag: frozenset().union(*(chain[0][1] for chain in chains))
            if all(chain[0][1] for chain in chains) else None
            for tag, chains in self._by_tag.items()
        }

    def __call__(self, root) -> list:
        if self._by_tag is None:
            return self._xpath(root)
        by_tag, needs_class = self._by_tag, self._needs_class
        out = []
        for el in root.iter(*self._tags):
            # Class tokens and the parent are read once per element, not
            # once per selector: a <dt> is tested against ~20 selectors.
            cls = el.get("class")
            tokens = _class_tokens(cls) if cls else _NO_CLASSES
            needed = needs_class[el.tag]
            if needed is not None and needed.isdisjoint(tokens):
                continue  # every selector for its tag names a class it does not have
            parent = ptokens = None
            for chain in by_tag[el.tag]:
                _, classes, ident, attrs, _ = chain[0]
                if (classes and not classes <= tokens) or (ident is not None and el.get("id") != ident) \
                        or (attrs and not all(t(el) for t in attrs)):
                    continue
                if len(chain) > 1:
                    if chain[0][4] != ">":
                        if not any(_match(anc, chain, 1) for anc in el.iterancestors()):
                            continue
                    else:
                        if parent is None:
                            parent = el.getparent()
                            if parent is None:
                                continue
                            pcls = parent.get("class")
                            ptokens = frozenset(pcls.split()) if pcls else _NO_CLASSES
                        ptag, pclasses, pident, pattrs, _ = chain[1]
                        if (ptag is not None and parent.tag != ptag) or (pclasses and not pclasses <= ptokens) \
                                or (pident is not None and parent.get("id") != pident) \
                                or (pattrs and not all(t(parent) for t in pattrs)) \
                                or (len(chain) > 2 and not _match(parent, chain, 1)):
                            continue
                out.append(el)
                break
        return out


_NO_CLASSES: frozenset[str] = frozenset()


@lru_cache(maxsize=4096)
def _class_tokens(cls: str) -> frozenset[str]:
    """The tokens of a class attribute: the same few values recur all over a site's pages."""
    return frozenset(cls.split())


class _Unsupported(Exception):
    pass


def _chain(tree) -> tuple:
    """Right-to-left ((tag, classes, id, attr_tests, combinator), ...) for a
    cssselect tree; the combinator links a compound to the one on its left."""
    out = []
    comb = None
    while isinstance(tree, CombinedSelector):
        if tree.combinator not in (">", " "):
            raise _Unsupported
        out.append(_compound(tree.subselector) + (tree.combinator,))
        tree = tree.selector
    out.append(_compound(tree) + (comb,))
    return tuple(out)


def _compound(node) -> tuple:
    classes, ident, attrs = set(), None, []
    while not isinstance(node, CElement):
        if isinstance(node, Class):
            classes.add(node.class_name)
        elif isinstance(node, Hash):
            ident = node.id
        elif isinstance(node, Attrib) and node.namespace is None:
            attrs.append(_attrib_test(node))
        else:
            raise _Unsupported
        node = node.selector
    tag = None if node.element in (None, "*") else node.element.lower()
    return tag, frozenset(classes), ident, tuple(attrs)


def _compound_ok(el, comp) -> bool:
    tag, classes, ident, attrs, _ = comp
    if tag is not None and el.tag != tag:
        return False
    if classes:
        cls = el.get("class")
        if not cls or not classes.issubset(cls.split()):
            return False
    if ident is not None and el.get("id") != ident:
        return False
    return all(t(el) for t in attrs)


def _match(el, chain, start: int = 0) -> bool:
    if not _compound_ok(el, chain[start]):
        return False
    if start + 1 == len(chain):
        return True
    if chain[start][4] == ">":
        parent = el.getparent()
        return parent is not None and _match(parent, chain, start + 1)
    return any(_match(anc, chain, start + 1) for anc in el.iterancestors())


def _attrib_test(node) -> Callable:
    name, op = node.attrib.lower(), node.operator
    value = node.value.value if node.value is not None else None
    if op == "exists":
        return lambda el: el.get(name) is not None
    ops = {"=": lambda v: v == value, "*=": lambda v: bool(value) and value in v,
           "^=": lambda v: bool(value) and v.startswith(value), "$=": lambda v: bool(value) and v.endswith(value),
           "~=": lambda v: value in v.split(), "|=": lambda v: v == value or v.startswith(value + "-")}
    if op not in ops:
        raise _Unsupported
    check = ops[op]
    return lambda el: (v := el.get(name)) is not None and check(v)


# Elements that may carry a framework's DOM marker (wrapper classes and ids).
# Highlighted code, links and paragraphs never do, and skipping them keeps
# the marker pass cheap on large API pages.
_MARKER_TAGS = ("html", "body", "div", "main", "article", "nav", "section", "aside", "header", "footer",
                "ul", "ol")


class PageView:
    """Read-only facts about a parsed page that profile detectors share.

    Head facts are computed on first use; ``has_class``/``has_id`` trigger
    one pass over the structural elements, done at most once per page.
    """

    def __init__(self, root) -> None:
        self.root = root
        self.head = root.find("head")
        self.body = root.find("body")

    @cached_property
    def generator(self) -> str:
        """All <meta name="generator"> contents, lower case, ' ; '-joined."""
        if self.head is None:
            return ""
        vals = [m.get("content") or "" for m in self.head.iter("meta")
                if (m.get("name") or "").lower() == "generator"]
        return " ; ".join(v.strip().lower() for v in vals if v.strip())

    @cached_property
    def assets(self) -> str:
        """Script src, stylesheet href and script ids of <head>, lower case."""
        if self.head is None:
            return ""
        parts = []
        for el in self.head.iter("script", "link"):
            parts.append(el.get("src") or el.get("href") or "")
            if el.get("id"):
                parts.append("#" + el.get("id"))
        return " ".join(parts).lower()

    @cached_property
    def comments(self) -> str:
        """Text of the comments in <head> and before <html> (mdBook and
        Javadoc sign their pages there), lower case."""
        out = []
        if self.head is not None:
            out += [c.text or "" for c in self.head.iter(etree.Comment)]
        prev = self.root.getprevious()
        while prev is not None:
            if prev.tag is etree.Comment:
                out.append(prev.text or "")
            prev = prev.getprevious()
        return " ".join(out).lower()

    @cached_property
    def top_classes(self) -> frozenset[str]:
        """Class tokens of <html> and <body> (cheap theme markers)."""
        tokens = (self.root.get("class") or "").split()
        if self.body is not None:
            tokens += (self.body.get("class") or "").split()
        return frozenset(tokens)

    @cached_property
    def _markers(self) -> tuple[frozenset[str], frozenset[str]]:
        classes: set[str] = set()
        ids: set[str] = set()
        for el in self.root.iter(*_MARKER_TAGS):
            cls = el.get("class")
            if cls:
                classes.update(cls.split())
            if el.get("id"):
                ids.add(el.get("id"))
        return frozenset(classes), frozenset(ids)

    def has_class(self, *tokens: str) -> bool:
        """True when a structural element carries any of these class tokens."""
        classes = self._markers[0]
        return any(t in classes for t in tokens)

    def has_id(self, *ids: str) -> bool:
        known = self._markers[1]
        return any(i in known for i in ids)

    def generated_by(self, *prefixes: str) -> bool:
        """True when some generator meta starts with one of the prefixes."""
        return any(g.startswith(prefixes) for g in self.generator.split(" ; ")) if self.generator else False
