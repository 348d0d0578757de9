"""Learned site templates: the blocks a site repeats on most of its pages (Scrapy-free).

A profile knows the chrome of the generators it names; a site with a theme of its own (or no
known generator) repeats its header, menus, prev/next bars and footer notices on every page, and
where they sit inside the element the extractor keeps, they end up in the Markdown. This module
finds them by repetition and removes them before conversion.

**Blocks.** :func:`page_blocks` walks a page (or the main element a profile names: the caller
chooses, ``harvester.extract.page.template_scope``) once and cuts it into blocks: block-level
elements (paragraphs, list items, headings, cells, divs...) with their own text (nested blocks are
blocks of their own). Each block gets hashes: its *text* (the element's tag/class path, sections
left out so nesting depth does not matter, and its whitespace-collapsed text); its *position*,
counted from the start and from the end of each container (template blocks before the content
keep the first, those after it the second); and, for a block with links and words around them,
or a short one with numbers, its *slots*: its position with its words outside links, the page's
own title and numbers set aside, so "« Installation | Usage »" matches "« Usage | Reference »"
and "Home / Usage" matches "Home / Reference" at the same place. Python's ``hash`` is used: the
hashes live in one process (templates are not persisted).

**Learning.** :class:`TemplateLearner` keeps, per host, the signatures of the first pages
(``sample``, ``DEFAULT_SAMPLE`` by default; pages over ``SAMPLE_MAX_BYTES`` are not learned from, they wait for
the template like the others; a near copy of a sampled page, such as the same page in another docs
version, counts once) and then decides the host's :class:`Template` once: the texts and slots
found on at least 70% of those pages (and on at least 3), and the positions that hold such a block
on as many. A host with fewer pages is decided on what it has when the crawl runs out of pages
(with fewer than 3, nothing is learned). The template is frozen from then on, so every page of the
host, early or late, is judged by the same template; one that changed none of the sampled pages
is dropped (:meth:`TemplateLearner.settle`), so it costs nothing on the host's other pages.

**Removal** (:func:`remove_template`), on one page, of the blocks that match the template:

* a *region*, an element whose text is mostly template blocks (at least two, 60% of its text)
  with little other prose and no heading, code or table of its own, goes whole (a sidebar with its
  page-specific local TOC, a header with its menu);
* template blocks before the page's first or after its last content block ("anchors": a heading,
  code, a table cell or three words of prose that are not template) go: header bars, prev/next
  bars, "Last update" lines, footers; a repeated heading there stays when what follows it is the
  page's own ("See also" over the page's links);
* between anchors, only long template text goes (8 words or more: a licence notice, a support
  notice pasted into every page).

Never removed by learning: code blocks and table cells (outside a template region), a block whose
nested blocks hold anything else, and repeated content that is not on most pages: the same code
example or note on two pages is content. Short labels inside the content ("Parameters:",
"Bases: object") stay even when every page has them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harvester.extract.rewrites import remove_keep_tail

__all__ = ["SAMPLE_MAX_BYTES", "Block", "PageSignature", "Removal", "Template", "TemplateLearner", "learn",
           "page_blocks", "remove_template", "signature"]

# A block is template when on at least this share of the sampled pages, and on at least MIN_PAGES.
SHARE = 0.7
MIN_PAGES = 3
# Pages of a host learned from before its template is decided.
DEFAULT_SAMPLE = 8
# Pages larger than this (bytes of the response) are not learned from; they wait for the template
# the host's other pages decide. Walking one costs in proportion to its size, and the longest
# pages of a docs site (changelogs, generated API indexes) are the least typical of its template.
SAMPLE_MAX_BYTES = 256 * 1024
# A page sharing this share of its blocks with a page already sampled is a copy of it; copies are
# passed over until COPY_PATIENCE times the sample's pages have been seen.
COPY_SHARE = 0.9
COPY_PATIENCE = 4
# Positions judge blocks that changed (a first page without "previous"): only short or link text.
LIGHT_WORDS = 8
# Blocks without links get a slot (numbers set aside) up to this many words.
SLOT_WORDS = 5
# Between the page's content blocks, template text goes only from this many words on.
LONG_WORDS = 8
# A non-template block with this many words outside links is content (an anchor).
ANCHOR_WORDS = 3
LINK_DOMINATED = 0.7
# A region: at least 2 template blocks making this share of its text, with at most PROSE_SHARE of
# non-template prose.
REGION_SHARE = 0.6
PROSE_SHARE = 0.2

_BLOCK_TAGS = frozenset({
    "p", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "td", "th", "caption", "blockquote",
    "div", "section", "nav", "header", "footer", "aside", "article", "main", "ul", "ol", "dl", "table", "tr",
    "thead", "tbody", "tfoot", "form", "figure", "figcaption", "address", "details", "summary", "fieldset",
    "legend", "center", "select", "button", "label", "menu",
})
_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head", "title", "meta", "link",
                        "iframe", "object", "embed", "canvas", "input", "textarea"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Blocks that hold no other block (the HTML parser closes a <p> before a <div>): their text is read
# in one call instead of element by element.
_LEAF_TAGS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "caption", "figcaption", "summary",
                        "label", "button", "legend", "address"})
_CELLS = frozenset({"td", "th", "caption"})
# Class words that mark the current page or an open menu: the same chrome carries them on one page
# and not on the next.
_STATE = re.compile(r"\b(?:current|active|selected|open|opened|expanded|collapsed|show|is-[\w-]+|has-[\w-]+)\b")
_DIGITS = re.compile(r"\d+")
_SECTION_NESTING = ("section",)


class Block:
    """One block of a page: a block-level element and its own text (not its nested blocks')."""

    __slots__ = (
        "chars",
        "el",
        "gone",
        "kind",
        "link_chars",
        "parent",
        "path",
        "pieces",
        "plain",
        "plain_words",
        "pos",
        "rpos",
        "sig",
        "slots",
        "sub_guard",
        "sub_n",
        "sub_prose",
        "sub_tmpl",
        "sub_tot",
        "tmpl",
        "words",
    )

    def __init__(self, el, parent: Block | None, kind: str, path: int, pos: int, rpos: int) -> None:
        self.el = el
        self.parent = parent
        self.kind = kind  # "text", "head", "pre" or "cell"
        self.path = path
        # Where it sits, counting siblings from the start and from the end: template blocks before
        # the content keep the first, those after it (its length varies) the second.
        self.pos = pos
        self.rpos = rpos
        self.pieces: list[str] = []
        self.plain: list[str] = []
        self.link_chars = 0
        self.chars = 0
        self.words = 0
        self.plain_words = 0
        self.sig: int | None = None
        self.slots: tuple[int, int] | None = None

    def add(self, text: str, link: bool) -> None:
        self.pieces.append(text)
        if link:
            self.link_chars += len(text.strip())
        else:
            self.plain.append(text)

    def add_leaf(self, el, link: bool) -> None:
        """All of a leaf element's text, its links' text apart."""
        if not len(el):
            text = el.text or ""
            self.pieces.append(text)
            if link:
                self.link_chars += len(text.strip())
            else:
                self.plain.append(text)
            return
        text = el.text_content()
        self.pieces.append(text)
        if link:
            self.link_chars += len(text.strip())
            return
        plain = text
        for a in el.iter("a"):
            linked = a.text_content()
            if linked:
                self.link_chars += len(linked.strip())
                plain = plain.replace(linked, " ", 1)
        self.plain.append(plain)

    def finish(self, title: str) -> None:
        text = " ".join("".join(self.pieces).split())
        self.pieces = []
        if not text:
            self.plain = []
            return
        self.chars = len(text)
        self.words = text.count(" ") + 1
        self.sig = hash((self.path, text))
        plain = " ".join("".join(self.plain).split())
        self.plain = []
        self.plain_words = plain.count(" ") + 1 if plain else 0
        # A slot: the same place with the same words around its links ("« Install | Usage »" and
        # "« Usage | API »"), the page's own title ("Home / Usage") and numbers ("Last update:
        # 2024-05-02") set aside.
        # Links alone make no slot: a list of links at the end of every page is content as often
        # as it is chrome.
        if (self.link_chars and plain) or (not self.link_chars and self.kind == "text" and self.words <= SLOT_WORDS
                                           and _DIGITS.search(text)):
            if title and title in plain:
                plain = plain.replace(title, "\x00")
            shape = _DIGITS.sub("0", plain)
            self.slots = (hash((self.pos, shape)), hash((self.rpos, shape)))

    @property
    def link_dominated(self) -> bool:
        return self.link_chars >= LINK_DOMINATED * self.chars


def _classes(cls: str | None) -> str:
    if not cls:
        return ""
    if _STATE.search(cls):
        return " ".join(w for w in cls.split() if not _STATE.fullmatch(w))
    return cls


def _kind(tag: str, parent_kind: str) -> str:
    if tag == "pre":
        return "pre"
    if tag in _HEADINGS:
        return "head"
    if tag in _CELLS or parent_kind == "cell":
        return "cell"
    return "text"


def page_blocks(root) -> list[Block]:
    """The blocks of ``root`` (a document, or the element the template is learned in) in document
    order, ``root`` (the body of a document) first; one pass, ``root`` is not changed."""
    body = root.find("body") if root.tag == "html" else root
    if body is None:
        body = root
    h1 = next(root.iter("h1"), None)
    title = " ".join(h1.text_content().split()) if h1 is not None else ""
    top = Block(body, None, "text", 0, 0, 0)
    blocks = [top]
    if body.text:
        top.add(body.text, False)
    # Entries: (element, block, in_link, path, parent's positions, child index, siblings), or
    # (text, block, in_link) for the text that follows an element.
    stack: list[tuple] = []
    _push_children(stack, body, top, False, 0, 0, 0)
    while stack:
        item = stack.pop()
        node = item[0]
        if isinstance(node, str):
            item[1].add(node, item[2])
            continue
        el, blk, link, path, pos, rpos, index, count = item
        tag = el.tag
        if not isinstance(tag, str) or tag in _SKIP_TAGS:
            continue
        if tag in _BLOCK_TAGS:
            cls = _classes(el.get("class"))
            pos = hash((pos, index, tag, cls))
            rpos = hash((rpos, index - count, tag, cls))
            if tag not in _SECTION_NESTING and not (tag == "div" and "section" in cls.split()):
                path = hash((path, tag, cls))
            blk = Block(el, blk, _kind(tag, blk.kind), path, pos, rpos)
            blocks.append(blk)
            if tag == "pre":
                blk.add(el.text_content(), link)
                continue
            if tag in _LEAF_TAGS:
                blk.add_leaf(el, link)
                continue
        elif tag == "a":
            link = True
        if el.text:
            blk.add(el.text, link)
        if len(el):
            _push_children(stack, el, blk, link, path, pos, rpos)
    for block in blocks:
        block.finish(title)
    return blocks


def _push_children(stack: list[tuple], el, blk: Block, link: bool, path: int, pos: int, rpos: int) -> None:
    children = list(el)
    count = len(children)
    for i in range(count - 1, -1, -1):
        child = children[i]
        if child.tail:
            stack.append((child.tail, blk, link))
        stack.append((child, blk, link, path, pos, rpos, i, count))


# --------------------------------------------------------------------------
# Learning
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class PageSignature:
    """What learning keeps of a page: its text and slot hashes, and each block's position."""

    texts: frozenset[int]
    slots: frozenset[int]
    # (position from the start, from the end, text, slots) of each block with text
    entries: tuple[tuple[int, int, int, tuple[int, int] | None], ...]


def signature(blocks: Iterable[Block]) -> PageSignature:
    entries = tuple((b.pos, b.rpos, b.sig, b.slots) for b in blocks if b.sig is not None)
    return PageSignature(
        texts=frozenset(e[2] for e in entries),
        slots=frozenset(slot for e in entries if e[3] is not None for slot in e[3]),
        entries=entries,
    )


@dataclass(frozen=True)
class Template:
    """A host's learned template: the text and slot hashes of its repeated blocks and the positions
    that hold them. Empty (false) when nothing repeats or too few pages were seen."""

    pages: int = 0
    texts: frozenset[int] = frozenset()
    slots: frozenset[int] = frozenset()
    positions: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.texts or self.slots)


