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

__all__ = [
    "MAX_HELLO_BYTES",
    "HeadScan",
    "HelloReader",
    "client_hello_sni",
    "looks_like_http",
    "looks_like_tls",
    "server_hello_retry",
    "strip_blank_lines",
]

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


#: A method and the byte after it where some server splits a request line: a space, or what
#: Python's ``str.split`` takes for whitespace (``http.server`` splits the line with it, latin-1,
#: and drops it before the method too).
_SPLIT = rb"[ \t\x0b\x0c\x1c-\x1f\x85\xa0]"
_METHOD = re.compile(rb"%s*[!#$%%&'*+.^_`|~0-9A-Za-z-]+%s" % (_SPLIT, _SPLIT))
#: What may still become `_METHOD` with more bytes (a client may send one byte at a time); past
#: `_PREFIX_LIMIT` bytes of it the line is taken as request-like (judged at its end).
_METHOD_PREFIX = re.compile(rb"%s*[!#$%%&'*+.^_`|~0-9A-Za-z-]*" % _SPLIT)
_PREFIX_LIMIT = 1024


def looks_like_http(data: bytes) -> bool | None:
    """Whether ``data`` (blank lines stripped) starts an HTTP/1 request: its first line is done
    and names a version (``HTTP/``, any case: a lenient server's spaces or method do not
    matter); False when that line names none, or holds a byte no request line holds and does
    not start with a method and a separator (binary protocols); None while the first line is
    unfinished and could still be a request line (read more).

    A line that starts like a request is judged whole whatever bytes it holds: servers take
    bytes past 0x7f in a path (nginx, ``http.server``) and ``http.server`` splits on ``\\x0b``,
    so such a line passed as "another protocol", unread, with any ``Host`` (red team, round 19)."""
    line, newline, _ = data.partition(b"\n")
    if _NOT_LINE.search(line.rstrip(b"\r")) and not _METHOD.match(line):
        return None if not newline and _METHOD_PREFIX.fullmatch(line) else False
    if not newline:
        return None
    return b"http/" in line.lower()


#: A bare LF (one no CR precedes): refused in a request head, as a server might end a line there.
_BARE_LF = re.compile(rb"(?<!\r)\n")


class HeadScan:
    """A plain-text tunnel opening read as it arrives, each byte looked at a bounded number of
    times: re-scanning all of it with regular expressions at each read cost the proxy's loop
    quadratic time for a head sent a byte at a time (red team, round 18).

    `feed` answers what `looks_like_http` would for the whole (blank lines stripped), and
    `bare_lf` / `head_end` what a search of the head for a bare LF / its end would."""

    def __init__(self) -> None:
        self.data = bytearray()
        self._skip = -1  # where the request starts (after blank lines), -1 while unknown
        self._line = -1  # where its first line ends (its LF), -1 while unfinished
        self._scanned = 0  # bytes already searched (for a non-line byte, then a bare LF)
        self._crs = 0  # where the first line's trailing run of CRs starts (while it is unfinished)
        self._request_like = False  # the first line holds a non-line byte after a method and separator
        self.http: bool | None = None
        self.bare_lf = False
        self.head_end = -1

    @property
    def request(self) -> bytes:
        """The bytes from the request's start (``strip_blank_lines`` of the whole)."""
        return bytes(self.data[max(self._skip, 0) :])

    def feed(self, more: bytes) -> bool | None:
        data = self.data
        old = len(data)
        data += more
        if self._skip < 0:
            at = old
            while at < len(data) and data[at] in b"\r\n":
                at += 1
            if at == len(data):
                return None
            self._skip = self._scanned = self._crs = at
        if self._line < 0:
            start = max(old, self._skip)
            self._line = data.find(b"\n", start)
            end = self._line if self._line >= 0 else len(data)
            # CRs may end the line (`looks_like_http` strips them): the trailing run is judged once
            # the line goes on or ends; found from the new bytes alone, never re-walked.
            new = bytes(data[start:end])
            kept = len(new.rstrip(b"\r"))
            if kept:
                self._crs = start + kept
            if not self._request_like and _NOT_LINE.search(data, self._scanned, self._crs):
                # Another protocol, unless it starts like a request: judged at its line's end then.
                if not _METHOD.match(data, self._skip):
                    if not _METHOD_PREFIX.fullmatch(data, self._skip):
                        self.http = False
                        return False
                    if len(data) - self._skip <= _PREFIX_LIMIT:
                        return None  # may still become a method and separator: read more
                self._request_like = True
            self._scanned = self._crs
            if self._line < 0:
                return None
            self.http = b"http/" in bytes(data[self._skip : self._line]).lower()
            if not self.http:
                return False
            self._scanned = self._skip
        if self.head_end < 0:
            found = data.find(b"\r\n\r\n", max(self._skip, old - 3))
            end = found if found >= 0 else len(data)
            if _BARE_LF.search(data, self._scanned, end):
                self.bare_lf = True
            self._scanned = end
            self.head_end = found
        return True


def client_hello_sni(data: bytes) -> str | None:
    """The host name a TLS ClientHello at the start of ``data`` asks for.

    Returns None while ``data`` holds less than the whole ClientHello (read more), ``""`` for a
    hello that names no host; raises ValueError for anything that is not one well-formed
    ClientHello, or names more than one host (a server might take either)."""
    return HelloReader().feed(data)


