"""Article boilerplate inside a generic main element (Scrapy-free).

A page no documentation generator wrote (a blog post, a news story, a help-centre article) is cut
to its generic main element (``main``, ``[role=main]``, a single ``article``), which still holds
what such sites put around the text: comment threads, related and most-read lists, share and
newsletter boxes, author bios, bylines, datelines and photo credits. ``prune_article`` removes them
the way content extractors decide it, by markup and not by site: comment sections by their
conventional markup (WordPress, Blogger, Disqus, schema.org ``Comment``), blocks whose class or id
names a widget (readability's "unlikely candidates"), asides and footers. ``prune_link_blocks``
removes the link lists (latest news, related stories, menus) by their link density, but only on
pages that declare themselves articles (``declares_article``): on a documentation page no profile
knows, a "See also" list is content. On such pages ``prune_teasers`` removes the lists of other
stories' linked headlines, ``trim_article_edges`` the short labels before the story's first long
paragraph and after its last (kickers, datelines, "Advert"), ``drop_media`` the photos with the
box that holds their caption and credit, and the asides, and ``drop_title`` the heading that repeats
the page's title (metadata, in every chunk's context line, and not the article's text).
A block holding a large share of the element's text or the page's ``h1`` is never removed, so a
wrapper with an odd class name cannot take the article with it. On every generic page,
``drop_emptied`` takes the boxes the cleaning emptied of all but a label, and
``drop_trailing_headings`` the headings its Markdown ends with that head nothing: what the cleaning
left of the widgets it took.
"""
from __future__ import annotations

import re
from itertools import islice
from typing import TYPE_CHECKING

from lxml import etree

from harvester.extract.converters.conventions import tidy_markdown, visible_text
from harvester.extract.metadata import folded
from harvester.markdown.grammar import Line, classify_lines
from harvester.markdown.grammar import heading as md_heading

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["declares_article", "drop_emptied", "drop_hidden", "drop_media", "drop_title", "drop_title_heading",
           "drop_trailing_headings", "narrow_article", "prune_article", "prune_link_blocks", "text_lengths",
           "trim_article_edges", "trim_link_tail"]

# Comment sections by their markup: WordPress (#comments, #respond, .comment-list, .commentlist),
# Blogger (#comments, .comment-thread), Disqus (#disqus_thread), Discourse/Facebook embeds.
_COMMENTS = re.compile(
    r"(?:^|[\s_-])(?:comments?|commentlist|comment-?(?:list|thread|section|area|form|respond|wrap\w*)"
    r"|respond|disqus\w*|reply-?form|fb-comments|discourse-comments)(?:$|[\s_-])", re.I)
# Widget names of classes and ids: the words of readability's unlikely candidates plus the boxes news
# and blog themes put around their articles, found inside a name ("related-posts", "share_box")...
_BOILERPLATE = re.compile(
    r"related|share|sharing|social|newsletter|subscri|signup|sign-up|author|byline|promo|recommend"
    r"|popular|most-?read|most-?viewed|trending|more-?stories|read-?more|read-?next|up-?next|also-?read"
    r"|sponsor|advert|outbrain|taboola|dateline|credit|post-?meta|entry-?meta"
    r"|article-?meta|meta-?data|tag-?list|tag-?cloud|tags-?links|categories|rating|follow|pagination"
    r"|jump-?to|donate|login|caption|utility|reading-?time"
    r"|cat-?links|(?:prev|next)-?post|post-?nav|contributor|comments?-?(?:link|count)|(?:^|[\s_-])bio(?:$|[\s_-])", re.I)
# Page chrome names: the generic cleaner keeps such a block when it holds prose, and so does this.
_CHROME = re.compile(r"sidebar|breadcrumb|navigation|menu|pager|pagination|masthead|toolbar|skip-?link", re.I)
# ...and short words only as a whole name ("tag-howto" is a WordPress post's tag, not a tag list).
_BOILERPLATE_NAMES = frozenset({"ad", "ads", "meta", "tag", "tags", "nav", "footer", "bio", "about", "teaser",
                                "teasers", "modal", "popup", "comments", "comment", "respond", "sources"})
# Tags a widget box is made of; headings and links are named by their text (slugs), not as widgets.
_BOX_TAGS = frozenset({"div", "section", "ul", "ol", "dl", "p", "span", "figcaption", "header", "small",
                       "table", "li", "address", "time"})
# Names of the article itself: a block so named is content whatever else its name says.
_CONTENT = re.compile(
    r"article-?body|articlebody|article-?content|article-?text|entry-?content|post-?body|post-?content"
    r"|post-?text|story-?body|story-?content|main-?content|blog-?post|body-?text|rich-?text", re.I)
