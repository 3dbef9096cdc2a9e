"""Deny-list entries that are addresses or networks, judged on the address a connection reaches.

Why: a name is judged before DNS, but what a deny of ``10.9.8.7`` or ``10.0.0.0/8`` protects is
the address. Every host-side fetch (the filtering proxy, WebFetch) compares each DNS answer --
and every IPv4 address its IPv6 spelling carries (mapped, compatible, 6to4, Teredo, NAT64) --
with the address and network entries, folded the same way (red team, rounds 27 and 28). An entry
naming any loopback address covers all of it, and an IPv6 network written in a carrying form covers
the IPv4 network it spells (round 28, net2).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from sandbox._addrforms import NAT64, IPAddress, IPNetwork, carried_ipv4, first_containing, parse

__all__ = ["address_denied", "carried", "embedded", "is_address_entry", "normalize_network"]


def embedded(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, 6to4, Teredo, NAT64)."""
    return carried_ipv4(ip, translators=True)


#: Where a connection to the unspecified address goes: Linux connects ``0.0.0.0`` and ``::`` to
#: this machine's own loopback, so a deny of ``127.0.0.1`` must hold there too (round 28).
_UNSPECIFIED_REACHES = {4: ipaddress.ip_address("127.0.0.1"), 6: ipaddress.ip_address("::1")}


def carried(address: str) -> set[IPAddress]:
    """``address`` and the IPv4 addresses its IPv6 spelling carries: every address a connection
    to it may reach (the unspecified address: the loopback it connects to)."""
    ip = parse(address)
    found = {ip, *carried_ipv4(ip, translators=True)}
    return found | {_UNSPECIFIED_REACHES[a.version] for a in found if a.is_unspecified}


def normalize_network(text: str) -> str:
    """``10.0.0.0/8`` (or ``fd00::/8``) in canonical form; `ValueError` saying how to write it.

    Strict: host bits set (``10.1.2.3/8``) is refused rather than widened or narrowed silently,
    and only dotted-decimal IPv4 is read (``ipaddress`` refuses ``010.0.0.0/8``)."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=True))
    except ValueError as exc:
        try:
            hint = f" (did you mean {ipaddress.ip_network(text.strip(), strict=False)}?)"
        except ValueError:
            hint = ""
        raise ValueError(
            f"{text!r} is not an address range: {exc}{hint}; write a network as ADDRESS/PREFIX with "
            "the host bits zero, like 10.0.0.0/8 or fd00::/8"
        ) from None


#: Every address a connection to this machine's own loopback may use: a deny naming any of them
#: (``127.0.0.1``, ``::1``, ``0.0.0.0``, ``127.0.0.0/30``) denies all (round 28, net2).
_LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))

#: IPv6 prefixes whose low bits spell an IPv4 address: mapped, SIIT, NAT64 (the ``/96`` ones,
#: low 32 bits) and the deprecated IPv4-compatible ``::/96``; 6to4 carries it after 16 bits.
_CARRIERS: tuple[tuple[IPNetwork, int], ...] = (
    *((net, 0) for net in NAT64 if net.prefixlen == 96),
    (ipaddress.ip_network("::ffff:0:0/96"), 0),
    (ipaddress.ip_network("::/96"), 0),
    (ipaddress.ip_network("2002::/16"), 80),
)


def _carried_networks(net: IPNetwork) -> list[IPNetwork]:
    """The IPv4 network an IPv6 entry written in a carrying form spells (``::ffff:10.0.0.0/104``
    is ``10.0.0.0/8``), so a deny written either way holds for both."""
    if not isinstance(net, ipaddress.IPv6Network):
        return []
    found: list[IPNetwork] = []
    for carrier, shift in _CARRIERS:
        if net.subnet_of(carrier) and net.prefixlen >= carrier.prefixlen:  # type: ignore[arg-type]
            if carrier.prefixlen == 96 and int(net.network_address) >> 32 == 0 and net.prefixlen > 126:
                continue  # ::/128 and ::1 are not IPv4-compatible addresses (carried() folds ::)
            bits = min(net.prefixlen - carrier.prefixlen, 32)
            value = (int(net.network_address) >> shift) & 0xFFFFFFFF
            found.append(ipaddress.ip_network((value >> (32 - bits) << (32 - bits), bits)))
    return found


def _entry_networks(entry: str) -> list[IPNetwork]:
    """What a deny entry covers: its address (every address its spelling carries) or network, the
    IPv4 network a carrying IPv6 network spells, and the whole loopback when it names any of it."""
    text = entry.strip().strip("[]")
    try:
        if "/" in text:
            nets: list[IPNetwork] = [ipaddress.ip_network(text, strict=False)]
        else:
            nets = [ipaddress.ip_network(ip) for ip in carried(text)]
    except ValueError:
        return []  # a name: judged by name elsewhere
    nets += [v4 for net in nets for v4 in _carried_networks(net)]
    if any(net.overlaps(lo) for net in nets for lo in _LOOPBACK if net.version == lo.version):  # type: ignore[arg-type]
        nets += _LOOPBACK
    return nets


def is_address_entry(entry: str) -> bool:
    """Whether a deny entry names an address or a range (else a name, judged by name)."""
    return bool(_entry_networks(entry))


def address_denied(address: str, entries: Iterable[str]) -> str | None:
    """The first of ``entries`` (IP literals or networks; names are skipped) that ``address``, in
    any spelling it carries, falls in; None when none does."""
    return first_containing(carried(address), entries, _entry_networks)
