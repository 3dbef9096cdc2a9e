"""How many JSON values one HTTP request body may hold: every reader of it holds the event loop.

An accepted body is read four times on the server's one event loop: the strict check
(`strict_loads`; in a worker thread past 1 MiB, but Python's reader holds the GIL, so the loop
waits all the same), its depth walk (`_json_depth`), the MCP SDK's own parse and the runtime's
checks of the arguments. Their cost follows the number of values, not the bytes. The wires' budget
(`_line_budget`: 1,000,000 of ``[ { , :`` past 1 MiB, nothing under it) let one 1.47 MB body of
490,000 empty arrays hold ``serve --http``'s loop 7.2 s at load ~19 (red team round 29): every
other client and session of the server waited, background output was not pumped. The HTTP wire
is shared by many clients, so each body, of any size, may hold at most `MAX_BODY_VALUES` of those
characters (counted outside strings when the body has few strings: a Write of a big CSV file is one
string, and a source file with its quotes escaped is counted outside its strings too, up to
`REGEX_BYTES`). Measured at that bound: 0.5 s held at load ~19.
"""

from __future__ import annotations

import re

from shellrt.server._line_budget import EXACT_QUOTES, structure_outside_strings

__all__ = ["MAX_BODY_VALUES", "too_many_values"]

#: ``[ { , :`` characters (outside strings) one body may hold: about 25,000 values.
MAX_BODY_VALUES = 50_000
_STRUCTURAL = (b"[", b"{", b",", b":")
#: Bodies up to this size with many strings (source code with its quotes escaped) are counted
#: outside strings by one regex pass (C, ~0.03 s per MB of code, at worst ~0.13 s per MB of
#: backslashes at load ~17); larger ones are judged by the first count.
REGEX_BYTES = 4 * 1024 * 1024
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def too_many_values(body: bytes) -> str | None:
    """Why ``body`` is refused before any reader holds the loop on it, or None (~5 ms per MB)."""
    count = 0
    for char in _STRUCTURAL:
        count += body.count(char)
        if count > MAX_BODY_VALUES:
            break
    else:
        return None
    exact = structure_outside_strings(body)  # None: over 20,000 quotes (a quote loop in Python)
    if exact is None:
        exact = _outside_strings_by_regex(body)
    if exact is not None and exact <= MAX_BODY_VALUES:
        return None
    return (
        f"the body holds more than {MAX_BODY_VALUES:,} of the characters [ {{ , : outside strings (in "
        f"strings too when it is over {REGEX_BYTES:,} bytes with over {EXACT_QUOTES:,} quotes); it was not "
        "read. Send fewer values per request, or the data as one string (base64)"
    )


def _outside_strings_by_regex(body: bytes) -> int | None:
    """The ``[ { , :`` of ``body`` outside its strings, or None when that cannot be cheap: too big, or
    more strings than the bound allows anyway (each string but one needs a ``,`` or ``:`` outside
    strings; ``\\"`` counted as an escaped quote undercounts the strings, never overcounts them)."""
    if len(body) > REGEX_BYTES:
        return None
    unescaped_quotes = body.count(b'"') - body.count(b'\\"')
    if unescaped_quotes > 2 * (MAX_BODY_VALUES + 1):
        return None
    stripped = _STRING.sub(b"", body)
    return sum(stripped.count(char) for char in _STRUCTURAL)
