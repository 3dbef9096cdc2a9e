"""A response body decoded under a byte limit, whatever its ``Content-Encoding`` claims.

httpx decodes a body chunk by chunk with unbounded decompressors: one 64 KiB network
read of a zstd stream became 2 GiB in memory before WebFetch's ``maxBytes`` cap saw
a byte, and ``Content-Encoding: gzip, gzip`` multiplied two ratios (590 bytes sent,
529 MB held). Here WebFetch reads the raw bytes and decodes them itself: zlib with a
``max_length`` at every step, so what is held never exceeds the limit plus one chunk.
Only what WebFetch asks for (``ACCEPT_ENCODING``) is decoded; any other encoding, or
more than one, is refused with a clear error rather than decoded without a bound.

The bytes *read* are bounded by the same limit: a gzip body of empty members (20 bytes,
nothing decoded, each) or a deflate stream of empty stored blocks decoded to nothing for as
long as the server sent it, up to the call's whole deadline, a core busy (red team round 13).
A real page's compressed form is smaller than the page, so this cuts no body the decoded
limit would not.

And what the body's *framing* costs is bounded (red team round 52, net4): h11 de-chunks a
``Transfer-Encoding: chunked`` body before a byte reaches here, so one-byte chunks behind
16,000-byte chunk extensions read hundreds of MB off the socket for a few bytes of body, and bare
one-byte chunks (64 KiB of them one ``send`` of the server's) cost an event each, both up to the
call's deadline. The caller reports the bytes read off the wire (`read_off_the_wire`): past
`WIRE_FACTOR` times the limit (plus `WIRE_SLACK`) the body is cut; and past `max_pieces` pieces
(a mean piece of `MIN_MEAN_PIECE` bytes over the limit, at least `MIN_PIECES`) too.
"""

from __future__ import annotations

import re
import zlib

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_GZIP_MEMBERS",
    "MIN_MEAN_PIECE",
    "MIN_PIECES",
    "WIRE_FACTOR",
    "WIRE_SLACK",
    "BodyDecodeError",
    "BoundedBody",
]

#: What WebFetch tells servers it decodes (httpx would also offer zstd/br when installed).
ACCEPT_ENCODING = "gzip, deflate"

#: gzip members one body may hold (each costs a new decompressor: 20-byte empty members made
#: 10 MB of body ~500,000 of them, seconds of CPU); a body of more is cut there.
MAX_GZIP_MEMBERS = 10_000

#: Bytes read off the socket for a body, at most, per byte of the limit: chunked framing of real
#: pages costs a few bytes per KiB; a body over it is cut (round 52).
WIRE_FACTOR = 2
#: Read off the socket beyond ``WIRE_FACTOR`` x the limit: a last chunk's size line, trailers, a
#: read's worth of slack (h11 holds one line to 16 KiB; a read is at most 64 KiB).
WIRE_SLACK = 256 * 1024
#: Pieces one body may arrive in, at least (a small limit still takes a page read in segments).
MIN_PIECES = 4096
#: Mean bytes a piece must carry past `MIN_PIECES`: a page read one TCP segment at a time
#: (~1,460 bytes) is far above it; 64 KiB of one-byte chunks is ~10,000 pieces.
MIN_MEAN_PIECE = 1024

_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


#: A content coding as RFC 9110 names one (a token), as an error may quote it.
_CODING = re.compile(r"[a-z0-9!#$&^_.+-]{1,32}")


def _shown_codings(codings: list[str]) -> str:
    """The codings as an error names them: tokens only, never the server's words (red team round
    48: a Content-Encoding wrote a sentence into WebFetch's error)."""
    if len(codings) <= 4 and all(_CODING.fullmatch(c) for c in codings):
        return repr(", ".join(codings))
    return "(a value that is no list of content codings)"


class BodyDecodeError(ValueError):
    """The body's encoding is one WebFetch does not decode, or its compressed data is corrupt."""


class BoundedBody:
    """Feed raw chunks; keeps at most ``limit`` decoded bytes and says when more was cut."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in _WBITS):
            raise BodyDecodeError(
                f"the server sent the body with Content-Encoding {_shown_codings(codings)}; WebFetch decodes only "
                f"one of {ACCEPT_ENCODING} (it asked for no other). Fetch it with Bash (curl) if you need it."
            )
        self._coding = codings[0] if codings else None
        self._limit = max(0, limit)
        self._chunks: list[bytes] = []
        self._size = 0
        self.truncated = False
        self._zlib = zlib.decompressobj(_WBITS[self._coding]) if self._coding else None
        self._started = False
        #: Bytes received, before decoding.
        self.raw_bytes = 0
        self._members = 1
        #: Pieces fed (each an event of the parser's, whatever bytes it carries): bounded.
        self.pieces = 0
        self.max_pieces = MIN_PIECES + self._limit // MIN_MEAN_PIECE
        self._max_wire = WIRE_FACTOR * self._limit + WIRE_SLACK

    @property
    def full(self) -> bool:
        """The limit is reached: nothing more needs to be read."""
        return self.truncated or self._size >= self._limit

    def read_off_the_wire(self, count: int) -> None:
        """``count`` bytes were read off the socket for this body so far (its framing included):
        past the bound the body is cut here."""
        if count > self._max_wire:
            self.truncated = True

    def feed(self, raw: bytes) -> None:
        if self.full:
            self.truncated = self.truncated or bool(raw)
            return
        self.pieces += 1
        if self.pieces > self.max_pieces:
            self.truncated = True  # what is kept stays; the framing cost more than it carried
            return
        self.raw_bytes += len(raw)
        if self._zlib is None:
            self._keep(raw)
            return
        if self.raw_bytes > self._limit:
            # More sent than the limit, compressed: what it decodes to is cut here as well.
            raw = raw[: max(0, len(raw) - (self.raw_bytes - self._limit))]
            self.truncated = True
        data = raw
        while data and (self._size < self._limit):
            room = self._limit - self._size
            try:
                out = self._zlib.decompress(data, room)
            except zlib.error as exc:
                if self._coding == "deflate" and not self._started:
                    # Servers send raw deflate for "deflate" too (as browsers and httpx accept).
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                raise BodyDecodeError(f"the {self._coding} body is corrupt ({exc})") from None
            self._started = True
            self._keep(out)
            if self._zlib.unconsumed_tail:
                data = self._zlib.unconsumed_tail
            elif self._zlib.eof and self._zlib.unused_data and self._coding in ("gzip", "x-gzip"):
                self._members += 1
                if self._members >= MAX_GZIP_MEMBERS:
                    self.truncated = True
                    return
                data = self._zlib.unused_data  # a gzip stream of several members
                self._zlib = zlib.decompressobj(_WBITS["gzip"])
            else:
                data = b""
        if self.full and not self._zlib.eof:
            self.truncated = True  # stopped inside the stream: there is more than the limit

    def _keep(self, data: bytes) -> None:
        room = self._limit - self._size
        if len(data) > room:
            data, self.truncated = data[:room], True
        if data:
            self._chunks.append(data)
            self._size += len(data)

    def body(self) -> bytes:
        return b"".join(self._chunks)
