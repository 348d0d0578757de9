"""The run summary and the failure reasons it counts."""

from harvester.report.extension import format_summary


def test_summary_block_names_every_figure():
    text = format_summary({
        "spider": "docs", "finish_reason": "finished", "pages_crawled": 5, "pages_stored": 3,
        "pages_skipped": 1, "skipped_by_reason": {"robots_forbidden": 1}, "pages_failed": 1,
        "failed_by_reason": {"http_404": 1}, "chunks_stored": 12, "elapsed_seconds": 2.5,
    }, "/tmp/r.json")
    for words in ("pages crawled:  5", "pages stored:   3", "robots_forbidden: 1", "http_404: 1",
                  "chunks stored:  12", "2.5 s", "/tmp/r.json"):
        assert words in text


def test_failure_reasons_are_short_codes():
    from scrapy import exceptions
    from scrapy.http import Response
    from scrapy.spidermiddlewares.httperror import HttpError
    from twisted.internet import error

    from harvester.report.failures import failure_reason

    assert failure_reason(exceptions.DownloadConnectionRefusedError("x")) == "connection_refused"
    assert failure_reason(exceptions.CannotResolveHostError("x")) == "dns_lookup_failed"
    assert failure_reason(error.TimeoutError()) == "timeout"
    assert failure_reason(HttpError(Response("http://h/", status=503))) == "http_503"
    assert failure_reason(exceptions.IgnoreRequest("Forbidden by robots.txt")) == "robots_forbidden"
