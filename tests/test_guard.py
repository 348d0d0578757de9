"""The SSRF guard's rules, its resolver (over a stub name table) and its middleware, without a crawl."""

from __future__ import annotations

import ipaddress

import pytest
from scrapy import Request
from scrapy.utils.test import get_crawler

from harvester.exceptions import RequestRefused
from harvester.guard.middleware import SSRFGuardMiddleware
from harvester.guard.resolver import REFUSED_HOSTS, GuardedResolver
from harvester.guard.rules import AllowList, GuardError, address_refusal, parse_ip, url_refusal
from tests.servers.stubdns import TableResolver

LOOPBACK_SPELLINGS = ["127.0.0.1", "2130706433", "0x7f000001", "0x7f.1", "0x7f.0.0.1", "0177.0.0.1",
                      "0177.1", "127.1", "127.0.1", "127.0.0.1.", "[::1]", "[::ffff:127.0.0.1]",
                      "[::ffff:7f00:1]", "[::127.0.0.1]", "[64:ff9b::127.0.0.1]", "[2002:7f00:1::]"]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_every_spelling_of_loopback_is_refused(host: str) -> None:
    assert parse_ip(host) is not None
    assert url_refusal(f"http://{host}:8080/docs/", AllowList()) == "loopback"


@pytest.mark.parametrize(("address", "reason"), [
    ("127.0.0.2", "loopback"), ("127.255.255.254", "loopback"), ("::1", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"),
    ("192.168.1.1", "private"), ("fc00::1", "private"), ("fd12:3456::1", "private"),
    ("169.254.169.254", "link_local"), ("fe80::1", "link_local"), ("fe80::1%eth0", "link_local"),
    ("100.64.0.1", "shared"), ("100.127.255.254", "shared"),
    ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"), ("::", "unspecified"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"), ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"),
    ("192.0.2.1", "private"), ("198.51.100.7", "private"), ("203.0.113.9", "private"),
    ("2001:db8::1", "private"), ("198.18.0.1", "private"), ("192.0.0.8", "reserved"),
    # IPv4 carried in IPv6: judged by the IPv4 address.
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:169.254.169.254", "link_local"),
    ("::ffff:10.0.0.1", "private"), ("::ffff:100.64.0.1", "shared"), ("::10.0.0.1", "private"),
    ("64:ff9b::a9fe:a9fe", "link_local"), ("64:ff9b::10.0.0.1", "private"),
    ("64:ff9b:1::a00:1", "nat64_local"), ("2002:a9fe:a9fe::1", "link_local"),
])
def test_non_public_addresses_are_refused(address: str, reason: str) -> None:
    refusal = address_refusal(ipaddress.ip_address(address))
    assert refusal == reason


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111",
                                     "::ffff:93.184.216.34", "64:ff9b::808:808", "100.128.0.1"])
def test_public_addresses_pass(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "gopher://example.com/",
                                 "data:text/html,hi", "s3://bucket/key", "dict://example.com:11211/"])
def test_only_http_and_https(url: str) -> None:
    assert url_refusal(url, AllowList()) == "scheme"


def test_host_names_and_public_literals_pass_the_text_check() -> None:
    allow = AllowList()
    assert url_refusal("https://docs.example.com/x", allow) is None
    assert url_refusal("http://93.184.216.34/", allow) is None
    assert url_refusal("http://169.254.169.254/latest/meta-data/", allow) == "link_local"
    assert url_refusal("http://[fd00::1]:8080/", allow) == "private"


