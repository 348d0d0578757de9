"""The collection's schema and payload layout, and the small store interface that the index
pipeline, the re-crawl state reader, ``scrapy search`` and the MCP server use.

A store is one of two engines behind the same methods (``harvester.index.engines``): Qdrant's
in-process engine (qdrant-edge, the embedded default) or a ``QdrantClient`` (a server at
``QDRANT_URL``, or qdrant-client's local mode, which LangChain and LlamaIndex can open). Callers
speak in the neutral types below, so neither engine's types leak past its adapter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# Defined with the other exceptions, so that a command catches them without importing the store;
# re-exported for the callers that name them here.
from harvester.exceptions import CollectionMismatch, StoreUnavailable  # noqa: F401

# Point ids are decided in harvester.index.ids (free of this module's imports, for crawls that store
# nothing); re-exported because the store's callers name them here.
from harvester.index.ids import POINT_NAMESPACE, boilerplate_point_id, chunk_point_id, point_id  # noqa: F401
from harvester.index.lexical import document_vector

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

# The sparse vector's name says how its terms are made (harvester.index.lexical: FastEmbed's English
# BM25 stems plus the words as written). A collection holding an older encoding has another name
# and is refused, rather than queried with ids that match nothing.
SPARSE_VECTOR = "bm25-en"
OLD_SPARSE_VECTORS = {"bm25": "CRC-32 ids of unstemmed words, from an earlier Harvester"}


# Every point carries LlamaIndex's node fields (a node with flat metadata and the chunk's text) next
# to ``page_content`` + ``metadata`` (LangChain's defaults), so both frameworks read the collection.
NODE_CONTENT = "_node_content"
NODE_TYPE = "_node_type"
# The article dates in a point's payload (ISO 8601 strings, or null): a Datetime payload index each.
PUBLISHED_KEY = "metadata.published"
MODIFIED_KEY = "metadata.modified"
DATE_KEYS = (PUBLISHED_KEY, MODIFIED_KEY)
# The metadata keys a LlamaIndex node carries: what an answer needs to cite its source, kept short
# because the node's JSON is stored in every point.
NODE_METADATA_KEYS = ("source_url", "title", "section", "heading_path", "chunk_index", "domain", "version")
# Node metadata kept out of the text LlamaIndex gives the LLM, and out of the text it would embed
# (the stored vectors embed the context line and the chunk, not the URL).
NODE_EXCLUDED_LLM_KEYS = ("chunk_index", "domain")
NODE_EXCLUDED_EMBED_KEYS = ("source_url", "chunk_index", "domain")
# LlamaIndex's top-level payload key for a node's document (its page URL): what its Qdrant store's
# ``delete(ref_doc_id)`` and ``doc_ids`` filters match.
DOC_ID = "doc_id"
# LlamaIndex's NodeRelationship and ObjectType values, as its node JSON spells them.
_SOURCE, _PREVIOUS, _NEXT = "1", "2", "3"
_TEXT, _DOCUMENT = "1", "4"
# Page-level payload keys kept on a page's first chunk only (``chunk_index`` 0): the page's links
# (for a re-crawl's 304) and its whole Markdown as extracted (what the MCP server's fetch returns).
LINKS_KEY = "links"
MARKDOWN_KEY = "markdown"
PAGE_ONLY_KEYS = (LINKS_KEY, MARKDOWN_KEY)


@dataclass(frozen=True)
class Scope:
    """Which points an operation covers; every field set narrows it (all must hold)."""

    url: str | None = None
    domain: str | None = None
    url_prefix: str | None = None
    section: str | None = None
    # A breadcrumb path's start ("Guide > Tutorial"): the pages of that section and its subsections.
    section_prefix: str | None = None
    exclude_ids: tuple[str, ...] = ()
    # ISO 8601 bounds, both inclusive, on a page's date: ``published``, else ``modified`` when the
    # page states no publication date; a page with neither is outside any date range.
    since: str | None = None
    until: str | None = None
    # A docs version: the points whose ``metadata.versions`` hold it (a page the same in two
    # versions is stored once, with both).
    version: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.url or self.domain or self.url_prefix or self.section or self.section_prefix
                    or self.exclude_ids or self.dated or self.version)

    @property
    def dated(self) -> bool:
        """Whether the scope bounds the pages' dates (``since``, ``until``)."""
        return bool(self.since or self.until)

    def matches(self) -> list[tuple[str, str]]:
        """``(payload key, value)`` pairs a point's payload must equal (each engine builds its own
        filter classes from these and ``prefixes``)."""
        pairs = (("metadata.source_url", self.url), ("metadata.domain", self.domain),
                 ("metadata.section", self.section), ("metadata.versions", self.version))
        return [(key, value) for key, value in pairs if value]

    def prefixes(self) -> list[tuple[str, str]]:
        """``(payload key, prefix)`` pairs a point's payload must start with."""
        pairs = (("metadata.source_url", self.url_prefix), ("metadata.section", self.section_prefix))
        return [(key, value) for key, value in pairs if value]