_DROP_TAGS = ("footer", "figcaption")
_DATE_PROPS = frozenset({"datePublished", "dateModified", "dateCreated"})
_DATE_CHARS = 80
# Non-link text from which an aside is prose (a note, a digression), as the generic cleaner judges it.
_PROSE_CHARS = 200
# Share of the element's text a block may hold and still be removed: more is the article.
_MAX_SHARE = 0.4


def prune_article(main: HtmlElement) -> None:
    """Remove comment sections, widget boxes, asides, footers and datelines from ``main``."""
    total = _text_len(main)
    if not total:
        return
    limit = total * _MAX_SHARE
    doomed = []
    for el in main.iterdescendants():
        tag = el.tag
        if not isinstance(tag, str):
            continue
        # A comment thread can be many times the post it follows: no share limit for it.
        boxed = _is_comments(el, tag) or (
            (_is_boilerplate(el, tag) or _is_dateline(el, tag)) and _text_len(el) <= limit)
        # A highlighter's token (Prism's "token comment", highlight.js's "hljs-meta") is code.
        if boxed and not _holds_title(el) and not _in_code(el):
            doomed.append(el)
    for el in _outermost(doomed):
        _drop(el)


# A box the cleaning emptied keeps a label's text at most, a third or less of what it held.
_EMPTIED_BOXES = frozenset({"div", "section", "aside", "header", "footer", "p", "ul", "ol"})
_EMPTIED_LABEL = 80
_EMPTIED_SHARE = 3
_EMPTIED_LOST = 20


def text_lengths(root: HtmlElement) -> dict[HtmlElement, int]:
    """The characters of text (stripped runs, tails included) under each element of ``root``, in one
    pass from the leaves up, without recursion (a page may nest deeper than Python recurses)."""
    lengths: dict[HtmlElement, int] = {}
    stack: list[tuple[HtmlElement, bool]] = [(root, False)]
    while stack:
        el, children_done = stack.pop()
        if not children_done:
            stack.append((el, True))
            stack.extend((child, False) for child in el if isinstance(child.tag, str))
            continue
        length = len((el.text or "").strip())
        for child in el:
            length += lengths.get(child, 0) + len((child.tail or "").strip())
        lengths[el] = length
    return lengths


def drop_emptied(main: HtmlElement, before: dict[HtmlElement, int]) -> None:
    """Remove the boxes the cleaning emptied of all but a label (``before``: ``text_lengths`` of
    ``main`` before it). A box that held share buttons, a form, a link list or teasers and keeps only
    a short text that was a third or less of it is that widget's label ("Share:", "Related Coverage",
    "Ist dieser Beitrag hilfreich?"), wherever it stands. Code and tables are never a label's."""
    doomed = []
    for el, length in text_lengths(main).items():
        held = before.get(el)
        if (el is main or el.tag not in _EMPTIED_BOXES or not length or held is None
                or length > _EMPTIED_LABEL or held < _EMPTIED_SHARE * length or held - length < _EMPTIED_LOST):
            continue
        if el.find(".//pre") is None and el.find(".//table") is None:
            doomed.append(el)
    for el in _outermost(doomed):
        _drop(el)


def _in_code(el: HtmlElement) -> bool:
    return next(el.iterancestors("pre", "code"), None) is not None


def _is_comments(el: HtmlElement, tag: str) -> bool:
    if el.get("itemprop") in ("comment", "comments") or (el.get("itemtype") or "").endswith("/Comment"):
        return True
    if tag not in _BOX_TAGS and tag != "aside":
        return False
    names = f"{el.get('class') or ''} {el.get('id') or ''}"
    return bool(_COMMENTS.search(names)) and not _CONTENT.search(names)


def _is_dateline(el: HtmlElement, tag: str) -> bool:
    """A ``<time>`` standing alone (a dateline), not one inside a sentence; a short block that is
    the article's date in microdata (``itemprop="datePublished"``)."""
    if el.get("itemprop") in _DATE_PROPS and tag in _BOX_TAGS:
        return _text_len(el) <= _DATE_CHARS
    if tag != "time":
        return False
    parent = el.getparent()
    return parent is None or _text_len(parent) < _text_len(el) + 40


def _is_boilerplate(el: HtmlElement, tag: str) -> bool:
    if tag in _DROP_TAGS:
        return True
    if tag == "aside":
        return not _holds_prose(el)
    if el.get("itemprop") in ("author", "publisher") or (el.get("itemtype") or "").endswith("/Person"):
        return True
    if tag not in _BOX_TAGS:
        return False
    names = f"{el.get('class') or ''} {el.get('id') or ''}".strip()
    if not names or _CONTENT.search(names):
        return False
    if _BOILERPLATE.search(names):
        return True
    if _CHROME.search(names):
        return not _holds_prose(el)
    return not _BOILERPLATE_NAMES.isdisjoint(names.lower().split())


