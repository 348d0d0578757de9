"""The crawl command's verdict on a finished crawl."""

from harvester.commands.crawl import crawl_failure


def test_crawl_failure_verdicts():
    assert crawl_failure({"finish_reason": "finished", "harvester/pages/crawled": 3}) is None
    assert "start URL" in crawl_failure({"finish_reason": "start_url_failed"})
    assert "Qdrant" in crawl_failure({"finish_reason": "index_unavailable", "harvester/pages/crawled": 1})
    assert "no page" in crawl_failure({"finish_reason": "finished"})
    assert "every page" in crawl_failure({"finish_reason": "finished", "harvester/pages/crawled": 2,
                                          "harvester/pages/failed/extraction_error": 2})