class HelloReader:
    """One ClientHello read from a client's bytes as they arrive, in time linear in their length.

    Re-parsing everything read at each arrival cost the proxy's loop quadratic time for a hello
    cut into 1-byte records (red team, round 18). ``after_retry``: the second hello after a
    HelloRetryRequest, which one ChangeCipherSpec record may precede (TLS 1.3 middlebox mode).
    `end` is how many fed bytes the hello's records took (what follows is the client's next flight).
    """

    def __init__(self, *, after_retry: bool = False) -> None:
        self._data = bytearray()
        self._handshake = bytearray()
        self._ccs = after_retry
        self.end = 0

    def feed(self, more: bytes) -> str | None:
        """Add ``more``; the hello's name once it is whole (see `client_hello_sni`), else None."""
        data = self._data
        data += more
        while True:
            at = self.end
            if len(data) < at + 5:
                return None
            kind, major, length = data[at], data[at + 1], int.from_bytes(data[at + 3 : at + 5], "big")
            if self._ccs and kind == 20:  # change_cipher_spec: one byte, 1
                if len(data) < at + 6:
                    return None
                if length != 1 or data[at + 5] != 1:
                    raise ValueError("malformed ChangeCipherSpec record")
                self._ccs = False
                self.end = at + 6
                continue
            self._ccs = False
            if kind != 0x16 or major != 3 or length == 0 or length > 16384 + 2048:
                raise ValueError("not a TLS handshake record")
            if len(data) < at + 5 + length:
                return None
            handshake = self._handshake
            handshake += data[at + 5 : at + 5 + length]
            self.end = at + 5 + length
            if len(handshake) >= 4:
                if handshake[0] != 1:
                    raise ValueError("the first handshake message is not a ClientHello")
                size = int.from_bytes(handshake[1:4], "big")
                if size > MAX_HELLO_BYTES:
                    raise ValueError("ClientHello too large")
                if len(handshake) > 4 + size:
                    # Nothing else rides in the hello's records: a second hello there is one the
                    # server may read later (after a HelloRetryRequest) and no one vetted.
                    raise ValueError("more handshake data after the ClientHello in its record")
                if len(handshake) == 4 + size:
                    return _sni(bytes(handshake[4:]))


#: ServerHello.random of a TLS 1.3 HelloRetryRequest (RFC 8446, 4.1.3).
_RETRY_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")


def server_hello_retry(data: bytes) -> bool | None:
    """Whether the server's first bytes are a HelloRetryRequest (the client then sends a second
    ClientHello, which must be vetted too); None while too few bytes have come to tell."""
    handshake = b""
    at = 0
    while len(handshake) < 38:  # type, length, legacy version, random
        if len(data) < at + 5:
            return None
        if data[at] != 0x16:
            return False  # an alert, or not TLS: no second hello is asked for
        length = int.from_bytes(data[at + 3 : at + 5], "big")
        part = data[at + 5 : at + 5 + length]
        handshake += part
        if len(part) < length:
            break
        at += 5 + length
    if len(handshake) < 38:
        return None
    return handshake[0] == 2 and handshake[6:38] == _RETRY_RANDOM


#: Extensions that carry the name in a form the proxy cannot read: Encrypted Client Hello
#: (0xfe0d and its drafts 0xfe08-0xfe0c) and the older ESNI (0xffce). The outer SNI must be the
#: tunnel's name, but the front that decrypts it routes to the inner one (fronting; round 18).
_HIDDEN_NAME = frozenset({0xFE08, 0xFE09, 0xFE0A, 0xFE0B, 0xFE0C, 0xFE0D, 0xFFCE})


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
        if kind in _HIDDEN_NAME:
            raise ValueError(
                "it carries Encrypted Client Hello (ECH/ESNI): the name the server routes by is hidden "
                "from the proxy; turn ECH off in the client (Chrome: --disable-features=EncryptedClientHello)"
            )
        seen.add(kind)
        if kind == 0:  # server_name
            names += _server_names(data)
        at += 4 + size
    if len(names) > 1:
        raise ValueError("the ClientHello names more than one host")
    return names[0] if names else ""


def _server_names(data: bytes) -> list[str]:
    """The one host_name entry of a server_name extension: any other entry (another name type,
    a second name, trailing bytes) is refused, as a server might take it for the name (round 18)."""
    if _int(data, 0, 2) != len(data) - 2 or len(data) < 5:
        raise ValueError("malformed server_name extension")
    kind, size = data[2], _int(data, 3, 2)
    if kind != 0 or 5 + size != len(data):
        raise ValueError("a server_name extension holding other than one host name")
    try:
        return [data[5:].decode("ascii")]
    except UnicodeDecodeError:
        raise ValueError("a server name that is not ASCII") from None


def _int(data: bytes, at: int, size: int) -> int:
    if len(data) < at + size:
        raise ValueError("truncated ClientHello")
    return int.from_bytes(data[at : at + size], "big")


def _skip(data: bytes, at: int, size: int) -> int:
    return at + size + _int(data, at, size)