def _holds_prose(el: HtmlElement) -> bool:
    return _text_len(el) - sum(_text_len(a) for a in el.iter("a")) >= _PROSE_CHARS


def _holds_title(el: HtmlElement) -> bool:
    return next(el.iter("h1"), None) is not None


def _text_len(el: HtmlElement) -> int:
    return len("".join(el.itertext()).strip())


def _outermost(doomed: list[HtmlElement]) -> list[HtmlElement]:
    """``doomed`` without repeats and without the elements inside another of them (removed with it)."""
    marked = set(doomed)
    return [el for el in dict.fromkeys(doomed) if marked.isdisjoint(el.iterancestors())]


def _drop(el: HtmlElement) -> None:
    """Remove ``el`` and keep its tail text (the text after it belongs to its parent)."""
    parent = el.getparent()
    tail = el.tail
    if tail and tail.strip():
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


# Readability's content scoring: class and id words that make a block likelier or unlikelier content.
_POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story", re.I)
_NEGATIVE = re.compile(
    r"hidden|banner|combx|comment|com-|contact|foot|footer|footnote|gdpr|masthead|media|meta|outbrain|promo"
    r"|related|scroll|share|shoutbox|sidebar|skyscraper|sponsor|shopping|tags|tool|widget|newsletter"
    r"|subscri|social|teaser|recommend|popular|author|byline", re.I)
_SCORED_TAGS = ("p", "blockquote")
_TAG_BONUS = {"div": 5, "article": 5, "section": 3, "pre": 3, "td": 3, "blockquote": 3, "address": -3,
              "ol": -3, "ul": -3, "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3, "h1": -5, "h2": -5,
              "h3": -5, "h4": -5, "h5": -5, "h6": -5, "th": -5}
# Shortest paragraph that counts, and the share of the best block's score a sibling needs to stay.
_MIN_PARAGRAPH = 25
_SIBLING_SHARE = 0.2
_SIBLING_FLOOR = 10.0
# A sibling without scored paragraphs stays when it is this long and this little linked (readability).
_PROSE_SIBLING = 80
_PROSE_LINK_DENSITY = 0.25
_FACT_TAGS = ("ul", "ol", "dl", "table")
_HEADINGS = frozenset({"h2", "h3", "h4", "h5", "h6"})


