"""Feed files written through to the operating system on every item.

Scrapy's file storage is buffered: a worker killed with SIGKILL loses the last few items it had
already reported as scraped. In cluster mode a page's lease is released once its item is scraped,
so the feed line must be in the file by then (the OS keeps it when the process dies).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING

from scrapy.extensions.feedexport import FileFeedStorage

if TYPE_CHECKING:
    from scrapy import Spider


class WriteThroughFileFeedStorage(FileFeedStorage):
    """``FileFeedStorage`` with an unbuffered file: each exported item is one write(2)."""

    def open(self, spider: Spider) -> IO[bytes]:
        path = Path(self.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, self.write_mode, buffering=0)
