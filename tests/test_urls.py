import pytest
import scrapy

from harvester.exceptions import InvalidStartUrl
from harvester.urls.rules import (
    DEFAULT_SKIP_PATTERNS,
    canonical_url,
    compile_patterns,
    content_hash,
    in_scope,
    scope_prefix,
    url_allowed,
    validate_start_url,
)


@pytest.mark.parametrize("url", ["https://docs.example.com/", " http://127.0.0.1:8000/docs/x.html "])
def test_valid_start_urls(url):
    assert validate_start_url(url) == url.strip()


@pytest.mark.parametrize(
    ("url", "request_url"),
    [
        ("http://bücher.example/Docs/ä.html", "http://xn--bcher-kva.example/Docs/%C3%A4.html"),
        ("HTTP://Docs.Example.COM:8080/", "http://docs.example.com:8080/"),
        ("http://0x7f.0.0.1:8000/docs/", "http://127.0.0.1:8000/docs/"),
        ("http://2130706433/", "http://127.0.0.1/"),
    ],
)
def test_a_start_url_is_spelled_as_its_request_is(url, request_url):
    """Scope, allowed_domains and page keys compare the start URL with the requests' URLs."""
    assert validate_start_url(url) == request_url
    assert scrapy.Request(url).url == request_url


@pytest.mark.parametrize(
    ("url", "words"),
    [
        (None, "no start URL"),
        ("", "no start URL"),
        ("ftp://example.com/docs/", "only http:// and https://"),
        ("file:///etc/passwd", "only http:// and https://"),
        ("example.com/docs", "only http:// and https://"),
        ("http://", "no valid host"),
        ("http://exa mple.com/", "no valid host"),
        ("http://example.com:99999/", "invalid start URL"),
        ("http://exa%20mple.com/", "invalid start URL"),
    ],
)
def test_invalid_start_urls(url, words):
    with pytest.raises(InvalidStartUrl, match=words):
        validate_start_url(url)


@pytest.mark.parametrize(
    ("url", "prefix"),
    [("http://h/", "/"), ("http://h", "/"), ("http://h/docs/", "/docs/"),
     ("http://h/docs/intro.html", "/docs/"), ("http://h/en/latest", "/en/")],
)
def test_scope_prefix(url, prefix):
    assert scope_prefix(url) == prefix


def test_scope_requires_same_host_port_and_prefix():
    start = "http://127.0.0.1:8000/docs/index.html"
    assert in_scope("http://127.0.0.1:8000/docs/a/b.html", start)
    assert in_scope("https://127.0.0.1:8000/docs/", start)
    assert not in_scope("http://127.0.0.1:8001/docs/a.html", start)
    assert not in_scope("http://127.0.0.2:8000/docs/a.html", start)
    assert not in_scope("http://127.0.0.1:8000/blog/a.html", start)
    assert not in_scope("ftp://127.0.0.1:8000/docs/a.html", start)


@pytest.mark.parametrize(
    "url",
    ["http://h/search.html?q=x", "http://h/docs/?s=widgets", "http://h/genindex.html",
     "http://h/genindex.html#modules", "http://h/py-modindex.html", "http://h/_modules/flask/app.html",
     "http://h/_static/basic.css", "http://h/feed/", "http://h/atom.xml", "http://h/404.html",
     "http://h/page?share=twitter", "http://h/w/index.php?title=X&action=edit", "http://h/?login=1"],
)
def test_default_skip_patterns_catch_non_content(url):
    assert not url_allowed(url, [], compile_patterns(DEFAULT_SKIP_PATTERNS))


@pytest.mark.parametrize(
    "url", ["http://h/quickstart.html", "http://h/api/search-engines.html", "http://h/tutorial/login.html",
            "http://h/patterns/categories.html",
            # Words in a path decide nothing: the page does (tests/test_classify.py).
            "http://h/auth/", "http://h/auth/index.html", "http://h/search.html", "http://h/search/",
            "http://h/accounts/", "http://h/accounts/sign-up/", "http://h/login", "http://h/tags/",
            "http://h/tag/python/", "http://h/category/news/", "http://h/authors/"],
)
def test_default_skip_patterns_keep_content(url):
    assert url_allowed(url, [], compile_patterns(DEFAULT_SKIP_PATTERNS))


def test_allow_and_deny_from_comma_separated_arguments():
    allow, deny = compile_patterns(r"/api/,/guide/"), compile_patterns(r"\.pdf$")
    assert url_allowed("http://h/api/x.html", allow, deny)
    assert not url_allowed("http://h/blog/x.html", allow, deny)
    assert not url_allowed("http://h/api/x.pdf", allow, deny)
    with pytest.raises(ValueError, match="invalid URL pattern"):
        compile_patterns("(unclosed")


def test_canonical_url_and_content_hash():
    assert canonical_url("http://h/a?b=2&a=1#frag") == "http://h/a?a=1&b=2"
    assert content_hash("# Title\n\nSome  text") == content_hash("# title\nsome text\n")
    assert content_hash("# Title") != content_hash("# Other")
