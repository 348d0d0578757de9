"""The SSRF guard's rules: which URLs and socket addresses a crawl may connect to.

Scrapy-free, so the rules can be tested alone; ``harvester/guard/resolver.py`` applies them to every
resolved address and ``harvester/guard/middleware.py`` to the text of every request URL.

Python 3.11's ``ipaddress`` does not call ``::ffff:127.0.0.1`` loopback and calls 100.64.0.0/10
neither private nor global, so an address is unwrapped to the IPv4 address it carries (mapped,
compatible, NAT64, 6to4) and must then be ``is_global``; testing ``is_private`` would let both through.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from harvester.urls.hosts import host_name, request_host_name

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_SCHEMES = ("http", "https")

_SHARED = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598 carrier-grade NAT
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215 local-use prefix
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d
# IETF protocol assignments (RFC 6890), not globally reachable but for two anycast services;
# Python 3.11's `is_global` only knows parts of it.
_PROTOCOL_ASSIGNMENTS = ipaddress.ip_network("192.0.0.0/24")
_GLOBAL_PROTOCOL_ASSIGNMENTS = (ipaddress.ip_address("192.0.0.9"), ipaddress.ip_address("192.0.0.10"))
# inet_aton's spellings: decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short 127.1.
_LEGACY_IPV4 = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?$", re.IGNORECASE)


class GuardError(ValueError):
    """An entry of ``HARVESTER_ALLOWED_HOSTS`` that cannot be understood."""


def parse_ip(host: str) -> IPAddress | None:
    """The address a URL host names when it is an IP literal in any spelling, else None.

    ``[::1]``, ``127.0.0.1.``, ``2130706433``, ``0177.0.0.1``, ``0x7f.1`` and ``127.1`` all name an
    address: browsers and the C resolver (``inet_aton``) accept them, so the guard must as well.
    """
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _LEGACY_IPV4.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host.rstrip(".")))
        except OSError:
            return None
    return None


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def address_refusal(address: IPAddress) -> str | None:
    """Why a crawl must not connect to ``address`` (``loopback``, ``private``...), or None."""
    inner = embedded_ipv4(address)
    if inner is not None:
        return address_refusal(inner)
    if isinstance(address, ipaddress.IPv6Address) and address in _NAT64_LOCAL:
        return "nat64_local"
    if address.is_unspecified or (isinstance(address, ipaddress.IPv4Address) and address.packed[0] == 0):
        return "unspecified"
    checks = (
        ("loopback", address.is_loopback),
        ("link_local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared", address in _SHARED),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("reserved", address in _PROTOCOL_ASSIGNMENTS and address not in _GLOBAL_PROTOCOL_ASSIGNMENTS),
    )
    for reason, hit in checks:
        if hit:
            return reason
    return None if address.is_global else "not_global"


@dataclass
class AllowList:
    """The hosts, ``host:port`` pairs and CIDR ranges a user trusts (``HARVESTER_ALLOWED_HOSTS``).

    A host name entry trusts whatever that name resolves to; ``.example.com`` (or ``*.example.com``)
    trusts its subdomains too. An address or range trusts those addresses under any name.
    """

    names: dict[str, set[int | None]] = field(default_factory=dict)
    suffixes: dict[str, set[int | None]] = field(default_factory=dict)
    networks: list[tuple[IPNetwork, int | None]] = field(default_factory=list)

    @classmethod
    def parse(cls, entries: Iterable[str] | str | None) -> AllowList:
        if isinstance(entries, str):
            entries = entries.split(",")
        allow = cls()
        for raw in entries or ():
            entry = raw.strip().lower()
            if entry:
                allow._add(entry, raw)
        return allow

    def _add(self, entry: str, raw: str) -> None:
        if "/" in entry:
            try:
                self.networks.append((ipaddress.ip_network(entry, strict=False), None))
            except ValueError as exc:
                raise GuardError(f"HARVESTER_ALLOWED_HOSTS: {raw!r} is not a CIDR range ({exc})") from exc
            return
        host, port = _split_host_port(entry, raw)
        address = parse_ip(host)
        if address is not None:
            self.networks.append((ipaddress.ip_network(address), port))
            return
        # Requests, the resolver and the browser name a host in its IDNA form.
        try:
            name = request_host_name(host.lstrip("*.").rstrip("."))
        except ValueError as exc:
            raise GuardError(f"HARVESTER_ALLOWED_HOSTS: {raw!r} is not a valid host name ({exc})") from exc
        if host.startswith(("*.", ".")):
            self.suffixes.setdefault("." + name, set()).add(port)
        else:
            self.names.setdefault(name, set()).add(port)

    def __bool__(self) -> bool:
        return bool(self.names or self.suffixes or self.networks)

    def allows_name(self, host: str, port: int | None) -> bool:
        host = host.lower().rstrip(".")
        ports = set(self.names.get(host, ()))
        for suffix, suffix_ports in self.suffixes.items():
            if host.endswith(suffix):
                ports |= suffix_ports
        return None in ports or port in ports

    def resolved_refusal(self, text: str, port: int | None) -> str | None:
        """Why a resolved address (text, as a resolver gives it, maybe with a ``%zone``) must not
        be connected to, or None when it may. The one check every connection path makes: Scrapy's
        resolver and the browser's GuardProxy."""
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return "unparsable_address"
        if self.allows_address(address, port):
            return None
        return address_refusal(address)

    def allows_address(self, address: IPAddress, port: int | None) -> bool:
        candidates = [address]
        inner = embedded_ipv4(address)
        if inner is not None:
            candidates.append(inner)
        return any(
            candidate in network and (allowed_port is None or allowed_port == port)
            for candidate in candidates for network, allowed_port in self.networks
            if candidate.version == network.version
        )


def _split_host_port(entry: str, raw: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif entry.count(":") == 1:
        host, _, port_text = entry.partition(":")
    else:  # a host name, an IPv4 address or a bare IPv6 address
        host, port_text = entry, ""
    if not port_text:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise GuardError(f"HARVESTER_ALLOWED_HOSTS: {raw!r} has an invalid port")
    return host, int(port_text)


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def url_refusal(url: str, allow: AllowList) -> str | None:
    """Why the text of ``url`` must not be requested, or None: a scheme other than http(s), no
    host, or a host that is an IP literal (any spelling) outside the public internet.

    A host name passes here; its resolved addresses are judged by the resolver.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "invalid_url"
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        return "scheme"
    host = host_name(url)
    if not host:
        return "invalid_url"
    port = port or default_port(scheme)
    address = parse_ip(host)
    if address is None:
        return None
    if allow.allows_address(address, port):
        return None
    return address_refusal(address)