def learn(pages: Sequence[PageSignature]) -> Template:
    """The template of a host from its sampled pages."""
    n = len(pages)
    if n < MIN_PAGES:
        return Template(pages=n)
    need = max(MIN_PAGES, math.ceil(SHARE * n))
    text_counts: Counter[int] = Counter()
    slot_counts: Counter[int] = Counter()
    for page in pages:
        text_counts.update(page.texts)
        slot_counts.update(page.slots)
    texts = frozenset(s for s, c in text_counts.items() if c >= need)
    slots = frozenset(s for s, c in slot_counts.items() if c >= need)
    pos_counts: Counter[int] = Counter()
    for page in pages:
        held = set()
        for pos, rpos, sig, pair in page.entries:
            if sig in texts or (pair is not None and (pair[0] in slots or pair[1] in slots)):
                held.add(pos)
                held.add(rpos)
        pos_counts.update(held)
    positions = frozenset(p for p, c in pos_counts.items() if c >= need)
    return Template(pages=n, texts=texts, slots=slots, positions=positions)


def _copies(page: PageSignature, other: PageSignature) -> bool:
    """Whether two sampled pages hold the same blocks but for a few (``COPY_SHARE``)."""
    shared = len(page.texts & other.texts)
    return shared > 0 and shared >= COPY_SHARE * max(len(page.texts), len(other.texts))


