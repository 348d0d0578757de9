"""Cleaning the main element before conversion (Scrapy-free): generic chrome (landmarks, cookie
banners, edit links, inline widgets), the generator profile's chrome and rewrites, noise attributes,
and links made absolute. Generator-specific rules live in the profiles."""
from __future__ import annotations

import functools
import itertools
import re

from lxml import etree

from harvester.extract.metadata import absolute_url, collapse_space
from harvester.extract.profiles import GeneratorProfile, compile_css
from harvester.extract.rewrites import (
    prepare_code,
    remove_keep_tail,
    rewrite_admonitions,
    rewrite_signatures,
    unwrap_heading_anchors,
)
from harvester.urls.links import BoundedCache, join_key, relative_to_page

__all__ = ["DROP_TAGS", "absolutize_links", "prepare_main"]

# Elements that never carry article text. A ruby's reading (``rt``, with its ``rp`` parentheses) is
# a pronunciation aid above the text: inline, it splits the words it reads.
DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "nav", "button", "svg", "form", "iframe", "object",
    "embed", "input", "select", "textarea", "canvas", "dialog", "link", "meta", "title", "head",
    "colgroup", "col", "rt", "rp",
})
_DROP_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
# A cookie/consent word next to a widget word ("cookie-banner",
# "cookieconsent", "gdpr-notice") or a known consent vendor. A bare "cookies"
# is not enough: Sphinx ids such as "requests.cookies.RequestsCookieJar" or
# "set-cookie-options" name content about cookies.
_COOKIE_RE = re.compile(
    r"(?:cookie|consent|gdpr)[\w-]*?(?:banner|bar|notice|popup|pop-up|modal|notification|dialog|overlay"
    r"|law|accept|alert|disclaimer|consent|window)"
    r"|(?:banner|notice|popup|modal|dialog|overlay)[\w-]*?(?:cookie|consent|gdpr)"
    r"|onetrust|cookiebot|\bcc-(?:window|banner)", re.I)
_COOKIE_WORDS = ("cookie", "consent", "gdpr", "onetrust", "cc-")
_COOKIE_HINT = re.compile("|".join(_COOKIE_WORDS), re.IGNORECASE)
_EDIT_TEXTS = frozenset({
    "edit this page", "edit on github", "edit on gitlab", "edit on bitbucket", "view page source",
    "show source", "show page source", "improve this page", "suggest an edit", "edit page",
    "view source", "report an issue",
})
_EDIT_WORDS = tuple(sorted({text.split()[0] for text in _EDIT_TEXTS}))
# Inline chrome that must go before <span>s are unwrapped and code is
# flattened (or its text would stay behind): line numbers, permalink and
# copy widgets. Shared by many generators, so not tied to a profile.
_INLINE_CHROME_CLASSES = frozenset({
    "linenos", "lineno", "linenodiv", "headerlink", "copybtn", "md-clipboard", "hash-link",
    "line-numbers-rows", "copy-button",
})
_NOISE_ATTRS = (
    "class", "id", "title", "style", "role", "itemprop", "itemscope", "itemtype", "rel", "target",
    "tabindex", "accesskey", "width", "height", "align", "valign", "border", "lang", "dir", "name",
    "loading", "decoding", "hidden", "aria-hidden", "aria-label", "aria-labelledby", "aria-controls",
    "aria-selected", "aria-expanded", "data-toggle", "data-target", "srcset", "sizes", "cellpadding",
    "cellspacing", "frame", "rules", "summary", "headers", "scope", "translate", "spellcheck",
)
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_HEADING_XPATH = etree.XPath("boolean(.//h1|.//h2|.//h3|.//h4|.//h5|.//h6)")
# Inline wrappers with no Markdown meaning. Sphinx wraps every code token in a
# <span>; unwrapping them in C halves the nodes the converter has to walk.
_UNWRAP_TAGS = ("span", "font", "abbr", "bdi", "small", "big", "ins", "mark", "wbr", "data", "time")


