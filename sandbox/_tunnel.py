"""What a proxy tunnel's client says first: TLS (and for which name) or plain HTTP.

A host that serves many sites on one address (a CDN, an internal reverse proxy) picks the site
by the TLS SNI or the HTTP ``Host`` the client sends *inside* a tunnel, not by the name the
proxy vetted: ``CONNECT allowed:443`` then a ClientHello for ``other.example`` reached a site
the allow-list never named (domain fronting; red team, round 17). The proxy reads the client's
opening with these parsers: a ClientHello must name the tunnel's host (`client_hello_sni`),
plain HTTP is re-framed for the vetted host like the proxy's own forwarding.

Pure functions over bytes, no I/O: what the proxy reads is bounded by `MAX_HELLO_BYTES`.
"""

from __future__ import annotations

import re

__all__ = ["MAX_HELLO_BYTES", "client_hello_sni", "looks_like_http", "looks_like_tls", "strip_blank_lines"]

#: The most of a ClientHello the proxy reads (large post-quantum key shares are ~2 KiB).
MAX_HELLO_BYTES = 64 * 1024
#: A byte that no HTTP/1 request line holds (controls but tab; non-ASCII).
_NOT_LINE = re.compile(rb"[^\t\x20-\x7e]")


def looks_like_tls(data: bytes) -> bool:
    """A TLS handshake record starts the stream (content type 22, major version 3)."""
    return len(data) >= 2 and data[0] == 0x16 and data[1] == 0x03


def strip_blank_lines(data: bytes) -> bytes:
    """``data`` without the empty lines an HTTP server ignores before a request (RFC 9112, 2.2)."""
    return data.lstrip(b"\r\n")


def looks_like_http(data: bytes) -> bool | None:
    """Whether ``data`` (blank lines stripped) starts an HTTP/1 request: its first line is done
    and names a version (``HTTP/``, any case: a lenient server's spaces or method do not
    matter); False when that line names none or holds a byte no request line holds (binary
    protocols); None while the first line is still printable text and unfinished (read more)."""
    line, newline, _ = data.partition(b"\n")
    if _NOT_LINE.search(line.rstrip(b"\r")):
        return False
    if not newline:
        return None
    return b"http/" in line.lower()


def client_hello_sni(data: bytes) -> str | None:
    """The host name a TLS ClientHello at the start of ``data`` asks for.

    Returns None while ``data`` holds less than the whole ClientHello (read more), ``""`` for a
    hello that names no host; raises ValueError for anything that is not one well-formed
    ClientHello, or names more than one host (a server might take either)."""
    handshake = b""
    at = 0
    while True:
        if len(data) < at + 5:
            return None
        kind, major, length = data[at], data[at + 1], int.from_bytes(data[at + 3 : at + 5], "big")
        if kind != 0x16 or major != 3 or length == 0 or length > 16384 + 2048:
            raise ValueError("not a TLS handshake record")
        if len(data) < at + 5 + length:
            return None
        handshake += data[at + 5 : at + 5 + length]
        at += 5 + length
        if len(handshake) >= 4:
            if handshake[0] != 1:
                raise ValueError("the first handshake message is not a ClientHello")
            size = int.from_bytes(handshake[1:4], "big")
            if size > MAX_HELLO_BYTES:
                raise ValueError("ClientHello too large")
            if len(handshake) >= 4 + size:
                return _sni(handshake[4 : 4 + size])


def _sni(body: bytes) -> str:
    at = 2 + 32  # legacy version, random
    at = _skip(body, at, 1)  # session id
    at = _skip(body, at, 2)  # cipher suites
    at = _skip(body, at, 1)  # compression methods
    if at == len(body):
        return ""  # no extensions
    end = at + 2 + _int(body, at, 2)
    if end != len(body):
        raise ValueError("ClientHello extensions do not end with the message")
    at += 2
    names: list[str] = []
    seen: set[int] = set()
    while at < end:
        kind, size = _int(body, at, 2), _int(body, at + 2, 2)
        data = body[at + 4 : at + 4 + size]
        if len(data) != size:
            raise ValueError("truncated ClientHello extension")
        if kind in seen:
            raise ValueError("an extension repeated in the ClientHello")
        seen.add(kind)
        if kind == 0:  # server_name
            names += _server_names(data)
        at += 4 + size
    if len(names) > 1:
        raise ValueError("the ClientHello names more than one host")
    return names[0] if names else ""


def _server_names(data: bytes) -> list[str]:
    if _int(data, 0, 2) != len(data) - 2:
        raise ValueError("malformed server_name extension")
    at, names = 2, []
    while at < len(data):
        kind, size = data[at], _int(data, at + 1, 2)
        raw = data[at + 3 : at + 3 + size]
        if len(raw) != size:
            raise ValueError("malformed server_name extension")
        if kind == 0:
            try:
                names.append(raw.decode("ascii"))
            except UnicodeDecodeError:
                raise ValueError("a server name that is not ASCII") from None
        at += 3 + size
    return names


def _int(data: bytes, at: int, size: int) -> int:
    if len(data) < at + size:
        raise ValueError("truncated ClientHello")
    return int.from_bytes(data[at : at + size], "big")


def _skip(data: bytes, at: int, size: int) -> int:
    return at + size + _int(data, at, size)
