"""How Scrapy logs what happens to items (``LOG_FORMATTER``, set by the settings spec).

Scrapy logs every dropped item with its whole repr: a page's Markdown and chunks, kilobytes per
duplicate or aggregate page. Harvester's drop reasons (``harvester.exceptions``) name the page and
why it was dropped, so one line says it; the item is left out, at every level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter, is_item
from scrapy.logformatter import LogFormatter, LogFormatterResult

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Response
    from twisted.python.failure import Failure


class HarvesterLogFormatter(LogFormatter):
    """Scrapy's LogFormatter, with one line per dropped item: its URL and the reason."""

    def dropped(
        self,
        item: Any,
        exception: BaseException,
        response: Response | Failure | None,
        spider: Spider,
    ) -> LogFormatterResult:
        # The level as Scrapy picks it: the exception's own, else DEFAULT_DROPITEM_LOG_LEVEL.
        result = super().dropped(item, exception, response, spider)
        reason = str(exception)
        url = _item_url(item)
        if url and url not in reason:
            return {"level": result["level"], "msg": "Dropped %(url)s: %(reason)s",
                    "args": {"url": url, "reason": reason}}
        return {"level": result["level"], "msg": "Dropped: %(reason)s", "args": {"reason": reason}}


def _item_url(item: Any) -> str | None:
    if not is_item(item):
        return None
    url = ItemAdapter(item).get("url")
    return str(url) if url else None