def prepare_main(main, base: str, rules: GeneratorProfile) -> None:
    """Clean the main element in place and reduce it to what a converter
    needs. Order matters: code is flattened first (removing most nodes of
    highlighted pages cheaply), the profile's chrome and rewrites need the
    classes of <span>s, and only then are inline spans unwrapped before the
    per-element Python pass."""
    _drop_inline_chrome(main)
    prepare_code(main)
    _drop_chrome(main, rules)
    if rules.admonitions:
        rewrite_admonitions(main, compile_css(rules.admonitions),
                            compile_css(rules.admonition_titles) if rules.admonition_titles else None)
    if rules.signatures:
        rewrite_signatures(main, compile_css(rules.signatures))
    unwrap_heading_anchors(main)
    if rules.layout:
        for wrapper in compile_css(rules.layout)(main):
            if wrapper is not main:
                wrapper.tag = "div"
    _tidy_tables(main)
    _unwrap_sectioning_layout(main)
    etree.strip_tags(main, *_UNWRAP_TAGS)
    _clean(main)
    # Converters read only a few attributes; fewer attributes make the
    # fragment smaller to walk. Link titles are dropped on purpose: Sphinx's
    # "(in Python v3.11)" intersphinx titles are noise.
    etree.strip_attributes(main, *_NOISE_ATTRS)
    _merge_adjacent_inline(main)
    absolutize_links(main, base)


def _unwrap_sectioning_layout(main) -> None:
    """Turn the lists and tables that lay out sections into plain blocks.

    A list item that holds a heading, or a table cell that holds a heading and more, is layout,
    not an enumeration or data: Javadoc before JDK 17 wraps a class's summaries and details in ``ul.blockList``, gtk-doc
    puts a page's title in a table cell beside an image, listings wrap each teaser in an item.
    Kept, whole sections would sit under a bullet or in a cell, where a heading no longer starts
    a line and chunks lose their heading path. A cell that holds nothing but a heading is a title:
    alone in its row, it titles the rows after it (Doxygen's member tables) and the table is cut
    there, the heading put between; beside other cells, it is a column's label and stays text."""
    layouts: set = set()
    title_rows: dict = {}
    labels = []
    for heading in main.iter(*_HEADINGS):
        nearest = True
        for ancestor in heading.iterancestors():
            if ancestor is main:
                break
            if ancestor.tag == "li":
                parent = ancestor.getparent()
                if parent is not None and parent.tag in ("ul", "ol"):
                    layouts.add(parent)
            elif ancestor.tag in ("td", "th"):
                row = ancestor.getparent()
                table = next(ancestor.iterancestors("table"), None)
                if table is None or row is None:
                    continue
                if not nearest or not _holds_only(ancestor, heading):
                    layouts.add(table)
                elif _alone_in_row(row, ancestor):
                    title_rows.setdefault(table, set()).add(row)
                else:
                    labels.append(heading)
                nearest = False
    for heading in labels:
        heading.tag = "span"
    for table, rows in title_rows.items():
        if table not in layouts:
            _cut_at_title_rows(table, rows)
    for layout in layouts:
        if layout.tag == "table":
            for part in list(layout.iter("caption", "thead", "tbody", "tfoot", "tr", "td", "th")):
                if next(part.iterancestors("table")) is layout:
                    part.tag = "div"
        else:
            for item in layout:
                if item.tag == "li":
                    item.tag = "div"
        layout.tag = "div"


def _holds_only(cell, heading) -> bool:
    """Whether the cell holds nothing but the heading."""
    return (cell.text_content().strip() == heading.text_content().strip()
            and not any(el.tag in ("img", "table", "pre") for el in cell.iter()))


def _alone_in_row(row, cell) -> bool:
    """Whether the cell is its row's only cell with content."""
    return not any(other is not cell and (len(other) or (other.text or "").strip())
                   for other in row if other.tag in ("td", "th"))


def _cut_at_title_rows(table, titles: set) -> None:
    """Replace ``table`` with its title rows' cells (as blocks) and tables of the rows between them."""
    rows = [row for row in table.iter("tr") if next(row.iterancestors("table")) is table]
    pieces: list = []
    current = None
    for row in rows:
        if row in titles:
            cell = next(c for c in row if c.tag in ("td", "th") and c.text_content().strip())
            cell.tag = "div"
            pieces.append(cell)
            current = None
            continue
        if current is None:
            current = etree.Element("table")
            pieces.append(current)
        current.append(row)
    for piece in pieces:
        table.addprevious(piece)
    remove_keep_tail(table)


# Inline markup whose touching runs read as one: Sphinx writes a parameter's type one token an
# element (<em>Optional</em><em>[</em><em>str</em><em>]</em>), which as Markdown is a string of
# emphasis markers (*Optional**\[**str**\]*) that no renderer reads back as the type.
_MERGED_INLINE = ("em", "i", "strong", "b", "code")


