"""Turn download failures into short reason codes for stats, the run report and error lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import exceptions as scrapy_errors
from scrapy.exceptions import IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error as net_error

from harvester.exceptions import RequestRefused

if TYPE_CHECKING:
    from twisted.python.failure import Failure

_NETWORK_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    # Scrapy 2.19 wraps Twisted's errors in its own; older code paths still raise Twisted's.
    (scrapy_errors.CannotResolveHostError, "dns_lookup_failed"),
    (scrapy_errors.DownloadConnectionRefusedError, "connection_refused"),
    (scrapy_errors.DownloadTimeoutError, "timeout"),
    (scrapy_errors.ResponseDataLossError, "truncated_response"),
    (scrapy_errors.DownloadFailedError, "download_failed"),
    (scrapy_errors.UnsupportedURLSchemeError, "unsupported_scheme"),
    # Raised by the HTTP handler when a body grows past DOWNLOAD_MAXSIZE.
    (scrapy_errors.DownloadCancelledError, "too_large"),
    (net_error.DNSLookupError, "dns_lookup_failed"),
    (net_error.ConnectionRefusedError, "connection_refused"),
    (net_error.TimeoutError, "timeout"),
    (net_error.TCPTimedOutError, "timeout"),
    (net_error.ConnectionLost, "connection_lost"),
    (net_error.ConnectionDone, "connection_lost"),
    (net_error.ConnectError, "connection_failed"),
)


def failure_reason(exc: BaseException) -> str:
    """A stable snake_case code for why a request failed (``http_404``, ``dns_lookup_failed``...)."""
    if isinstance(exc, HttpError):
        return f"http_{exc.response.status}"
    if isinstance(exc, RequestRefused):
        return "ssrf_refused"
    if isinstance(exc, IgnoreRequest):
        if "exceeded DOWNLOAD_MAXSIZE" in str(exc):  # HttpCompressionMiddleware: a decompression bomb
            return "too_large"
        return "robots_forbidden" if "robots.txt" in str(exc) else "ignored"
    for exc_type, reason in _NETWORK_REASONS:
        if isinstance(exc, exc_type):
            return reason
    return type(exc).__name__.lower()


def describe_failure(failure: Failure) -> str:
    """One human line: the reason code and the exception's own words."""
    exc = failure.value
    if isinstance(exc, HttpError):
        return f"HTTP {exc.response.status} from {exc.response.url}"
    detail = str(exc).strip() or type(exc).__name__
    return f"{failure_reason(exc)} ({detail})"
