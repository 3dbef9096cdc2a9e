"""The Host/Origin check (DNS-rebinding protection) of ``shellrt serve --http`` on every loopback
spelling.

The MCP SDK turns the check on only when the listen host is exactly ``127.0.0.1``, ``localhost``
or ``::1``. ``--http 127.0.0.2:PORT`` (any address of 127/8) or ``0:0:0:0:0:0:0:1`` is loopback
too and needs no ``--allow-remote``, yet it was served with no check: a web page whose name was
rebound to that address had its requests answered (round 27, wave 2). Here the check is on for
every loopback host, the host as given and as written canonically allowed beside the usual names.
A non-loopback host (``--allow-remote``) keeps the SDK's choice: its names are the operator's.

Origins are the server's own: its names on its port. ``http://localhost:*`` allowed a page of any
other local web server (a repository's dev server on ``localhost:3000``) as if it were this one's
(red team round 29); a browser sends that Origin, non-browser clients send none.
"""

from __future__ import annotations

import ipaddress

__all__ = ["loopback_allowed"]

_USUAL = ("127.0.0.1", "localhost", "[::1]")


def _spellings(host: str) -> list[str]:
    """``host`` as a Host header writes it (IPv6 in brackets), given and canonical."""
    names = [host]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return names
    names.append(str(address))
    return [f"[{name}]" if address.version == 6 else name for name in dict.fromkeys(names)]


def loopback_allowed(host: str, port: int = 0) -> tuple[list[str], list[str]] | None:
    """The Host and Origin patterns to allow for a loopback ``host`` (None for any other: the
    SDK's default). Origins on ``port`` only (any port when it is 0: not known before binding)."""
    if host.lower() != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return None
        except ValueError:
            return None
    names = list(dict.fromkeys([*_USUAL, *_spellings(host)]))
    return [f"{name}:*" for name in names], [f"http://{name}:{port or '*'}" for name in names]
