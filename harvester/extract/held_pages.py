"""Pages waiting for their host's learned template (``harvester.extract.template``), and the file in
``JOBDIR`` that keeps their requests while a job is paused. Scrapy-free."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from harvester.extract.extractor import Prepared

# In JOBDIR: the requests of the pages that waited for their template when the job paused.
HELD_FILE = "harvester-template-held.pickle"


class HeldPages:
    """The waiting pages by host, in the order they came."""

    def __init__(self) -> None:
        self._by_host: dict[str, list[Prepared]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_host)

    def __contains__(self, host: str) -> bool:
        return host in self._by_host

    def add(self, host: str, prepared: Prepared) -> None:
        self._by_host.setdefault(host, []).append(prepared)

    def pop(self, host: str) -> list[Prepared]:
        """``host``'s pages, which wait no more."""
        return self._by_host.pop(host, [])

    def hosts(self) -> list[str]:
        return list(self._by_host)

    def by_host(self) -> Iterator[tuple[str, list[Prepared]]]:
        return iter(self._by_host.items())

    def requests(self) -> list[Any]:
        """The requests of every waiting page, to fetch again when a paused job resumes."""
        return [p.response.request for pages in self._by_host.values() for p in pages if p.response.request]


def save_requests(path: Path, saved: list[dict[str, Any]]) -> None:
    """Keep ``saved`` (``Request.to_dict`` of each) in ``path``; none removes the file. OSError
    when it cannot be written."""
    if saved:
        path.write_bytes(pickle.dumps(saved, protocol=4))
    else:
        path.unlink(missing_ok=True)


def load_requests(path: Path) -> list[dict[str, Any]]:
    """The requests saved in ``path``, which is removed: they are fetched once. OSError,
    pickle.PickleError or EOFError when it cannot be read."""
    saved: list[dict[str, Any]] = pickle.loads(path.read_bytes())  # noqa: S301 (the crawl's own JOBDIR file)
    path.unlink()
    return saved