def test_allow_list_hosts_ports_and_ranges() -> None:
    allow = AllowList.parse("127.0.0.1, wiki.internal, 10.0.0.0/8, 192.168.1.5:8080, .corp.example, [::1]:9000")
    assert url_refusal("http://127.0.0.1:1234/", allow) is None
    assert url_refusal("http://2130706433/", allow) is None  # the same address, spelt otherwise
    assert url_refusal("http://127.0.0.2:1234/", allow) == "loopback"
    assert url_refusal("http://2130706434:1234/", allow) == "loopback"
    assert url_refusal("http://10.20.30.40/", allow) is None
    assert url_refusal("http://192.168.1.5:8080/", allow) is None
    assert url_refusal("http://192.168.1.5:8081/", allow) == "private"
    assert url_refusal("http://[::1]:9000/", allow) is None
    assert url_refusal("http://[::1]:9001/", allow) == "loopback"
    assert allow.allows_name("wiki.internal", 443) and allow.allows_name("WIKI.internal.", 80)
    assert allow.allows_name("a.b.corp.example", 80) and not allow.allows_name("corp.example.evil", 80)
    assert not allow.allows_name("other.internal", 80)


def test_allow_list_names_match_their_idna_form() -> None:
    """Requests, the resolver and the browser ask for a non-ASCII name in its IDNA form."""
    allow = AllowList.parse("Bücher.intern, .über.test:8080")
    assert allow.allows_name("xn--bcher-kva.intern", 80)
    assert allow.allows_name("wiki.xn--ber-goa.test", 8080)
    assert not allow.allows_name("wiki.xn--ber-goa.test", 80)
    assert not allow.allows_name("bucher.intern", 80)


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "host:port", "host:0", "::1/200"])
def test_bad_allow_list_entries_are_errors(entry: str) -> None:
    with pytest.raises(GuardError, match="HARVESTER_ALLOWED_HOSTS"):
        AllowList.parse(entry)


class Collect:
    def __init__(self) -> None:
        self.addresses: list[str] = []
        self.complete = False

    def resolutionBegan(self, resolution: object) -> None:
        pass

    def addressResolved(self, address: object) -> None:
        self.addresses.append(address.host)

    def resolutionComplete(self) -> None:
        self.complete = True


TABLE = {
    "public.test": ["93.184.216.34", "2606:4700:4700::1111"],
    "metadata.test": ["169.254.169.254"],
    "mixed.test": ["10.0.0.5", "93.184.216.34", "::ffff:127.0.0.1", "100.64.1.1"],
    "wiki.internal": ["10.1.1.1"],
    "office.test": ["192.168.7.7"],
    "rebind.test": ["127.0.0.2"],
}


def resolve(name: str, port: int = 80, allow: str = "") -> list[str]:
    resolver = GuardedResolver(None, TableResolver(TABLE), AllowList.parse(allow))
    receiver = Collect()
    resolver.resolveHostName(receiver, name, port)
    assert receiver.complete
    return receiver.addresses


def test_resolver_passes_only_public_addresses() -> None:
    assert resolve("public.test") == ["93.184.216.34", "2606:4700:4700::1111"]
    assert resolve("mixed.test") == ["93.184.216.34"]
    assert "mixed.test" not in REFUSED_HOSTS  # one address was fine: not a refusal


def test_resolver_refuses_names_of_private_addresses_and_remembers_why() -> None:
    assert resolve("metadata.test") == []
    assert REFUSED_HOSTS["metadata.test"] == ("169.254.169.254", "link_local")
    assert resolve("rebind.test") == []
    assert REFUSED_HOSTS["rebind.test"][1] == "loopback"


def test_resolver_allow_list_by_name_range_and_port() -> None:
    assert resolve("wiki.internal", allow="wiki.internal") == ["10.1.1.1"]
    assert resolve("wiki.internal", allow="10.0.0.0/8") == ["10.1.1.1"]
    assert resolve("office.test", 8080, allow="192.168.7.7:8080") == ["192.168.7.7"]
    assert resolve("office.test", 8081, allow="192.168.7.7:8080") == []
    assert resolve("wiki.internal", allow="other.internal") == []


class FakeReactor:
    """The part of a reactor a name resolver uses."""

    def __init__(self, resolver: object) -> None:
        self.nameResolver = resolver

    def installNameResolver(self, resolver: object) -> None:
        self.nameResolver = resolver


