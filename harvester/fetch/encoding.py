"""Which encoding a page's bytes are really in, and text lxml and the index can hold (Scrapy-free).

Scrapy believes the ``Content-Type`` charset over the bytes. A UTF-8 page served as ISO-8859-1
then decodes to mojibake (``cafÃ©``), and a Latin-1 page served as UTF-8 to replacement
characters. UTF-8 is self-checking: text in a single-byte encoding almost never decodes as valid
multi-byte UTF-8, so a strict decode settles both cases without a statistical detector. A page
that is UTF-8 with a few Windows-1252 bytes pasted in (mixed encodings) keeps its UTF-8 and gets
those bytes read as Windows-1252 (:func:`decode_mixed`).

Control characters (NUL and the other C0 controls but tab, line feed and carriage return), lone
surrogates and the non-characters U+FFFE/U+FFFF are not text: lxml refuses to store them ("All
strings must be XML compatible") and UTF-8 cannot encode a lone surrogate. :func:`clean_text`
drops them; the fetch step cleans bodies with :func:`clean_body`, and extraction cleans whatever
reaches lxml from elsewhere.
"""

from __future__ import annotations

import codecs
import re
import unicodedata

SINGLE_BYTE = {"ascii", "latin-1", "iso8859-1", "cp1252", "iso8859-15", "cp1250", "iso8859-2"}
# Characters XML 1.0 (and so lxml) cannot hold, and lone surrogates.
UNSAFE_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# The same control characters as bytes, for bytes.translate: a plain C loop, several times faster
# than a regex scan of the body.
_UNSAFE_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
# Text has no control characters but a stray one; random or compressed data has about 9%
# (23 of 256 byte values). Over this share of the first 8 KiB, a body is binary.
BINARY_SHARE = 0.03
_BINARY_BYTES = bytes([*range(0x09), *range(0x0E, 0x20)])
# Valid multi-byte UTF-8 sequences (overlongs and surrogates excluded).
_UTF8_MULTI = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
_ASCII_SUPERSETS = SINGLE_BYTE | {"utf-8", "cp1251", "cp1253", "cp1254", "cp1257", "koi8-r", "mac-roman",
                                  "iso8859-5", "iso8859-7", "iso8859-9"}
MIXED = "harvester-utf-8-cp1252"


def _name(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding.lower()


def corrected_encoding(body: bytes, declared: str) -> str | None:
    """The encoding to decode ``body`` with instead of ``declared``, or None to keep it.

    :data:`MIXED` (UTF-8, with its invalid bytes read as Windows-1252) for a body that is mostly
    valid UTF-8."""
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
        return MIXED if _mostly_utf8(body) else "cp1252"
    return None


def _mostly_utf8(body: bytes) -> bool:
    """More valid multi-byte UTF-8 sequences than bytes that fit none."""
    multi = len(_UTF8_MULTI.findall(body))
    if not multi:
        return False
    high = sum(1 for b in body if b >= 0x80)
    invalid = high - sum(len(m) for m in _UTF8_MULTI.findall(body))
    return multi >= invalid


def _cp1252_bytes(error: UnicodeDecodeError) -> tuple[str, int]:
    bad = error.object[error.start:error.end]
    return bad.decode("cp1252", "replace"), error.end


codecs.register_error(MIXED, _cp1252_bytes)


def decode_mixed(body: bytes) -> str:
    """UTF-8 where the bytes are UTF-8, Windows-1252 for the bytes that are not."""
    return body.decode("utf-8", MIXED)


def clean_text(text: str) -> str:
    """``text`` without control characters, lone surrogates and U+FFFE/U+FFFF."""
    return UNSAFE_TEXT.sub("", text) if UNSAFE_TEXT.search(text) else text


def composed_text(text: str) -> str:
    """``text`` composed (NFC), as a query is typed, so that words written with combining marks
    match it; but a character NFC would replace on its own stays: a page that writes the Kelvin
    sign, the Ohm sign or a CJK compatibility ideograph means that character. (None of them is
    below U+0340.)"""
    if unicodedata.is_normalized("NFC", text):
        return text
    parts, start = [], 0
    for index, char in enumerate(text):
        if char >= "\u0340" and not unicodedata.is_normalized("NFC", char):
            parts += [unicodedata.normalize("NFC", text[start:index]), char]
            start = index + 1
    parts.append(unicodedata.normalize("NFC", text[start:]))
    return "".join(parts)


def looks_binary(body: bytes) -> bool:
    """Whether ``body`` is data rather than text (it holds too many control bytes)."""
    sample = body[:8192]
    return len(sample) - len(sample.translate(None, _BINARY_BYTES)) > BINARY_SHARE * len(sample)


def clean_body(body: bytes, encoding: str) -> bytes | None:
    """``body`` re-encoded as clean UTF-8 when it holds control characters or is mixed UTF-8 and
    Windows-1252 (``encoding`` is :data:`MIXED`), else None (nothing to change). Bodies in
    encodings that are not ASCII supersets (UTF-16...) are left alone: their bytes under 0x20 are
    not control characters."""
    if b"%PDF-" in body[:1024] or looks_binary(body):
        return None  # a document or binary data under a text label: extraction tells it apart
    name = _name(encoding) if encoding != MIXED else MIXED
    if name == MIXED:
        return clean_text(decode_mixed(body)).encode("utf-8")
    if name not in _ASCII_SUPERSETS:
        return None
    cleaned = body.translate(None, _UNSAFE_BYTES)
    return cleaned if len(cleaned) != len(body) else None
