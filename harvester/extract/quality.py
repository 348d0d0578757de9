"""How useful extracted Markdown is (Scrapy-free): the least text a page must have to be kept, and a
rough 0..1 score of the rest."""
from __future__ import annotations

import re

from harvester.extract.converters.conventions import visible_text
from harvester.markdown.grammar import Line, classify_lines

__all__ = ["DEFAULT_MIN_CHARS", "quality_score"]

# Pages with less visible text are skipped as too_short (HARVESTER_EXTRACTION_MIN_CHARS).
DEFAULT_MIN_CHARS = 80

_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
# Lines that are site furniture rather than article text when they survive
# into the Markdown: copyright and legal lines, edit/feedback prompts,
# prev/next labels, "built with" credits, on-page TOC titles.
_BOILERPLATE_LINE = re.compile(
    r"^(?:[>*_ -]*)(?:©|\(c\)|copyright\b|all rights reserved|privacy policy|terms of (?:service|use)"
    r"|edit (?:this|on) |view (?:page )?source|last (?:updated|modified)|was this page helpful"
    r"|(?:«|‹|<)? ?(?:previous|next)(?: page| chapter)?\s*(?:»|›|>)?$|skip to |built with |powered by "
    r"|theme by |on this page$|table of contents$|subscribe|share this|cookie)", re.I)


def quality_score(md: str, degraded: bool, text: str | None = None) -> float:
    """Rough 0..1 usefulness of the extracted Markdown::

        quality = (0.50 * length + 0.30 * (1 - boilerplate) + 0.20 * fences_balanced)
                  * (1 - 0.8 * link_density)

    Link density multiplies rather than adds: a long page of links (an archive, a tag listing, a
    leftover menu) must score low however long it is.

    * ``length`` = min(1, visible text characters / 2000);
    * ``link_density`` = characters of link text / visible text characters;
    * ``boilerplate`` = share of the characters of non-code lines that are
      site furniture (copyright/legal lines, edit and feedback prompts,
      prev/next labels, "built with"/"powered by" credits, "On this page");
    * ``fences_balanced`` = 1 when the number of code fence lines is even.

    Plain-text fallbacks (``degraded``) are capped at 0.5. ``text``: ``visible_text(md)``, if known.
    """
    if text is None:
        text = visible_text(md)
    length = min(1.0, len(text) / 2000.0)
    link_chars = sum(len(m.group(1)) for m in _MD_LINK.finditer(md))
    density = min(1.0, link_chars / max(1, len(text)))
    fences, prose_chars, boiler_chars = 0, 0, 0
    for line, kind in classify_lines(md.split("\n")):
        if kind is Line.FENCE:
            fences += 1
        if kind is not Line.TEXT or not line.strip():
            continue
        prose_chars += len(line)
        if len(line) < 160 and _BOILERPLATE_LINE.match(line.strip()):
            boiler_chars += len(line)
    boilerplate = boiler_chars / prose_chars if prose_chars else 0.0
    balanced = 1.0 if fences % 2 == 0 else 0.0
    score = (0.5 * length + 0.3 * (1.0 - boilerplate) + 0.2 * balanced) * (1.0 - 0.8 * density)
    if degraded:
        score = min(score, 0.5)
    return round(max(0.0, min(1.0, score)), 3)
