"""Hand-written PDF files for tests: text pages in Helvetica, an info dictionary, nothing else.

Written by hand (PDF 1.4 objects and a cross-reference table) so the tests need no PDF writer and
know exactly what is in the file.
"""

from __future__ import annotations


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], *, title: str | None = None, lang: str | None = None,
             padding: int = 0, info: dict[str, str] | None = None) -> bytes:
    """A PDF with one page per entry of ``pages``, each a list of text lines (an empty list makes
    a page without text, as a scan has). ``padding`` adds that many bytes in a comment stream,
    for size limits."""
    objects: list[bytes] = []

    def add(body: str | bytes) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pages_id = len(objects) + 1 + 2 * len(pages) + 1  # after the page and content objects below
    kids = []
    for lines in pages:
        if lines:
            ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
            for line in lines:
                ops.append(f"({_escape(line)}) Tj T*")
            ops.append("ET")
        else:
            ops = ["0.5 g", "72 600 200 100 re f"]  # a grey box: drawing, no text
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(
            f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {content} 0 R >>"
        ))
    if padding:
        filler = b"% " + b"x" * padding
        add(b"<< /Length %d >>\nstream\n" % len(filler) + filler + b"\nendstream")
    else:
        add("null")
    assert len(objects) + 1 == pages_id
    add(f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>")
    lang_entry = f" /Lang ({_escape(lang)})" if lang else ""
    catalog = add(f"<< /Type /Catalog /Pages {pages_id} 0 R{lang_entry} >>")
    fields = dict(info or {})
    if title is not None:
        fields["Title"] = title
    info_id = add("<< " + " ".join(f"/{k} ({_escape(v)})" for k, v in fields.items()) + " >>")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root {catalog} 0 R /Info {info_id} 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode("latin-1")
    return bytes(out)


def encrypted_pdf(pages: list[list[str]], password: str = "secret") -> bytes:
    """The same document, encrypted with a user password (pypdf's writer does the encryption)."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages, title="Locked"))))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


MANUAL_PAGES = [
    ["Frobnicator Operations Manual", "",
     "This manual explains how to install the frobnicator on a production host.",
     "Read the whole of it before the first deployment."],
    ["Configuration", "",
     "Set frob_level to 3 in settings.toml to enable the turbo encabulator.",
     "The encabulator needs a restart after every change of frob_level."],
    ["Troubleshooting", "",
     "When the encabulator hums, lower frob_level and restart the service.",
     "Report persistent humming to the maintainers with your settings file."],
]