def narrow_article(main: HtmlElement) -> None:
    """Cut a generic main element that holds the whole page down to its article: score the blocks
    as readability does (paragraphs, their length and commas, less their link text, class and id
    hints), find the best one, and remove the siblings along its path up to ``main`` that score
    poorly and hold no prose and not the page's ``h1``."""
    scores: dict[HtmlElement, float] = {}
    for p in main.iter(*_SCORED_TAGS):
        text = p.text_content()
        length = len(text.strip())
        if length < _MIN_PARAGRAPH:
            continue
        points = 1 + text.count(",") + min(length // 100, 3)
        parent = p.getparent()
        level = 0
        while parent is not None and level < 3:
            if parent not in scores:
                scores[parent] = _initial_score(parent)
            scores[parent] += points / (1 if level == 0 else 2 if level == 1 else level * 3)
            if parent is main:
                break
            parent = parent.getparent()
            level += 1
    if not scores:
        return
    final = {el: score * (1 - _link_density(el)) for el, score in scores.items()}
    best = max(final, key=final.__getitem__)
    if best is main or main not in best.iterancestors():
        return
    threshold = max(_SIBLING_FLOOR, final[best] * _SIBLING_SHARE)
    node = best
    doomed = []
    while node is not main:
        parent = node.getparent()
        kept_next = True
        # Backwards, so that a heading stays with the block it heads.
        for sibling in reversed(parent):
            if not isinstance(sibling.tag, str):
                continue
            if sibling is node or _keeps_sibling(sibling, final, threshold) or (kept_next and sibling.tag in _HEADINGS):
                kept_next = True
            else:
                kept_next = False
                doomed.append(sibling)
        node = parent
    for el in doomed:
        _drop(el)


def _keeps_sibling(el: HtmlElement, final: dict, threshold: float) -> bool:
    if final.get(el, 0.0) - max(_class_weight(el), 0) >= threshold or _holds_title(el):
        return True
    length = _text_len(el)
    if not length or next(el.iter("pre"), None) is not None:
        return True  # a code listing is content wherever the theme put it
    if _link_density(el) >= _PROSE_LINK_DENSITY or _class_weight(el) < 0:
        return False
    # A list or table whose items are not links is content (requirements, options), however short.
    if el.tag in _FACT_TAGS or next(el.iter(*_FACT_TAGS), None) is not None:
        return True
    # A short paragraph that is a sentence (readability's rule), as a lead-in to a listing or a table.
    return length >= _PROSE_SIBLING or (el.tag == "p" and el.text_content().rstrip()[-1:] in ".:!?")


def _initial_score(el: HtmlElement) -> float:
    return float(_TAG_BONUS.get(el.tag, 0) + _class_weight(el))


def _class_weight(el: HtmlElement) -> int:
    weight = 0
    for name in (el.get("class"), el.get("id")):
        if name:
            if _NEGATIVE.search(name):
                weight -= 25
            if _POSITIVE.search(name):
                weight += 25
    return weight


def _link_density(el: HtmlElement) -> float:
    text = _text_len(el)
    if not text:
        return 0.0
    return sum(_text_len(a) for a in el.iter("a")) / text



# Blocks a link list is made of, and when one is a list of links rather than text with links in it.
_LINK_BLOCK_TAGS = frozenset({"div", "section", "ul", "ol", "nav", "aside", "header", "table", "dl"})
_LINK_SHARE = 0.5
_MIN_LINKS = 2
# Share of the element's text outside links a link list may hold and still be removed.
_MAX_PLAIN_SHARE = 0.15
# A short paragraph that is mostly one link this long is a promoted story, not a sentence with a link.
_PROMO_LINK_SHARE = 0.6
_PROMO_LINK = 25
_LINKED_LINE = 0.8


def declares_article(root: HtmlElement, published: str | None) -> bool:
    """Whether the page says it is an article: a publication date, ``og:type`` "article", or a
    schema.org news or blog type (``NewsArticle``, ``BlogPosting``...) in its JSON-LD or microdata.
    Meta tags are read wherever the parser put them (a stray element in ``<head>`` ends it early)."""
    if published:
        return True
    for meta in root.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").lower() == "og:type":
            if (meta.get("content") or "").strip().lower() == "article":
                return True
            break
    for script in root.iter("script"):
        if (script.get("type") or "").strip().lower() == "application/ld+json" and script.text \
                and _JSONLD_NEWS.search(script.text):
            return True
    return any(_NEWS_TYPE.search(t) for t in _ITEMTYPES(root))


# schema.org's news and blog types (NewsArticle and its kinds, BlogPosting, LiveBlogPosting...), in
# JSON-LD and microdata. Not a bare Article: documentation themes (Read the Docs', MkDocs') mark
# every page so, and documentation keeps its link lists.
_JSONLD_NEWS = re.compile(r'"@type"\s*:\s*(?:\[[^\]]*?)?"[\w:/.]*(?:NewsArticle|Posting)"')
_NEWS_TYPE = re.compile(r"(?:NewsArticle|Posting)$")
_ITEMTYPES = etree.XPath("//@itemtype")


def prune_link_blocks(main: HtmlElement) -> None:
    """Remove the link lists of an article page (latest news, related stories, menus, tag lists):
    blocks whose text is mostly link text, with little of the element's text outside links; and
    the short paragraphs that are one headline link ("Read more: ..." between paragraphs). Only
    for pages that declare themselves articles (``declares_article``): on a documentation page a
    "See also" list is content."""
    chars: dict[HtmlElement, int] = {}
    linked: dict[HtmlElement, int] = {}
    links: dict[HtmlElement, int] = {}
    # Reverse document order visits every element after its descendants: one pass sums them all.
    for el in reversed(list(main.iter())):
        own = _chars(el.text) if isinstance(el.tag, str) else 0
        total, in_links, count = own, 0, 0
        for child in el:
            total += chars.get(child, 0) + _chars(child.tail)
            in_links += linked.get(child, 0)
            count += links.get(child, 0)
        if el.tag == "a":
            in_links, count = total, count + 1
        chars[el], linked[el], links[el] = total, in_links, count
    plain_total = chars[main] - linked[main]
    doomed = []
    for el in main.iterdescendants(*_LINK_BLOCK_TAGS, "p"):
        total = chars[el]
        if el.tag == "p":
            # "READ MORE: <a headline>" between the story's paragraphs: a paragraph that is one long link;
            # headlines strung together ("<a>...</a> | <a>...</a>"): links with next to no words between them.
            promo = links[el] == 1 and linked[el] >= total * _PROMO_LINK_SHARE and linked[el] >= _PROMO_LINK
            strung = links[el] >= _MIN_LINKS and linked[el] >= total * _LINKED_LINE
            if (promo or strung) and total < _STORY_PARAGRAPH:
                doomed.append(el)
            continue
        if el.tag in ("ul", "ol", "dl") and el.getparent() is not None and el.getparent().tag in ("li", "dd"):
            continue  # a list's sub-list is part of its item (the steps' links); a menu goes as a whole
        if (total and links[el] >= _MIN_LINKS and linked[el] >= total * _LINK_SHARE
                and total - linked[el] <= plain_total * _MAX_PLAIN_SHARE and not _holds_title(el)):
            doomed.append(el)
    _drop_headed(doomed)


def _drop_headed(doomed: list[HtmlElement]) -> None:
    """Remove the blocks (the outermost of them) and the heading right before one when it headed
    nothing else ("Related coverage", "More on this"): what follows it up to the next heading of its
    level or above holds no more than a label's text outside links; and the short label right before
    one ("DON'T MISS", "Read more:")."""
    headings = []
    labels = []
    for el in _outermost(doomed):
        prev = el.getprevious()
        if prev is not None and isinstance(prev.tag, str) and not (prev.tail or "").strip():
            if prev.tag in _HEADINGS and _text_len(prev) <= _EDGE_LABEL:
                headings.append(prev)
            elif prev.tag in ("p", "div") and _is_label(prev):
                labels.append(prev)
        _drop(el)
    for label in labels:
        if label.getparent() is not None:
            _drop(label)
    for heading in headings:
        if heading.getparent() is None or (heading.tail or "").strip():
            continue
        section = 0
        for after in heading.itersiblings():
            if isinstance(after.tag, str) and after.tag in _HEADINGS and after.tag <= heading.tag:
                break
            if isinstance(after.tag, str):
                section += _text_len(after) - sum(_text_len(a) for a in after.iter("a"))
        if section <= _EDGE_LABEL:
            _drop(heading)


def _is_label(el: HtmlElement) -> bool:
    text = el.text_content().strip()
    return 0 < len(text) <= _LABEL_CHARS and not text.endswith((".", "!", "?")) and next(el.iter("a"), None) is None


def _chars(text: str | None) -> int:
    return len(text) - text.count(" ") - text.count("\n") if text else 0


# Blocks the story is told in, and those whose text is never chrome (listings, quotes, headings).
_TEXT_BLOCK_TAGS = frozenset({"p", "div", "section", "header", "address", "span", "small", "time", "figcaption",
                              "center", "font", "strong", "b", "em", "i", "a", "label", "button"})
_KEPT_TAGS = frozenset({"pre", "code", "table", "ul", "ol", "dl", "li", "blockquote", "h1", "h2", "h3", "h4", "h5",
                        "h6", "figure", "img", "math", "svg"})
# A paragraph this long is the story's; a block this short before the first or after the last is a
# label (a kicker, a dateline, "Advert", "Share", "Updated") unless it ends a sentence.
_STORY_PARAGRAPH = 200
_EDGE_LABEL = 80
_SENTENCE_END = tuple('.!?:;…"»”)。！？')
# A date as datelines write it (5/10/2018, 2018-10-05, 19.11.2019, 10:02, Nov. 19 / 19 November), and
# how long a line with one above the story may be (a byline and its date, "Published by ... in ...").
_DATE = re.compile(
    r"\b(?:\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2})\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b"
    r"|\b\d{1,2}\.?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b", re.I)
_DATED_LABEL = 160
_NOTE_CHARS = 300
_LINKED_LIST = 0.3
# Share of the element's text its written blocks must hold: a story told in bare divs has no edges to trim.
_PARAGRAPH_SHARE = 0.5


def trim_article_edges(main: HtmlElement) -> None:
    """Remove the short labels before the article's first paragraph and after its last one (a
    paragraph: a long one, or a sentence longer than a label, not mostly links), and after it the
    lines that are mostly links;
    kickers, bylines, datelines, "Updated", share and advert labels, "Tell us what you think". Short
    blocks that end a sentence stay (a sign-off, a closing line), before the story only when they
    hold no date or time (a dateline, "Updated at 1:23 p.m."), and so do headings, lists, tables,
    quotes, figures and code wherever they are."""
    order = {el: i for i, el in enumerate(main.iter())}
    paragraphs = [(p, len(p.text_content().strip())) for p in main.iter("p")]
    story = [p for p, length in paragraphs if (length >= _STORY_PARAGRAPH or (
        length > _EDGE_LABEL and p.text_content().rstrip().endswith(_SENTENCE_END))) and _link_density(p) < _LINK_SHARE]
    if not story or _written_in_blocks(main) < _PARAGRAPH_SHARE * _shown_len(main):
        return
    first = order[story[0]]
    last_el = story[-1]
    last = max(order[el] for el in last_el.iter())
    doomed = []
    for el in main.iterdescendants(*_TEXT_BLOCK_TAGS):
        at = order[el]
        if first <= at <= last or (at < first and story[0] in el.iterdescendants()):
            continue
        if _inline(el):
            continue  # a word inside a sentence: its block is judged instead
        text = el.text_content().strip()
        if at > last and el.tag == "p" and len(text) <= _NOTE_CHARS and _link_density(el) >= _LINK_SHARE:
            doomed.append(el)  # after the story, a line that is mostly links: tags, "Related: ...", "Follow us"
            continue
        # A dateline or "Updated" line ends in "p.m." or "2019." as often as not.
        dated = at < first and len(text) <= _DATED_LABEL and _DATE.search(text) is not None
        if not text or (not dated and (len(text) > _EDGE_LABEL or text.endswith(_SENTENCE_END))):
            continue
        if next(el.iter(*_KEPT_TAGS), None) is not None or any(a.tag in _KEPT_TAGS for a in el.iterancestors()):
            continue
        doomed.append(el)
    # After the story, a list whose every item links elsewhere, however much else the items say:
    # "Read more" lists whose headlines are only half links.
    doomed.extend(el for el in main.iter("ul", "ol") if order[el] > last and _is_linked_list(el))
    for el in _outermost(doomed):
        _drop(el)


# What a story is written in, besides bare divs: paragraphs, and the lists, code, tables and
# quotes of a how-to post, which can hold more of its text than its paragraphs do.
_WRITTEN_BLOCKS = ("p", "ul", "ol", "dl", "pre", "table", "blockquote", "h2", "h3", "h4", "h5", "h6")


def _written_in_blocks(main: HtmlElement) -> int:
    """The length of the text of ``main``'s outermost ``_WRITTEN_BLOCKS``."""
    total = 0
    for el in main.iter(*_WRITTEN_BLOCKS):
        if not any(a.tag in _WRITTEN_BLOCKS for a in el.iterancestors()):
            total += len(el.text_content().strip())
    return total


def _is_linked_list(el: HtmlElement) -> bool:
    items = list(el.iterchildren("li"))
    return bool(items) and _link_density(el) >= _LINKED_LIST and all(
        any(not (a.get("href") or "#").startswith("#") for a in li.iter("a")) for li in items)


# Text no reader sees (scripts and styles, which the generic cleaner drops later).
_SHOWN_TEXT = etree.XPath(".//text()[not(ancestor::script or ancestor::style)]")


def _shown_len(el: HtmlElement) -> int:
    return len("".join(_SHOWN_TEXT(el)).strip())


def _inline(el: HtmlElement) -> bool:
    if el.tail and el.tail.strip():
        return True
    parent = el.getparent()
    if parent is None:
        return False
    return bool(parent.text and parent.text.strip()) or any(
        c is not el and c.tail and c.tail.strip() for c in parent)


# Media of a story: photos, galleries and embeds, whose alt text and captions are credits, not text.
_MEDIA_TAGS = ("img", "picture", "figure", "video", "audio")
# What a figure can hold that is content (a listing, a table, a quote): such a figure loses only its images.
_FIGURE_CONTENT = ("pre", "table", "blockquote", "code", "math")


def drop_media(main: HtmlElement) -> None:
    """Remove the photos and figures of an article page with their alt text and captions (the
    smallest box around a photo that holds no more than a caption's text); a figure that holds a
    code listing, a table or a quote keeps them. Asides go too, whatever their length: on an
    article page they are boxes beside the story (newsletter, paywall, pull quotes)."""
    doomed = []
    for el in main.iterdescendants(*_MEDIA_TAGS, "aside"):
        if el.tag == "figure" and next(el.iter(*_FIGURE_CONTENT), None) is not None:
            continue
        if el.tag == "aside":
            if not _holds_title(el):
                doomed.append(el)
            continue
        doomed.append(_photo_box(el, main))
    for el in _outermost(doomed):
        _drop(el)


# Boxes a photo and its caption sit in, and the most text such a box holds beside its photo.
_PHOTO_BOX_TAGS = frozenset({"div", "span", "a", "figure", "picture", "center", "section"})
_CAPTION_CHARS = 200


def _photo_box(el: HtmlElement, main: HtmlElement) -> HtmlElement:
    box = el
    parent = box.getparent()
    while (parent is not None and parent is not main and parent.tag in _PHOTO_BOX_TAGS
           and _text_len(parent) <= _CAPTION_CHARS and next(parent.iter(*_KEPT_TEXT), None) is None):
        box = parent
        parent = box.getparent()
    return box


# Blocks a photo box never holds: a heading, a list, a table, a listing, a quote.
_KEPT_TEXT = ("h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "table", "pre", "blockquote")


# A teaser is a heading that is one link to another page; blocks that hold this many are listings.
_TEASER_HEADINGS = 2
# The most text a listing holds per teaser (its headline and excerpt): more is a story with linked headings.
_TEASER_CHARS = 600
# How far above a heading a link that wraps it (a card) may start.
_LINK_WRAP = 2
_TEASER_BLOCK_TAGS = ("section", "div", "ul", "ol", "nav", "aside", "table")


def prune_teasers(main: HtmlElement) -> None:
    """Remove the blocks of an article page that list other stories as teasers: two headings or more
    that are each a link to another page (with or without an excerpt under them: "More stories",
    "Latest", "You may also like"), and no more text than such teasers hold. A subheading of the
    story is no link, or a link to its own anchor."""
    teasers: list[HtmlElement] = []
    for heading in main.iterdescendants(*_HEADINGS):
        links = [a for a in heading.iter("a") if not (a.get("href") or "#").startswith("#")]
        text = _text_len(heading)
        if links and text and sum(_text_len(a) for a in links) >= text * _LINK_SHARE:
            teasers.append(heading)
        elif text and any(a.tag == "a" and not (a.get("href") or "#").startswith("#")
                          for a in islice(heading.iterancestors(), _LINK_WRAP)):
            teasers.append(heading)  # a card: the link wraps the heading
    if len(teasers) < _TEASER_HEADINGS:
        return
    counts: dict[HtmlElement, int] = {}
    for heading in teasers:
        for el in heading.iterancestors():
            if el is main:
                break
            counts[el] = counts.get(el, 0) + 1
    limit = _text_len(main) * _MAX_SHARE
    doomed = [el for el, n in counts.items()
              if n >= _TEASER_HEADINGS and el.tag in _TEASER_BLOCK_TAGS and _text_len(el) <= limit
              and not _holds_title(el) and _text_len(el) <= n * _TEASER_CHARS]
    _drop_headed(doomed)


def drop_title(main: HtmlElement, title: str) -> None:
    """Remove the article's title heading: the first ``h1`` that repeats the page's title, else a
    heading of another level that does before any text (Hugo Stack's ``h2.article-title``). On an
    article page the title is metadata (the item's ``title`` and every chunk's context line), not
    text; a heading that says more than the title (a headline under a site-name title) stays."""
    for h1 in main.iter("h1"):
        if _repeats_title(h1.text_content().replace("¶", ""), title):
            _drop(h1)
            return
    for el in main.iter(*_HEADINGS, "p", "li", "pre", "table", "blockquote"):
        if el.tag in _HEADINGS and _repeats_title(el.text_content().replace("¶", ""), title):
            _drop(el)
        if el.text_content().strip():
            return


def drop_title_heading(md: str, title: str) -> str:
    """``md`` (an extractor's Markdown) without its first heading when that heading repeats the
    page's title (``drop_title`` for Markdown that did not come from the tree)."""
    lines = md.split("\n")
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            break
        found = md_heading(line)
        if found is not None:
            if _repeats_title(visible_text(found[1]), visible_text(title)):
                return tidy_markdown("\n".join(lines[:i] + lines[i + 1:]))
            break
    return md


# Share of the title a heading must hold to repeat it: the site's name in the logo's h1 does not.
_TITLE_SHARE = 0.5


def _repeats_title(text: str, title: str) -> bool:
    text, title = folded(text), folded(title)
    return bool(text) and text in title and len(text) >= _TITLE_SHARE * len(title)


# What a theme hides until a script shows it (a gallery's overlay, its counters, a second copy of a
# caption): the attribute, an inline style, or the class name every CSS framework hides.
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_HIDDEN_CLASSES = frozenset({"hidden", "hide", "is-hidden", "d-none", "display-none"})
# ...unless another class shows it on larger screens (Bootstrap's "d-md-block", Tailwind's "md:block";
# "d-print-block" shows it on paper only).
_SHOWN_AT = re.compile(r"(?!d-print|print:)(?:d-\w+-|\w+:)(?:block|flex|inline|inline-block|grid|table)$")
# An advertisement's label, the whole text of its block, in the languages of the news it sits in.
_AD_LABEL = re.compile(
    r"(?:advertisement|advert|ads?|sponsored|anzeige|werbung|publicidad|publicité|pubblicità"
    r"|reklama|mainos|annonce|continue reading below|(?:story|article) continues below)", re.I)
_LABEL_CHARS = 40
_LABEL_TAGS = _TEXT_BLOCK_TAGS | _HEADINGS | {"li"}
# Links that share the page rather than lead anywhere: messenger schemes and the share endpoints of
# social networks.
_SHARE_LINK = re.compile(
    r"\s*(?:(?:whatsapp|fb-messenger|viber|tg|sms):|(?:https?:)?//(?:www\.|m\.|api\.)?(?:"
    r"facebook\.com/shar|twitter\.com/(?:intent|share)|x\.com/intent|linkedin\.com/share"
    r"|pinterest\.\w+/pin/create|reddit\.com/submit|t\.me/share|wa\.me/|whatsapp\.com/send"
    r"|telegram\.me/share|tumblr\.com/share|getpocket\.com/save|news\.ycombinator\.com/submit))", re.I)


def drop_hidden(main: HtmlElement) -> None:
    """Remove what an article page hides (``hidden``, ``display: none``, a ``hidden`` class), the
    blocks whose whole text is an advertisement's label ("Advertisement", "Anzeige", "Continue
    reading below") and the links that share the page ("Share this on WhatsApp"). A hidden block that holds a large share of the text or the ``h1`` stays: some
    themes hide the story until a script shows it."""
    limit = _text_len(main) * _MAX_SHARE
    doomed = []
    for el in main.iterdescendants():
        if not isinstance(el.tag, str):
            continue
        classes = (el.get("class") or "").lower().split()
        if el.get("hidden") is not None or _HIDDEN_STYLE.search(el.get("style") or "") or (
                not _HIDDEN_CLASSES.isdisjoint(classes) and not any(map(_SHOWN_AT.match, classes))):
            if _text_len(el) <= limit and not _holds_title(el):
                doomed.append(el)
        elif el.tag == "a" and _SHARE_LINK.match(el.get("href") or ""):
            doomed.append(el)
        elif (not len(el) and el.text and len(el.text) <= _LABEL_CHARS and el.tag in _LABEL_TAGS
              and _AD_LABEL.fullmatch(el.text.strip(" -–—:|*[]()\n\t")) and not _inline(el)):
            doomed.append(el)  # its box, if it has one, is left empty
    for el in _outermost(doomed):
        if not _in_code(el):  # code is shown as written
            _drop(el)


# A Markdown link or image, and the list marker a line of them may start with.
_MD_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\([^)]*\)")
_MD_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def trim_link_tail(md: str) -> str:
    """``md`` (an extractor's Markdown of an article page) without the lines of links it ends with:
    the related stories and tag lists after the story, each line mostly link text."""
    lines = md.rstrip("\n").split("\n")
    end = len(lines)
    while end:
        line = lines[end - 1]
        if not line.strip():
            end -= 1
            continue
        if line.lstrip().startswith(("```", "~~~", "|")):
            break
        if _linked_share(_MD_ITEM.sub("", line)) < _LINKED_LINE:
            break
        end -= 1
    if end == len(lines):
        return md
    return tidy_markdown("\n".join(lines[:end]))


def _linked_share(line: str) -> float:
    """The share of a Markdown line's shown text that is the text of its links (0 with no text)."""
    text = visible_text(line)
    linked = sum(len(visible_text(m.group(1))) for m in _MD_LINK.finditer(line))
    return linked / len(text) if text else 0.0


_WORD = re.compile(r"\w")
# A heading this long, or this long and ending as a sentence ends, is prose: a label is shorter.
_PROSE_HEADING = 100
_SENTENCE_HEADING = 60
_CLOSING_MARKS = " \"'”’»)"


def _reads_as_prose(text: str) -> bool:
    shown = visible_text(text).rstrip(_CLOSING_MARKS)
    return len(shown) >= _PROSE_HEADING or (len(shown) >= _SENTENCE_HEADING and shown.endswith((".", "!", "?", "…")))


def drop_trailing_headings(md: str) -> str:
    """``md`` (a generic page's Markdown) without the headings it ends with, which head nothing. The
    cleaning takes a newsletter's form, a related-stories list, a tag cloud, a comment form after the
    story, and leaves their headings behind. Within the text, a heading over what was dropped (a
    photo, an embed) still names its part of the page and stays; so do a heading that reads as prose,
    which is text, and one that is a link, an entry of a list (an index page's, a "See also")."""
    lines = md.split("\n")
    last = -1  # the last line of text
    for index, (line, kind) in enumerate(classify_lines(lines)):
        found = md_heading(line) if kind is Line.TEXT else None
        if found and not _reads_as_prose(found[1]):
            text = _linked_share(found[1]) >= _LINKED_LINE
        else:  # code is text; a blank line, a rule or a hard break is not
            text = kind is not Line.TEXT or bool(_WORD.search(visible_text(line)))
        if text:
            last = index
    if not any(md_heading(line) for line in lines[last + 1:]):
        return md
    return tidy_markdown("\n".join(lines[:last + 1]))