def _merge_adjacent_inline(main) -> None:
    """Join each run of same-tag inline elements that nothing separates into its first element."""
    for el in list(main.iter(*_MERGED_INLINE)):
        if el.getparent() is None:
            continue  # joined into the one before it
        following = el.getnext()
        while following is not None and following.tag == el.tag and not el.tail \
                and following.attrib == el.attrib:
            if following.text:
                if len(el):
                    el[-1].tail = (el[-1].tail or "") + following.text
                else:
                    el.text = (el.text or "") + following.text
            el.extend(list(following))
            el.tail = following.tail
            el.getparent().remove(following)
            following = el.getnext()


def _tidy_tables(main) -> None:
    """Move each table's caption before it, as a paragraph: a Markdown table has no caption, and
    the converters take a row after a caption for a later row (Javadoc's summaries lost their
    header line, and with it their being tables at all). Rows with nothing in them are spacers
    (Doxygen's separators): as Markdown they would be rows of empty cells."""
    for row in list(main.iter("tr")):
        if not row.text_content().strip() and next(row.iter("img"), None) is None:
            remove_keep_tail(row)
    for caption in list(main.iter("caption")):
        table = caption.getparent()
        if table is None or table.tag != "table":
            continue
        table.remove(caption)  # its tail goes with it: stray text in a table shows before it
        caption.tag = "p"
        table.addprevious(caption)


def _drop_inline_chrome(main) -> None:
    # A Python pass over spans/cells beats an XPath with contains() here:
    # libxml2 evaluates every predicate on each of thousands of code spans.
    doomed = []
    for el in main.iter("span", "td", "div", "a", "button"):
        if el.tag == "button":
            if any(anc.tag == "pre" for anc in el.iterancestors("pre")):
                doomed.append(el)
            continue
        cls = el.get("class")
        if cls and ("line" in cls or "link" in cls or "cop" in cls or "clip" in cls) \
                and not _INLINE_CHROME_CLASSES.isdisjoint(cls.split()):
            doomed.append(el)
    for el in doomed:
        el.drop_tree()


def _drop_chrome(main, rules: GeneratorProfile) -> None:
    """Remove the profile's noise, breadcrumbs, pager, version switcher and
    TOC from the main element, keeping any match that holds prose."""
    if not rules.chrome:
        return
    for el in compile_css(rules.chrome)(main):
        if el is main or el.getparent() is None or _holds_prose(el):
            continue
        el.drop_tree()


# Non-link text above this many characters is prose, not a widget label.
_PROSE_CHARS = 200


def _holds_prose(el) -> bool:
    """Conservative guard for removals by class name, role or keyword: an
    element that holds code, a data table, heading text or a paragraph's
    worth of non-link text is content whatever it is called."""
    if el.tag in _HEADINGS:
        return any(c.isalnum() for c in el.text_content())
    if el.tag == "a":
        # Heading self-links: a pilcrow/hash/icon is chrome, words are the title.
        in_heading = next(el.iterancestors(*_HEADINGS), None) is not None
        return in_heading and any(c.isalnum() for c in el.text_content())
    if el.find(".//pre") is not None or any(_is_data_table(table) for table in el.iter("table")):
        return True
    text = el.text_content()
    if len(text) < _PROSE_CHARS:
        return False
    # Each link's text as the collapsed text holds it, and the space that parts it from the next:
    # a table of contents of 500 entries is not 500 characters of prose.
    link_chars = sum(len(" ".join(a.text_content().split())) + 1 for a in el.iter("a"))
    return len(" ".join(text.split())) - link_chars >= _PROSE_CHARS


def _is_data_table(table) -> bool:
    """A table of two cells or more; one cell only frames what it holds (a banner, a logo)."""
    return next(itertools.islice(table.iter("td", "th"), 1, None), None) is not None