class TemplateLearner:
    """Per host (``host[:port]``): the first ``sample`` pages' signatures, then the frozen template.

    Not thread-safe: the extraction middleware calls it from the reactor thread only; the frozen
    :class:`Template` it hands out is immutable and read by worker threads.
    """

    def __init__(self, sample: int = DEFAULT_SAMPLE) -> None:
        self.sample = max(MIN_PAGES, sample)
        self._pages: dict[str, list[PageSignature]] = {}
        self._seen: dict[str, set[str]] = {}
        self._templates: dict[str, Template] = {}

    def template(self, host: str) -> Template | None:
        """The host's decided template, or None while it is still being learned."""
        return self._templates.get(host)

    def observe(self, host: str, url: str, page: PageSignature) -> bool:
        """Learn from one page of ``host`` (a URL counts once, and so does a copy of a sampled
        page); True when this decides the template."""
        if host in self._templates:
            return False
        seen = self._seen.setdefault(host, set())
        sampled = self._pages.setdefault(host, [])
        if url not in seen:
            seen.add(url)
            # The same page in several docs versions (a version switcher's links, a root listing
            # them) would outvote the template of the site's other pages; past a few samples'
            # worth of pages, copies count again, so that a site of look-alike pages is still
            # decided and its pages do not wait for ever.
            if len(seen) > COPY_PATIENCE * self.sample or not any(_copies(page, other) for other in sampled):
                sampled.append(page)
        if len(sampled) >= self.sample:
            self.decide(host)
            return True
        return False

    def decide(self, host: str) -> Template:
        """Decide ``host``'s template now, from the pages seen so far."""
        template = self._templates.get(host)
        if template is None:
            template = self._templates[host] = learn(self._pages.pop(host, []))
            self._seen.pop(host, None)
        return template

    def settle(self, host: str, removed: bool) -> None:
        """After the sampled pages were cleaned: a template that changed none of them (``removed``
        false: nothing removed, or nothing the extraction would have kept) is dropped, so the
        host's further pages are not walked for it (the learning's cost on sites whose profile or
        main element already keeps the chrome out)."""
        if not removed and host in self._templates:
            self._templates[host] = Template(pages=self._templates[host].pages)

    def learning(self) -> list[str]:
        """Hosts whose template is not decided yet."""
        return [host for host in self._pages if host not in self._templates]


