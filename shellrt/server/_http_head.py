"""A request head other HTTP readers could split differently is refused (``shellrt serve --http``).

h11 (under uvicorn) reads a lone LF as a line end and joins an obs-fold line (one starting with a
space or tab) to the header before it. RFC 9112 lets a server do either, but a proxy in front
(TLS for ``--allow-remote``, as the help advises) may not: to a reader that splits on CRLF only,
``X-A: 1\\nContent-Length: 0`` is one header, to h11 two; ``X-A: 1\\r\\n Transfer-Encoding: chunked``
is a header of its own to a lenient reader, part of X-A to h11. Where two readers disagree on where
a header (and so a body) ends, requests can be smuggled past the proxy (red team, round 37). So a
head with a lone LF or a folded line gets ``400`` and the connection closes, before the token
check: one reading or none.
"""

from __future__ import annotations

import re

__all__ = ["ambiguous_head"]

#: The end of a head as the most lenient reader finds it (CRLF or LF line ends).
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LONE_LF = re.compile(rb"(?<!\r)\n")
_FOLDED = re.compile(rb"\n[ \t]")


def ambiguous_head(data: bytes) -> str | None:
    """Why the request head at the start of ``data`` (what is received of it) could be read two ways, or None."""
    data = data.lstrip(b"\r\n")  # empty lines before a request line are skipped (RFC 9112, 2.2)
    end = _HEAD_END.search(data)
    head = data if end is None else data[: end.end()]
    if _LONE_LF.search(head):
        return "a line of the request head ends with LF alone; end every line with CRLF"
    if _FOLDED.search(head):
        return "a header line is folded (starts with a space or tab); send each header on one line"
    return None
