"""CrawlDelayThrottle in place of AutoThrottle."""

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from harvester.fetch.throttle import CrawlDelayThrottle
from tests.components import components, crawler_with


def test_autothrottle_is_replaced_and_crawl_delay_works_without_it():
    crawler = crawler_with()
    extensions = components(crawler.settings, "EXTENSIONS")
    assert extensions[CrawlDelayThrottle] == 0
    assert build_from_crawler(CrawlDelayThrottle, crawler_with(AUTOTHROTTLE_ENABLED=False)) is not None
    with pytest.raises(NotConfigured):
        build_from_crawler(CrawlDelayThrottle, crawler_with(
            AUTOTHROTTLE_ENABLED=False, HARVESTER_CRAWL_DELAY_ENABLED=False))
