"""Whether a tunnel's opening is a PROXY protocol header (HAProxy's, v1 text or v2 binary).

Why: a load balancer or reverse proxy that accepts it (HAProxy ``accept-proxy``, nginx
``proxy_protocol``, Traefik, Envoy) takes the header's addresses as the real client's and then
reads the connection's own protocol, TLS included. From a sandbox it is the binary twin of
``X-Forwarded-For`` (which the filtering proxy drops, round 20), and the ClientHello behind it
went unread as "another protocol" to a listed non-public host: its SNI chose a site no one
listed (red team, round 55). A sandbox relays for no one, so such an opening is refused.

Read as bytes arrive, each byte looked at once (a client may send one byte at a time, round 18).
"""

from __future__ import annotations

__all__ = ["PreambleScan"]

#: The v2 signature after its two leading CRLFs (blank lines a lenient reader skips too).
_V2_TAIL = b"\x00\r\nQUIT\n"
#: v1's keyword, compared without regard to case (fail closed: a lenient reader's view).
_V1 = b"PROXY"
#: What may follow v1's keyword: a blank (the spec's space; tab and others a lenient reader splits on).
_V1_AFTER = frozenset(b" \t\x0b\x0c\r\n")


class PreambleScan:
    """`feed` a tunnel's opening as it arrives: True once it is a PROXY protocol header, False
    once it cannot be one, None while too few bytes (after leading blank lines) tell."""

    def __init__(self) -> None:
        self._start = b""  # up to 8 bytes after the leading blank lines
        self._blank = True  # still in the leading blank lines
        self.verdict: bool | None = None

    def feed(self, more: bytes) -> bool | None:
        if self.verdict is not None:
            return self.verdict
        if self._blank:
            more = more.lstrip(b"\r\n")
            if not more:
                return None
            self._blank = False
        self._start += more[: 8 - len(self._start)]
        self.verdict = _judge(self._start)
        return self.verdict


def _judge(start: bytes) -> bool | None:
    if _V2_TAIL.startswith(start[: len(_V2_TAIL)]):
        return True if len(start) >= len(_V2_TAIL) else None
    head = start[: len(_V1)].upper()
    if not _V1.startswith(head):
        return False
    if len(start) <= len(_V1):
        return None
    return start[len(_V1)] in _V1_AFTER
