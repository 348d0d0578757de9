"""Point ids: which point of the index a chunk is, decided before anything is stored.
Scrapy-free, and free of Qdrant's client, so chunking and dedup can name points in a crawl that
stores none (embedding and index off) without importing the client.

``harvester.index.store`` re-exports them.
"""

from __future__ import annotations

import hashlib
import uuid

# Fixed so that a page's chunk keeps its point id across crawls and machines.
POINT_NAMESPACE = uuid.UUID("6f1c4a52-9d1b-4e59-9a43-3f0cbd3c7a11")


def point_id(url: str, index: int) -> str:
    """The deterministic point id of chunk ``index`` of the page at ``url``."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{url}#{index}"))


def chunk_point_id(url: str, text: str, occurrence: int = 0) -> str:
    """The point id of a chunk of the page at ``url`` whose embedded text is ``text``.

    Derived from the text, not the chunk's position, so a re-crawl keeps the ids (and the vectors)
    of the chunks that did not change when text is inserted above them; ``occurrence`` tells apart
    the same text repeated on one page.
    """
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    suffix = f"#{occurrence}" if occurrence else ""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{url}#text:{digest}{suffix}"))


def boilerplate_point_id(text: str, version: str | None = None) -> str:
    """The point id of a boilerplate chunk: from its text alone (whitespace collapsed), so the one
    stored copy is the same point whichever page carried it first, in this crawl and the next; one
    per docs ``version``, so each version finds its own."""
    digest = hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()
    return str(uuid.uuid5(POINT_NAMESPACE, f"boilerplate:{digest}" + (f"@{version}" if version else "")))
