"""A documentation site for re-crawl tests that the test edits between crawls.

Every page is served with an ``ETag`` (a hash of its body) and a ``Last-Modified`` date, and
``SiteServer`` answers 304 to a request whose validators match, as a real web server does.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

from scrapy.dupefilters import RFPDupeFilter

from tests.servers.sites import doc_page
from tests.servers.sitesrv import Route, SiteServer

LAST_MODIFIED = format_datetime(datetime(2026, 1, 5, 12, 0, tzinfo=UTC), usegmt=True)


def section(page: str, number: int, words: str = "") -> str:
    prose = " ".join(
        f"Step {n} of the {page} procedure number {number} checks the {page}_{number} setting."
        for n in range(12)
    )
    return f"<h2>{page.title()} topic {number}</h2><p>{prose} {words}</p>"


class EditableSite:
    """``/docs/index.html`` and pages whose sidebar links every listed page. Change it with
    ``edit``, ``delete``, ``add``, ``unlink``; ``routes`` is what ``SiteServer`` serves."""

    def __init__(self, names: list[str], sections: int = 4) -> None:
        self.sections = {name: [section(name, n) for n in range(sections)] for name in names}
        self.linked = list(names)
        self.deleted: set[str] = set()
        self.blanked: set[str] = set()
        self.routes: dict[str, Route] = {}
        self.version: dict[str, int] = {}
        self.render()

    def path(self, name: str) -> str:
        return f"/docs/{name}.html"

    def render(self) -> None:
        sidebar = ["/docs/index.html"] + [self.path(name) for name in self.linked]
        pages = {"index": [section("index", 0)], **self.sections}
        self.routes.clear()
        self.routes["/robots.txt"] = Route("User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"})
        for name, parts in pages.items():
            if name in self.deleted:
                continue
            body = doc_page(name, sidebar=sidebar, extra_body="".join(parts))
            if name in self.blanked:
                body = "<html><head><title>Moved</title></head><body><p>Moved.</p></body></html>"
            etag = '"' + hashlib.sha1(body.encode()).hexdigest()[:16] + '"'
            self.routes[self.path(name)] = Route(body, headers={"ETag": etag, "Last-Modified": LAST_MODIFIED})

    def publish(self, server: SiteServer) -> None:
        """Serve the site as it is now."""
        server.routes = dict(self.routes)

    def edit(self, name: str, number: int, words: str) -> None:
        self.sections[name][number] = section(name, number, words)
        self.render()

    def delete(self, name: str) -> None:
        self.deleted.add(name)
        self.render()

    def add(self, name: str, sections: int = 4) -> None:
        self.sections[name] = [section(name, n) for n in range(sections)]
        self.linked.append(name)
        self.render()

    def blank(self, name: str) -> None:
        """The page is still linked and answers 200, with no content worth storing."""
        self.blanked.add(name)
        self.render()

    def unlink(self, name: str) -> None:
        """The page stays online but no page links to it any more."""
        self.linked.remove(name)
        self.render()

    def url(self, server_url: str, name: str) -> str:
        return server_url.rstrip("/") + self.path(name)


class FlushingDupeFilter(RFPDupeFilter):
    """Scrapy's dupefilter, with ``JOBDIR/requests.seen`` flushed after every request, as it is
    flushed regularly (every 8 KiB of fingerprints) in a crawl of a real site: a small test site
    would otherwise never get its fingerprints to disk before a SIGKILL."""

    def request_seen(self, request: Any) -> bool:
        seen = super().request_seen(request)
        if self.file:
            self.file.flush()
        return seen