def _clean(main) -> None:
    """Drop generic chrome from the main element in place (text tails are
    kept): elements that never hold text, decorative images, heading-less
    header/footer/aside, landmark roles, cookie banners and edit links."""
    doomed = []
    for el in main.iter():
        tag = el.tag
        if not isinstance(tag, str):  # comments, processing instructions
            doomed.append(el)
            continue
        if tag in DROP_TAGS:
            doomed.append(el)
            continue
        if tag == "img" and el.get("alt") is not None and not el.get("alt").strip():
            doomed.append(el)  # an empty alt marks the image decorative: a bullet, a spacer, an icon
            continue
        # Docusaurus keeps the h1 in a <header>: only heading-less ones are chrome.
        if (tag in ("header", "footer", "aside") and not _HEADING_XPATH(el)
                and (tag != "aside" or _is_chrome_aside(el)) and not _holds_prose(el)):
            doomed.append(el)
            continue
        if el.get("role") in _DROP_ROLES and not _holds_prose(el):
            doomed.append(el)
            continue
        classes = el.get("class")
        element_id = el.get("id")
        if ((classes and _mentions_cookies(classes)) or (element_id and _mentions_cookies(element_id))) \
                and _is_cookie_banner(el, tag, classes):
            doomed.append(el)
            continue
        if tag == "a":
            # Spans are unwrapped already, so the direct text usually is the
            # whole link text; avoid text_content() on hundreds of links.
            text = el.text_content() if len(el) else (el.text or "")
            if len(text) < 40 and _is_edit_text(text):
                doomed.append(el)
    for el in doomed:
        if el is main:
            continue
        parent = el.getparent()
        if parent is None:
            continue  # already removed with an ancestor
        if isinstance(el.tag, str):
            el.drop_tree()
        else:
            remove_keep_tail(el)


def _is_edit_text(text: str) -> bool:
    # Words are never split by what collapse_space changes (whitespace, zero-width characters), so an edit
    # text's first word is in the link text as it is: most links are told apart by that alone.
    folded = text.casefold()
    return any(word in folded for word in _EDIT_WORDS) and collapse_space(text).casefold() in _EDIT_TEXTS


@functools.lru_cache(maxsize=4096)
def _mentions_cookies(ident: str) -> bool:
    """Whether a class or id attribute holds one of _COOKIE_WORDS: the cheap test every element
    with either takes (half of a docs page's main element has one), once per distinct value
    (class values repeat: "reference internal", "highlight-python"...). Neither holds a space,
    so a match in "class id" is a match in one of them."""
    return _COOKIE_HINT.search(ident) is not None


def _is_cookie_banner(el, tag: str, classes: str | None) -> bool:
    element_id = el.get("id")
    if not classes and not element_id:
        return False
    ident = f"{classes or ''} {element_id or ''}"
    # Every match holds one of _COOKIE_WORDS: most elements are told apart by one search for them
    # (case-insensitive as _COOKIE_RE is) before the regex's lazy repetitions are tried.
    if not _COOKIE_HINT.search(ident) or not _COOKIE_RE.search(ident):
        return False
    # Docutils sections get ids from their titles ("set-cookie-options"):
    # a section about cookies is content, a banner has no section heading.
    if tag in ("section", "article", "dl", "dt", "dd") or "section" in (classes or "").split():
        return False
    return not el.xpath(".//h1|.//h2|.//h3") and not _holds_prose(el)


def _is_chrome_aside(el) -> bool:
    # docutils renders ".. sidebar::" as <aside class="sidebar">: content.
    classes = set((el.get("class") or "").split())
    return not classes & {"sidebar", "topic", "admonition", "note", "warning", "footnote", "footnote-list"}


def _joined(key: tuple[str, str]) -> str | None:
    return absolute_url(*key)


# Links resolved once per page directory and crawl, not once per anchor: a docs site's pages link
# the same sidebar and API targets (58,000 joins for the 495 pages of the Python docs).
_RESOLVED: BoundedCache[tuple[str, str], str | None] = BoundedCache(_joined)


def absolutize_links(root, base: str) -> None:
    # Only <a href> and <img src> reach the Markdown, so resolve just those
    # instead of lxml's make_links_absolute (which also rewrites CSS/forms).
    try:
        directory = join_key(base)
    except ValueError:
        directory = base
    for el in root.iter("a", "img"):
        attr = "href" if el.tag == "a" else "src"
        raw = el.get(attr)
        if raw is None:
            continue
        val = raw.strip()
        if not val or val.lower().startswith(("javascript:", "data:")):
            del el.attrib[attr]
            continue
        if relative_to_page(val) or directory is base:
            resolved = _RESOLVED((base, val))
        else:
            # The fragment does not take part in the join: "os.html#os.path.join" and the
            # thousands of other anchors of a page resolve once.
            target, hash_sign, fragment = val.partition("#")
            resolved = _RESOLVED((directory, target))
            if resolved is not None and fragment:
                resolved += hash_sign + fragment
        if resolved is None:
            del el.attrib[attr]
        elif resolved != raw:  # most links of a docs page point elsewhere, written out in full
            el.set(attr, resolved)
