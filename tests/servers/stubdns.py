"""A stub name table under the real SSRF guard, so tests can give a host name any address.

``-s TWISTED_DNS_RESOLVER=tests.servers.stubdns.StubGuardedResolver`` with ``HARVESTER_TEST_HOSTS`` (JSON:
name -> list of addresses) in the environment; other names resolve as usual.
"""

from __future__ import annotations

import json
import os
from typing import Any

from scrapy.resolver import HostResolution
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver
from zope.interface import implementer

from harvester.guard.resolver import GuardedResolver


@implementer(IHostnameResolver)
class TableResolver:
    def __init__(self, table: dict[str, list[str]], fallback: Any = None) -> None:
        self.table = {name.lower(): addresses for name, addresses in table.items()}
        self.fallback = fallback

    def resolveHostName(self, receiver: Any, hostName: str, portNumber: int = 0,
                        addressTypes: Any = None, transportSemantics: str = "TCP") -> Any:
        addresses = self.table.get(hostName.lower())
        if addresses is None:
            return self.fallback.resolveHostName(receiver, hostName, portNumber, addressTypes, transportSemantics)
        resolution = HostResolution(hostName)
        receiver.resolutionBegan(resolution)
        for address in addresses:
            kind = IPv6Address if ":" in address else IPv4Address
            receiver.addressResolved(kind("TCP", address, portNumber))
        receiver.resolutionComplete()
        return resolution


class StubGuardedResolver(GuardedResolver):
    @classmethod
    def build_upstream(cls, crawler: Any, reactor: Any) -> Any:
        table = json.loads(os.environ.get("HARVESTER_TEST_HOSTS", "{}"))
        return TableResolver(table, super().build_upstream(crawler, reactor))
