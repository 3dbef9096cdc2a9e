"""Which IPv4 addresses an IPv6 spelling carries, and whether an address is in listed networks.

Why one module: the host-address judgement (`sandbox._hostaddr`: what a connection reaches), the
deny-list (`sandbox._addrdeny`: what must never be reached), the proxy's public-address test and
the rule hosts' canonical form (`shellrt.permissions.hosts`) each had their own helper for the
same question (round 28 review). The answers differ on purpose, chosen by ``translators``:

* ``False`` -- what the kernel itself connects to: an IPv4-mapped (``::ffff:a.b.c.d``) or
  IPv4-compatible (``::a.b.c.d``) spelling reaches that IPv4 address on this machine;
* ``True`` -- also what a translator on the path reaches: 6to4 (``2002::/16``), Teredo and
  NAT64/SIIT (``64:ff9b::/96``, ``64:ff9b:1::/48``, ``::ffff:0:0:0/96``). A deny or a "public
  address" test must hold there too; the host's own addresses are never behind a translator.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Collection, Iterable

__all__ = ["NAT64", "IPAddress", "IPNetwork", "carried_ipv4", "first_containing", "parse", "unmapped"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Prefixes whose low 32 bits are an IPv4 address a translator reaches: NAT64 (RFC 6052, RFC 8215)
#: and SIIT's IPv4-translated addresses (RFC 2765).
NAT64 = (
    ipaddress.ip_network("64:ff9b::/96"),
    ipaddress.ip_network("64:ff9b:1::/48"),
    ipaddress.ip_network("::ffff:0:0:0/96"),
)


def parse(address: str) -> IPAddress:
    """``address`` (a DNS answer or a literal; a ``%zone`` and URL brackets dropped) as an address."""
    return ipaddress.ip_address(address.partition("%")[0].strip("[]"))


def carried_ipv4(ip: IPAddress, *, translators: bool) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses the IPv6 address ``ip`` carries (none for an IPv4 one): mapped and
    compatible always, and with ``translators`` 6to4, Teredo (server and client) and NAT64."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found = [ip.ipv4_mapped] if ip.ipv4_mapped is not None else []
    if translators:
        if ip.sixtofour is not None:
            found.append(ip.sixtofour)
        if ip.teredo is not None:
            found += list(ip.teredo)
    value = int(ip)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d (IPv4-compatible, deprecated but routable)
        found.append(ipaddress.IPv4Address(value))
    if translators and any(ip in net for net in NAT64):
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    return found


def unmapped(ip: IPAddress) -> IPAddress:
    """``ip`` in its IPv4 spelling when it is IPv4-mapped (the same socket address), else itself."""
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return mapped or ip


def first_containing(
    addresses: Collection[IPAddress], entries: Iterable[str], networks: Callable[[str], Iterable[IPNetwork]]
) -> str | None:
    """The first of ``entries`` one of whose ``networks(entry)`` holds one of ``addresses``."""
    for entry in entries:
        for net in networks(entry):
            if any(ip.version == net.version and ip in net for ip in addresses):
                return entry
    return None
