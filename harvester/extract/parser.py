"""lxml's HTML parser with lxml.html's element classes, assigned without a Python call per element.

``lxml.html.HTMLParser`` picks each element's class with a Python method
(``HtmlElementClassLookup.lookup``), called whenever Python code first touches an element: about
5,000 calls per page of the Python docs, 2.5 million in a crawl of them, 5-7% of parsing and
extraction (measured on 150 of its pages, the same output). The only classes it adds are for form
controls (``FormElement.fields``, ``InputElement.value``...), which Harvester never uses: here every
element is an ``HtmlElement``, with all the methods of lxml.html otherwise.
"""

from __future__ import annotations

import lxml.html
from lxml import etree

__all__ = ["HtmlTreeParser", "document_fromstring"]

_CLASSES = etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity,
)


class HtmlTreeParser(etree.HTMLParser):
    """``lxml.html.HTMLParser`` with its element classes looked up in C. A new one per document,
    as parsel makes them: cheap, and no parser state shared between threads."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.set_element_class_lookup(_CLASSES)


def document_fromstring(html: str | bytes) -> lxml.html.HtmlElement:
    """``lxml.html.document_fromstring`` with :class:`HtmlTreeParser`."""
    return lxml.html.document_fromstring(html, parser=HtmlTreeParser())
