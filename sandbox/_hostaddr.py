"""Whether an address reaches this machine itself: the judgement behind every host-side fetch.

The filtering proxy and WebFetch run on the host, so an address that is the host's own --
loopback, the unspecified address, link-local (the cloud metadata service at 169.254.169.254
with it), or any address on one of the host's interfaces, *public ones included* -- reaches the
host's own services (``shellrt serve --http``, dockerd over tcp, Ray's dashboard, a database
bound to ``0.0.0.0``) with the host's network identity. A name on an allow-list says nothing
about where its DNS points, so such an address is reached only when the operator listed the
address itself (`address_listed`), never because a name resolved there (red team, round 15).

"On one of the host's interfaces" is asked of the kernel, not of a list read once: binding a
UDP socket to the address succeeds exactly for the host's local addresses (interfaces added
later included); where ``ip_nonlocal_bind`` makes every bind succeed, a route lookup (a UDP
``connect``, which sends nothing) that picks the address itself as its source says the same.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterable

from sandbox._addrforms import IPAddress, IPNetwork, carried_ipv4, first_containing, parse

__all__ = ["METADATA_ADDRESSES", "address_listed", "is_host_address", "is_loopback_name"]

#: Cloud metadata services not in a link-local range (AWS's IPv6 one, Alibaba's), which hand out
#: the host's credentials like 169.254.169.254 does.
METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")}
)
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")


def _nonlocal_bind(family: socket.AddressFamily) -> bool:
    name = "ipv4" if family == socket.AF_INET else "ipv6"
    try:
        with open(f"/proc/sys/net/{name}/ip_nonlocal_bind", encoding="ascii") as f:
            return f.read().strip() != "0"
    except OSError:
        return True  # unknown: do not trust a bind alone


def _on_an_interface(ip: IPAddress) -> bool:
    """Whether the kernel calls ``ip`` one of this network namespace's own addresses."""
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    text = str(ip)
    try:
        sock = socket.socket(family, socket.SOCK_DGRAM)
    except OSError:
        return False  # no such family here: nothing of the host answers on it
    with sock:
        if not _nonlocal_bind(family):
            try:
                sock.bind((text, 0))
            except OSError:
                return False
            return True
        with contextlib.suppress(OSError):
            sock.connect((text, 9))
            return bool(sock.getsockname()[0] == text)
    return False


def is_host_address(address: str) -> bool:
    """Whether connecting to ``address`` reaches this machine (or its metadata service).

    Loopback, unspecified, ``0.0.0.0/8``, link-local and known metadata addresses always do;
    any other address does when it is one of the host's own (public ones included). IPv6
    spellings that carry such an IPv4 address (mapped, compatible) are judged by it.
    """
    given = parse(address)
    for ip in (given, *carried_ipv4(given, translators=False)):
        if ip.is_loopback or ip.is_unspecified or ip.is_link_local or ip in METADATA_ADDRESSES:
            return True
        if isinstance(ip, ipaddress.IPv4Address) and ip in _THIS_NETWORK:
            return True
        if _on_an_interface(ip):
            return True
    return False


def is_loopback_name(name: str) -> bool:
    """``localhost`` and ``*.localhost`` (RFC 6761): names that mean this machine's loopback."""
    return name == "localhost" or name.endswith(".localhost")


def address_listed(address: str, entries: Iterable[str]) -> bool:
    """Whether ``address`` itself is among ``entries`` (IP literals or CIDR ranges; names are skipped)."""
    return first_containing((parse(address),), entries, _as_written) is not None


def _as_written(entry: str) -> list[IPNetwork]:
    """The network an allow entry names as written (an allow names what it names), none for a name."""
    try:
        return [ipaddress.ip_network(entry.strip().strip("[]"), strict=False)]
    except ValueError:
        return []