def test_a_resolver_installed_over_another_judges_by_its_own_settings_only() -> None:
    """A second crawler process in one Python process (a service, the test harness) installs a
    second resolver: it must not resolve through the first one's judgement nor keep its refusals."""
    from types import SimpleNamespace

    from scrapy.settings import Settings

    system = TableResolver(TABLE)
    reactor = FakeReactor(system)

    def install(allow: str) -> None:
        process = SimpleNamespace(settings=Settings({"HARVESTER_ALLOWED_HOSTS": allow}))
        GuardedResolver.from_crawler(process, reactor).install_on_reactor()

    def resolve(name: str) -> list[str]:
        receiver = Collect()
        reactor.nameResolver.resolveHostName(receiver, name, 80)
        assert receiver.complete
        return receiver.addresses

    install("")
    assert resolve("wiki.internal") == [] and "wiki.internal" in REFUSED_HOSTS
    install("wiki.internal, office.test")
    assert "wiki.internal" not in REFUSED_HOSTS
    # Names the first resolver refuses (office.test was never resolved: no cached answer).
    assert resolve("office.test") == ["192.168.7.7"] and resolve("wiki.internal") == ["10.1.1.1"]
    assert reactor.nameResolver.replaced is system
    install("")
    assert resolve("office.test") == []


def test_the_middleware_says_when_a_crawlers_guard_settings_are_not_the_resolvers(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import harvester.guard.middleware as guard_middleware

    resolver = GuardedResolver(None, TableResolver(TABLE), AllowList.parse("127.0.0.1"), True, ["127.0.0.1"])
    monkeypatch.setattr(guard_middleware, "installed_resolver", lambda: resolver)
    with caplog.at_level("WARNING", logger="harvester.guard.middleware"):
        guard(HARVESTER_ALLOWED_HOSTS=["127.0.0.1"])
        assert not caplog.records
        guard(HARVESTER_ALLOWED_HOSTS=["10.0.0.0/8"])
        assert "host names are judged by the process's settings" in caplog.text
        caplog.clear()
        monkeypatch.setattr(guard_middleware, "installed_resolver", lambda: None)
        guard()
        assert "Host names are not checked at the socket" in caplog.text


def guard(**settings: object) -> SSRFGuardMiddleware:
    return SSRFGuardMiddleware(get_crawler(settings_dict={"HARVESTER_SSRF_GUARD_ENABLED": True,
                                                          "HARVESTER_ALLOWED_HOSTS": [], **settings}))


def test_middleware_refuses_redirect_refresh_sitemap_and_link_targets_alike() -> None:
    middleware = guard(HARVESTER_ALLOWED_HOSTS=["127.0.0.1"])
    assert middleware.process_request(Request("http://127.0.0.1:8000/docs/")) is None
    assert middleware.process_request(Request("https://docs.example.com/")) is None
    for url in ("http://127.0.0.2:8000/", "http://0x7f.2:8000/", "http://[::ffff:127.0.0.2]/",
                "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/"):
        with pytest.raises(RequestRefused):
            middleware.process_request(Request(url, meta={"redirect_times": 1}))


def test_middleware_turns_the_resolvers_refusal_into_a_refusal() -> None:
    from scrapy.exceptions import CannotResolveHostError

    middleware = guard()
    REFUSED_HOSTS["internal.test"] = ("10.9.9.9", "private")
    with pytest.raises(RequestRefused, match="private"):
        middleware.process_exception(Request("http://internal.test/"), CannotResolveHostError("no"))
    assert middleware.process_exception(Request("http://nx.test/"), CannotResolveHostError("no")) is None


@pytest.mark.cli
def test_a_bad_allow_list_stops_the_crawl_with_exit_2(tmp_path) -> None:
    from tests.crawl import run_scrapy

    process = run_scrapy(["crawl", "docs", "-a", "start=http://127.0.0.1:1/", "-s",
                          "HARVESTER_ALLOWED_HOSTS=127.0.0.1,10.0.0.0/33"], tmp_path)
    assert process.returncode == 2, process.stderr
    assert "harvester: error: invalid setting: HARVESTER_ALLOWED_HOSTS: '10.0.0.0/33'" in process.stderr
