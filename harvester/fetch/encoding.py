"""Which encoding a page's bytes are really in, when the declared one is wrong.

Scrapy believes the ``Content-Type`` charset over the bytes. A UTF-8 page served as ISO-8859-1
then decodes to mojibake (``cafÃ©``), and a Latin-1 page served as UTF-8 to replacement
characters. UTF-8 is self-checking: text in a single-byte encoding almost never decodes as valid
multi-byte UTF-8, so a strict decode settles both cases without a statistical detector.
"""

from __future__ import annotations

import codecs

SINGLE_BYTE = {"ascii", "latin-1", "iso8859-1", "cp1252", "iso8859-15", "cp1250", "iso8859-2"}


def _name(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding.lower()


def corrected_encoding(body: bytes, declared: str) -> str | None:
    """The encoding to decode ``body`` with instead of ``declared``, or None to keep it."""
    declared = _name(declared)
    if body.isascii():
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        valid_utf8 = False
    else:
        valid_utf8 = True
    if declared in SINGLE_BYTE and valid_utf8:
        return "utf-8"
    if declared == "utf-8" and not valid_utf8:
        return "cp1252"
    return None
