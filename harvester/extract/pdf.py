"""PDF documents as pages: the text of each page under a ``Page N`` heading, with pypdf.

A PDF keeps no headings, lists or tables that text extraction could recover reliably, so every
PDF page is ``degraded``. The ``Page N`` headings put the page number into each chunk's heading
path (``Title > Page 3``), which is where a reader finds it again.
"""

from __future__ import annotations

import io
import logging
import posixpath
import re
from urllib.parse import unquote, urlsplit

from harvester.extract.converters.conventions import visible_text
from harvester.extract.page import ExtractedPage, NoContent
from harvester.extract.quality import DEFAULT_MIN_CHARS, quality_score
from harvester.fetch.encoding import composed_text

logger = logging.getLogger(__name__)
# pypdf logs every oddity of a broken file; one line of ours says what became of it.
logging.getLogger("pypdf").setLevel(logging.ERROR)

# Content types that say nothing about the body: a PDF served with one is found by its header.
GENERIC_TYPES = frozenset({
    "", "application/octet-stream", "binary/octet-stream", "application/download",
    "application/force-download", "application/x-download", "application/unknown",
})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat"})

# Word processors put their own name in front of the document's: "Microsoft Word - report.docx".
_PRODUCER_PREFIX = re.compile(r"^(?:Microsoft (?:Word|PowerPoint|Excel) - )", re.IGNORECASE)
# What Markdown would read as markup at a line start (headings, quotes, lists) or anywhere.
_LINE_START = re.compile(r"^(\s*\d*)([#>+\-]|(?<=\d)[.)])(?=\s)")
_INLINE = re.compile(r"([\\`*_\[\]<])")


class PdfUnreadable(Exception):
    """The PDF cannot be read: ``reason`` is ``pdf_encrypted`` or ``pdf_corrupt``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def is_pdf(content_type: str | None, body: bytes) -> bool:
    """Whether a response is a PDF: by its type, or by its body whatever its type says (a PDF
    served as ``text/html`` is still a PDF, and its bytes must not be read as text)."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media in PDF_TYPES:
        return True
    # The header may follow some junk; readers look for it in the first 1,024 bytes.
    at = body.find(b"%PDF-", 0, 1024)
    if at < 0:
        return False
    # Under a type that names something else, only when no markup comes first: an HTML page may
    # quote the header ("files start with %PDF-1.7").
    return media in GENERIC_TYPES or b"<" not in body[:at]


def extract_pdf(body: bytes, url: str, *, min_chars: int = DEFAULT_MIN_CHARS) -> ExtractedPage:
    """The text of a PDF, page by page, as a degraded ``ExtractedPage``.

    Raises PdfUnreadable (encrypted with a password, or corrupt) and NoContent (``pdf_no_text``:
    no page has a text layer, as in a scan; ``too_short``).
    """
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not _decrypt(reader):
            raise PdfUnreadable("pdf_encrypted", "it needs a password")
        pages, broken = [], []
        for number, page in enumerate(reader.pages, 1):
            try:
                pages.append(_page_text(page))
            except Exception as exc:  # one broken page loses that page, not the document
                pages.append("")
                broken.append(f"page {number}: {type(exc).__name__}: {exc}")
        if broken and len(broken) == len(pages):
            raise PdfUnreadable("pdf_corrupt", broken[0])
        if broken:
            logger.warning("PDF %s: %d of %d pages unreadable (%s)", url, len(broken), len(pages), broken[0])
        metadata = reader.metadata
        lang = _catalog_lang(reader)
    except PdfUnreadable:
        raise
    except (PdfReadError, ValueError, TypeError, KeyError, AttributeError, IndexError,
            RecursionError, OSError, AssertionError) as exc:
        # pypdf raises more than its own error types on broken files.
        raise PdfUnreadable("pdf_corrupt", f"{type(exc).__name__}: {exc}") from exc
    sections = [(number, text) for number, text in enumerate(pages, 1) if text]
    if not sections:
        raise NoContent("pdf_no_text", f"{len(pages)} pages without a text layer")
    markdown = "\n\n".join(f"## Page {number}\n\n{_markdown(text)}" for number, text in sections)
    length = len(visible_text(markdown))
    if length < min_chars:
        raise NoContent("too_short", f"{length} chars")
    title = _metadata_title(metadata) or _first_line_title(sections[0][1]) or _file_title(url)
    return ExtractedPage(
        title=title,
        markdown=markdown,
        lang=lang,
        description=_metadata_field(metadata, "/Subject"),
        headings=[{"level": 2, "text": f"Page {number}"} for number, _ in sections],
        quality=quality_score(markdown, True),
        degraded=True,
    )


def _decrypt(reader) -> bool:  # type: ignore[no-untyped-def]
    """Many PDFs are encrypted only against editing, with an empty password to read them."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # a missing crypto backend or an unknown algorithm: unreadable all the same
        return False


def _page_text(page) -> str:  # type: ignore[no-untyped-def]
    lines = []
    for line in (page.extract_text() or "").splitlines():
        line = " ".join(line.split())
        if line or (lines and lines[-1]):
            lines.append(line)
    return composed_text("\n".join(lines).strip())


def _markdown(text: str) -> str:
    """Page text as Markdown that renders as that text: markup characters are escaped."""
    out = []
    for line in text.split("\n"):
        line = _INLINE.sub(r"\\\1", line)
        out.append(_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), line))
    return "\n".join(out)


def _metadata_field(metadata, key: str) -> str | None:  # type: ignore[no-untyped-def]
    try:
        value = metadata.get(key) if metadata else None
    except Exception:  # a broken info dictionary is no reason to lose the text
        return None
    value = composed_text(" ".join(str(value).split())) if value else ""
    return value or None


def _metadata_title(metadata) -> str | None:  # type: ignore[no-untyped-def]
    title = _PRODUCER_PREFIX.sub("", _metadata_field(metadata, "/Title") or "").strip()
    if not title or title.lower() in ("untitled", "title", "document"):
        return None
    return title


def _first_line_title(text: str) -> str | None:
    """The first line of the first page that reads like a heading: short, with words, no full stop."""
    for line in text.split("\n")[:10]:
        line = line.strip()
        if 3 <= len(line) <= 120 and sum(ch.isalpha() for ch in line) >= 3 and not line.endswith((".", ",", ";")):
            return line
    return None


def _file_title(url: str) -> str:
    name = posixpath.basename(unquote(urlsplit(url).path).rstrip("/"))
    return re.sub(r"\.pdf$", "", name, flags=re.IGNORECASE) or url


def _catalog_lang(reader) -> str | None:  # type: ignore[no-untyped-def]
    try:
        lang = reader.trailer["/Root"].get("/Lang")
    except Exception:
        return None
    return str(lang).strip() or None if lang else None
