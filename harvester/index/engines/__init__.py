"""Opening the store: a Qdrant server when ``QDRANT_URL`` is set, else the embedded engine at
``HARVESTER_QDRANT_PATH`` (``HARVESTER_QDRANT_ENGINE``: ``edge``, Qdrant's in-process engine, or
``local``, qdrant-client's local mode)."""

from __future__ import annotations

from typing import Any

from harvester.index.engines.edge import DEFAULT_WAIT, EdgeStore, edge_collections
from harvester.index.store import Store, StoreUnavailable, local_mode_collections, open_client

ENGINES = ("edge", "local")


def open_store(url: str | None, api_key: str | None, path: str, engine: str = "edge",
               wait: float = DEFAULT_WAIT) -> Store:
    """The store at ``url`` (a server) or ``path`` (embedded, by ``engine``)."""
    if engine == "edge" and not url:
        return EdgeStore(path, wait=wait)
    # Imported only for these engines: qdrant-client takes seconds to import.
    from harvester.index.engines.client import ClientStore

    if url:
        return ClientStore(open_client(url, api_key, path), engine="server", where=url)
    if engine == "local":
        try:
            client = open_client(None, None, path)
        except RuntimeError as exc:  # "already accessed by another instance"
            raise StoreUnavailable(f"{path}: {exc}") from exc
        return ClientStore(client, engine="local", where=path)
    raise ValueError(f"unknown store engine {engine!r}: one of {ENGINES}")


def legacy_collections(path: str) -> list[str]:
    """Collections at ``path`` in qdrant-client's local-mode format that the embedded engine does not
    have (written by a Harvester before the engine changed)."""
    return [c for c in local_mode_collections(path) if c not in edge_collections(path)]


def legacy_message(path: str, collection: str) -> str:
    return (f"collection {collection!r} at {path} is in qdrant-client's local-mode format (an older "
            "Harvester wrote it); move it to the embedded engine with `scrapy export --from-engine "
            f"local --to-edge {path} --collection {collection}`, or keep using it with "
            "-s HARVESTER_QDRANT_ENGINE=local")


def as_store(client: Any) -> Store:
    """``client`` as a store: a store is returned as is, a ``QdrantClient`` (or anything with its
    query API) is wrapped."""
    if hasattr(client, "dense_vectors"):
        return client
    from harvester.index.engines.client import ClientStore

    return ClientStore(client)