# --------------------------------------------------------------------------
# Removal
# --------------------------------------------------------------------------

@dataclass
class Removal:
    """What :func:`remove_template` removed from one page."""

    blocks: int = 0  # template blocks removed (a region counts its template blocks)
    elements: int = 0  # elements dropped
    chars: int = 0  # characters of text removed

    def __bool__(self) -> bool:
        return self.elements > 0


def remove_template(blocks: Sequence[Block], template: Template | None) -> Removal:
    """Remove from the page the blocks that match ``template`` (rules in the module docstring).

    ``blocks``: :func:`page_blocks` of the page, taken before anything changed the tree.
    """
    removal = Removal()
    if not template or len(blocks) < 2:
        return removal
    texts, slots, positions = template.texts, template.slots, template.positions
    for b in blocks:
        b.tmpl = False
        b.gone = False
        b.sub_tot = b.sub_tmpl = b.sub_n = b.sub_prose = 0
        b.sub_guard = False
        if not b.chars:
            continue
        matched = b.sig in texts or (b.slots is not None and (b.slots[0] in slots or b.slots[1] in slots))
        # A changed block in a template place (the first page's pager without "previous").
        placed = (b.pos in positions or b.rpos in positions) and b.kind in ("text", "head") \
            and (b.words <= LIGHT_WORDS or b.link_dominated)
        b.tmpl = matched or placed
    # Subtree totals, children before parents (blocks are in document order, parents first).
    for b in reversed(blocks):
        b.sub_tot += b.chars
        if b.tmpl:
            b.sub_tmpl += b.chars
            b.sub_n += 1
        elif b.chars:
            b.sub_prose += max(0, b.chars - b.link_chars)
            if b.kind != "text":
                b.sub_guard = True
        parent = b.parent
        if parent is not None:
            parent.sub_tot += b.sub_tot
            parent.sub_tmpl += b.sub_tmpl
            parent.sub_n += b.sub_n
            parent.sub_prose += b.sub_prose
            parent.sub_guard = parent.sub_guard or b.sub_guard
    doomed: list[Block] = []
    for b in blocks[1:]:  # never the body
        if b.parent.gone:
            b.gone = True
            continue
        if (b.sub_tot > b.chars and b.sub_n >= 2 and not b.sub_guard and b.sub_tmpl >= REGION_SHARE * b.sub_tot
                and b.sub_prose <= PROSE_SHARE * b.sub_tot):
            b.gone = True
            doomed.append(b)
            removal.blocks += b.sub_n
            removal.chars += b.sub_tot
    leaves = [b for b in blocks if b.chars and not b.gone]
    anchors = [i for i, b in enumerate(leaves) if not b.tmpl and (b.kind != "text" or b.plain_words >= ANCHOR_WORDS)]
    first, last = (anchors[0], anchors[-1]) if anchors else (len(leaves), -1)
    for i, b in enumerate(leaves):
        if not b.tmpl or b.kind in ("pre", "cell") or b.sub_tot > b.sub_tmpl:
            continue  # not template, protected, or holding nested content of its own
        edge = i < first or i > last
        if edge and b.kind == "head" and i + 1 < len(leaves) and not leaves[i + 1].tmpl:
            continue  # a repeated heading ("See also") over content of the page's own
        if edge or (b.sig in texts and b.kind == "text" and b.words >= LONG_WORDS and not b.link_dominated):
            doomed.append(b)
            removal.blocks += 1
            removal.chars += b.chars
    for b in doomed:
        if b.el.getparent() is not None:
            remove_keep_tail(b.el)
            removal.elements += 1
    return removal