@dataclass(frozen=True)
class Point:
    """One point to write: its dense vector goes under the name ``using`` (the model's)."""

    id: str
    payload: dict[str, Any]
    dense: list[float] | None = None
    sparse: tuple[list[int], list[float]] | None = None
    using: str = ""


@dataclass(frozen=True)
class Candidate:
    """One scored point of a query."""

    id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Record:
    """One stored point as a scroll returns it."""

    id: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Query:
    """A dense (``dense`` set, against the vector ``using``) or sparse (``sparse``) candidate query."""

    limit: int
    using: str = ""
    dense: list[float] | None = None
    sparse: tuple[list[int], list[float]] | None = None
    scope: Scope | None = None
    with_payload: bool = True
    # Payload keys left out of the candidates (a page's Markdown and links: large, and no search reads them).
    exclude_keys: tuple[str, ...] = ()
    # The payload keys the caller needs of every candidate (None: all but ``exclude_keys``). An engine
    # that keeps them in memory (``Store.remember``) returns only them; another may return the rest.
    keys: tuple[str, ...] | None = None


class Store(Protocol):
    """What Harvester needs of a vector store; both engines implement it."""

    engine: str
    where: str

    def collections(self) -> list[str]: ...

    def exists(self, collection: str) -> bool: ...

    def ensure_collection(self, collection: str, vector: str, dimension: int) -> bool: ...

    def dense_vectors(self, collection: str) -> dict[str, int]: ...

    def sparse_vectors(self, collection: str) -> set[str]: ...

    def upsert(self, collection: str, points: Sequence[Point]) -> None: ...

    def overwrite_payloads(self, collection: str, points: Sequence[Point]) -> None: ...

    def set_metadata(self, collection: str, scope: Scope, values: dict[str, Any]) -> None: ...

    def delete(self, collection: str, ids: Sequence[str] = (), scope: Scope | None = None) -> None: ...

    def scroll(self, collection: str, scope: Scope | None = None, keys: Sequence[str] | None = None,
               batch: int = 1024) -> Iterator[Record]: ...

    def count(self, collection: str, scope: Scope | None = None) -> int: ...

    def points(self, collection: str, batch: int = 256) -> Iterator[Point]: ...

    def query(self, collection: str, queries: Sequence[Query]) -> list[list[Candidate]]: ...

    def retrieve(self, collection: str, ids: Sequence[str], exclude_keys: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
        """The payloads of the points ``ids`` (less ``exclude_keys``) by id; missing ids are left out."""
        ...

    def remember(self, collection: str, keys: Sequence[str]) -> None:
        """Hold ``keys`` of every point of ``collection`` in memory, for a long-lived searcher: a query
        that needs only those (``Query.keys``) then reads no payloads. An engine may do nothing."""
        ...

    def close(self) -> None: ...


def open_client(url: str | None, api_key: str | None, path: str) -> QdrantClient:
    """A server client when ``url`` is set, else qdrant-client's local mode on disk at ``path``."""
    # qdrant-client is imported only where it is used: it takes seconds, and the embedded engine's
    # cold searches do without it.
    from qdrant_client import QdrantClient
    if url:
        return QdrantClient(url=url, api_key=api_key or None)
    Path(path).mkdir(parents=True, exist_ok=True)
    return QdrantClient(path=path)


def local_mode_collections(path: str | Path) -> list[str]:
    """The collections of a qdrant-client local-mode store at ``path`` (none if it is not one),
    read from its ``meta.json`` without opening (and locking) it."""
    meta = Path(path) / "meta.json"
    try:
        return sorted(json.loads(meta.read_text(encoding="utf-8")).get("collections", {}))
    except (OSError, ValueError, AttributeError):
        return []


def ensure_collection(
    client: QdrantClient, name: str, vector: str, dimension: int, *, server: bool = False
) -> bool:
    """Create the collection if missing: the dense ``vector`` (cosine) and the ``bm25-en`` sparse
    vector (Qdrant computes its IDF). True if it was created.

    Raises CollectionMismatch when it exists without a ``vector`` of ``dimension`` values or without
    the sparse vector.
    """
    from qdrant_client import models
    if not client.collection_exists(name):
        client.create_collection(
            name,
            vectors_config={vector: models.VectorParams(size=dimension, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        if server:
            # Re-crawls delete a page's stale chunks by URL; a server needs the index to do it fast
            # (local mode has no payload indexes and says so in a warning).
            client.create_payload_index(name, "metadata.source_url", models.PayloadSchemaType.KEYWORD)
        return True
    params_all = client.get_collection(name).config.params
    check_sparse_encoding(name, params_all.sparse_vectors)
    vectors = params_all.vectors
    params = vectors.get(vector) if isinstance(vectors, dict) else None
    if params is None:
        have = ", ".join(f"{k} ({v.size})" for k, v in vectors.items()) if isinstance(vectors, dict) else str(vectors)
        raise CollectionMismatch(
            f"collection {name!r} has no vector named {vector!r} (it has: {have}); "
            "use another collection or the model it was built with"
        )
    if params.size != dimension:
        raise CollectionMismatch(
            f"collection {name!r} stores {params.size}-dimensional {vector!r} vectors but the "
            f"model makes {dimension}-dimensional ones; use another collection or delete this one"
        )
    return False


def check_sparse_encoding(name: str, sparse_vectors: dict[str, Any] | None) -> None:
    """Raise CollectionMismatch unless the collection's sparse vector is this Harvester's encoding."""
    have = set(sparse_vectors or {})
    if SPARSE_VECTOR in have:
        return
    old = sorted(have & OLD_SPARSE_VECTORS.keys())
    if old:
        raise CollectionMismatch(
            f"collection {name!r} was indexed with an older lexical encoding ({old[0]!r}: "
            f"{OLD_SPARSE_VECTORS[old[0]]}); its terms do not match today's queries. Re-crawl into a new "
            "collection (HARVESTER_QDRANT_COLLECTION) or delete this one and crawl again"
        )
    raise CollectionMismatch(
        f"collection {name!r} has no {SPARSE_VECTOR!r} sparse vector for lexical search "
        "(another program made it); use another collection or delete this one"
    )


def chunk_vectors(dense_name: str, dense: Any, text: str) -> dict[str, Any]:
    """The named vectors of one point: dense from the model (a sequence or a numpy row), sparse
    from the text."""
    from qdrant_client import models

    indices, values = document_vector(text)
    dense_list = dense.tolist() if hasattr(dense, "tolist") else list(dense)
    return {dense_name: dense_list, SPARSE_VECTOR: models.SparseVector(indices=indices, values=values)}


def chunk_anchors(chunks: Sequence[dict[str, Any]], anchors: Sequence[Sequence[str]]) -> list[str | None]:
    """The fragment id of each chunk's heading (its heading path's last), from the page's
    ``(heading text, id)`` pairs in order; None where the page gives that heading no id. A heading
    text that repeats on the page takes the next one from the previous chunk's on."""
    keys = [(_heading_key(text), anchor) for text, anchor in anchors]
    out: list[str | None] = []
    start = 0
    for chunk in chunks:
        path = chunk.get("heading_path") or ()
        key = _heading_key(path[-1]) if path else None
        found = next((i for i in range(start, len(keys)) if keys[i][0] == key), None) if key else None
        if found is None and key:
            found = next((i for i in range(start) if keys[i][0] == key), None)
        if found is not None:
            start = found
        out.append(keys[found][1] if found is not None else None)
    return out


def _heading_key(text: str) -> str:
    # The element's text and the Markdown heading differ by inline markup and escapes only.
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def chunk_payload(page: Any, chunk: dict[str, Any], harvested_at: str, *, nodes: bool = True,
                  anchor: str | None = None) -> dict[str, Any]:
    """The payload of one chunk's point: ``page_content`` + ``metadata``, as LangChain reads it,
    and with ``nodes`` LlamaIndex's node fields (``node_fields``). ``anchor``: the fragment id of the
    chunk's heading (``chunk_anchors``)."""
    payload = {
        "page_content": chunk["text"],
        "metadata": {
            "source_type": page.source_type,
            # LangChain's citing chains read ``source``: the page, at the chunk's heading if it has an id.
            "source": f"{page.url}#{anchor}" if anchor else page.url,
            "source_url": page.url,
            "domain": page.domain,
            "title": page.title,
            "section": page.section,
            "breadcrumbs": page.breadcrumbs,
            "headings": list(chunk["heading_path"]),
            "heading_path": " > ".join(chunk["heading_path"]),
            "anchor": anchor,
            "context": chunk.get("context", ""),
            "chunk_id": chunk["id"],
            "chunk_index": chunk["index"],
            "total_chunks": len(page.chunks),
            "token_count": chunk["token_count"],
            "content_hash": page.content_hash,
            "etag": page.etag,
            "last_modified": page.last_modified,
            "harvested_at": harvested_at,
            "aliases": list(getattr(page, "aliases", None) or ()),
            "near_duplicate_of": getattr(page, "near_duplicate_of", None),
            "boilerplate": bool(chunk.get("boilerplate")),
            "author": getattr(page, "author", None),
            "published": getattr(page, "published", None),
            "modified": getattr(page, "modified", None),
            "description": getattr(page, "description", None),
            "version": getattr(page, "version", None),
            "versions": list(getattr(page, "versions", None) or ()),
        },
    }
    if nodes:
        payload.update(node_fields(chunk["id"], payload, *neighbours(page.chunks, chunk)))
    return payload


def page_payloads(page: Any, harvested_at: str, *, nodes: bool = True) -> list[dict[str, Any]]:
    """The payloads of ``page``'s chunks, in order: each ``chunk_payload`` with its heading's anchor,
    and on the first the page's links and whole Markdown (``PAGE_ONLY_KEYS``)."""
    anchors = chunk_anchors(page.chunks, getattr(page, "anchors", None) or ())
    payloads = []
    for chunk, anchor in zip(page.chunks, anchors, strict=True):
        payload = chunk_payload(page, chunk, harvested_at, nodes=nodes, anchor=anchor)
        if chunk["index"] == 0:
            payload[LINKS_KEY] = list(page.links)
            payload[MARKDOWN_KEY] = page.markdown
        payloads.append(payload)
    return payloads


def neighbours(chunks: Sequence[Any], chunk: dict[str, Any]) -> tuple[str | None, str | None]:
    """The point ids of the chunks before and after ``chunk`` in its page's ``chunks``."""
    position = chunk.get("index", -1)
    if not (0 <= position < len(chunks)) or chunks[position] is not chunk:
        position = next((n for n, other in enumerate(chunks) if other is chunk), -1)
    if position < 0:
        return None, None

    def point_at(n: int) -> str | None:
        other = chunks[n] if 0 <= n < len(chunks) else None
        return other.get("id") if isinstance(other, dict) else None

    return point_at(position - 1), point_at(position + 1)


def node_fields(point: str, payload: dict[str, Any], previous: str | None = None,
                following: str | None = None) -> dict[str, str]:
    """LlamaIndex's ``_node_content`` (a TextNode as JSON: the text once, flat metadata, the page
    as its source document, the page's chunks before and after it, the metadata kept out of the
    prompt), ``_node_type`` and ``doc_id``: its ``QdrantVectorStore`` rebuilds nodes from them."""
    metadata = payload.get("metadata") or {}
    page = metadata.get("source_url")
    relationships = {}
    if page:
        relationships[_SOURCE] = {"node_id": page, "node_type": _DOCUMENT}
    if previous:
        relationships[_PREVIOUS] = {"node_id": previous, "node_type": _TEXT}
    if following:
        relationships[_NEXT] = {"node_id": following, "node_type": _TEXT}
    node = {
        "id_": point,
        "text": payload.get("page_content", ""),
        "metadata": {key: metadata.get(key) for key in NODE_METADATA_KEYS},
        "excluded_llm_metadata_keys": list(NODE_EXCLUDED_LLM_KEYS),
        "excluded_embed_metadata_keys": list(NODE_EXCLUDED_EMBED_KEYS),
        "relationships": relationships,
        "class_name": "TextNode",
    }
    fields = {NODE_CONTENT: json.dumps(node, ensure_ascii=False, separators=(",", ":")), NODE_TYPE: "TextNode"}
    if page:
        fields[DOC_ID] = page
    return fields


def chunk_point(point: str, using: str, dense: Any, text: str, payload: dict[str, Any]) -> Point:
    """A chunk's point: the model's dense vector (a sequence or a numpy row) named ``using``, and
    the BM25 sparse vector of ``text``."""
    dense_list = dense.tolist() if hasattr(dense, "tolist") else list(dense)
    return Point(id=point, payload=payload, dense=dense_list, sparse=document_vector(text), using=using)
