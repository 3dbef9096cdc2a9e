"""One host spelling for what is fetched and for what rules name: the resolver's own.

Why: ``getaddrinfo`` maps many spellings onto one address (``134744072``,
``0x8.0x8.0x8.0x8``, ``010.010.010.010`` and ``8.8.2056`` are all ``8.8.8.8``), so a
domain rule compared as written with a canonicalised fetch host matched nothing: a
deny did not hold. WebFetch canonicalises the URL's host with `canonical_host`, and
``WebFetch(domain:…)`` rules fold their host with `rule_host`, the same function, so
both sides are compared in one spelling.

A rule may also name an address range (``WebFetch(domain:10.0.0.0/8)``, `rule_network`):
it matches URLs whose host is an address in it, and a deny or ask matches an IPv6 literal
carrying such an IPv4 address too (`address_matches`); WebFetch and the proxy apply address and
range denies to every DNS answer as well (`sandbox._addrdeny`, red team round 28).
"""

from __future__ import annotations

import ipaddress
import re
import socket

from sandbox._addrdeny import address_denied, normalize_network
from sandbox._addrforms import unmapped

__all__ = ["address_entry", "address_matches", "canonical_host", "ends_in_number", "rule_host", "rule_network"]

_NUMERIC_IPV4 = re.compile(r"[0-9a-fx.]+")
#: A label the resolver reads as a number (decimal, octal with a leading 0, or 0x hex).
_NUMBER_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")


def canonical_host(host: str) -> str:
    """The host as the resolver will look it up, which is what domain rules must judge.

    ``getaddrinfo`` maps spellings onto other names: non-ASCII labels go through IDNA
    (UTS 46 folds fullwidth letters, drops soft hyphens, maps the ideographic full stop to ``.``), case and a
    trailing dot do not matter, and ``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1``
    are all ``127.0.0.1``. Raises `ValueError` for a host no resolver would accept.
    """
    text = host.strip()
    if ":" in text:  # an IPv6 literal (urlsplit dropped its brackets); ::ffff:a.b.c.d is a.b.c.d
        return str(unmapped(ipaddress.ip_address(text)))
    try:
        ascii_host = text.encode("ascii").decode("ascii")
    except UnicodeEncodeError:
        import idna  # only for non-ASCII names (installed with the web extra's httpx)

        try:
            ascii_host = idna.encode(text, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise ValueError(f"{host!r} is not a valid host name ({exc})") from None
    ascii_host = ascii_host.lower().rstrip(".")
    if not ascii_host:
        raise ValueError(f"{host!r} is not a host name")
    if _NUMERIC_IPV4.fullmatch(ascii_host):
        try:
            return socket.inet_ntoa(socket.inet_aton(ascii_host))
        except OSError:
            pass
    return ascii_host


def ends_in_number(host: str) -> bool:
    """Whether the last label of ``host`` is a number, so the whole host is an IPv4 spelling
    (the WHATWG URL rule; no top-level domain is numeric)."""
    return _NUMBER_LABEL.fullmatch(host.lower().rstrip(".").rpartition(".")[2]) is not None


def rule_host(host: str) -> str:
    """A rule's host (``example.com``, ``*.example.com``, an IPv4 address in any spelling) in
    `canonical_host` form; raises `ValueError` saying why for one that has no such form: a
    numeric host that is no IPv4 address (``256.1.1.1``, ``1.2.3.08``), or a wildcard over
    one (``*.8.8``: an address has no subdomains)."""
    name = host.strip().lower().rstrip(".")
    wildcard = name.startswith("*.")
    if wildcard:
        name = name[2:]
    if not ends_in_number(name):
        return ("*." if wildcard else "") + canonical_host(name)
    if wildcard:
        raise ValueError("a wildcard covers names, but this one ends in a number (an IPv4 spelling)")
    folded = canonical_host(name)
    try:
        ipaddress.IPv4Address(folded)
    except ValueError:
        raise ValueError(
            "it ends in a number, so the resolver reads it as an IPv4 address, but it is none"
        ) from None
    return folded


def rule_network(host: str) -> str:
    """A rule's address range (``10.0.0.0/8``, ``fd00::/8``) in canonical form; `ValueError`
    saying how to write it (host bits set, a prefix too long, a number spelling)."""
    return normalize_network(host)


def address_entry(pattern: str) -> bool:
    """Whether a rule's host is an address or a range (compared as addresses, not as names)."""
    text = pattern.strip("[]")
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=False)
        else:
            ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def address_matches(pattern: str, host: str, *, carried: bool) -> bool:
    """Whether ``host`` (canonical) is the address ``pattern`` names or lies in its range.
    ``carried`` (deny and ask): an IPv6 host matches by any IPv4 address it carries too."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # a name: its addresses are judged when it is resolved
    if carried:
        return address_denied(str(ip), (pattern,)) is not None
    net = ipaddress.ip_network(pattern.strip("[]"), strict=False)
    return ip.version == net.version and ip in net
