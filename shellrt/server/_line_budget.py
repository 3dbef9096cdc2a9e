"""How much parsing one wire line may cost, judged before it is parsed.

Python's JSON reader (and pydantic's) hold the GIL for a whole line: a worker thread does not
let the event loop run while a line of ten million ``[]`` is read (measured, red team round 28:
a 4 MB line of ``[]`` held the loop 1.5 s from a thread, as from the loop). Their cost follows
the number of values, not the bytes (a 30 MB string is read in ~30 ms, 30 MB of ``[],`` in ~4
s), so a line longer than `INLINE_BYTES` is first counted: its ``[``, ``{``, ``,`` and ``:``
(C ``bytes.count``, ~5 ms per MB) must stay within `MAX_STRUCTURE`, which bounds the GIL held
by one parse to about half a second on an idle core. That first count includes strings; when it
is over and the line has few strings (at most `EXACT_QUOTES` quote characters: a Write of a big
CSV file is one string), the count is made again outside strings only, so such content is not
refused for the commas in it. Such lines are then parsed in a worker thread, where an object's
hook lets the loop in between objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import AnyStr, TypeVar

import anyio.to_thread

__all__ = ["INLINE_BYTES", "MAX_STRUCTURE", "over_budget", "parse_off_loop", "structure_outside_strings"]

#: Lines up to this many bytes are parsed on the event loop (at most ~0.15 s, any shape).
INLINE_BYTES = 1 << 20
#: Structural characters (``[ { , :``) a longer line may hold: ~0.45 s of parsing at worst
#: (``"k":0,`` keys), ~20 MB of source code inside strings.
MAX_STRUCTURE = 1_000_000
_STRUCTURAL = ("[", "{", ",", ":")
_STRUCTURAL_BYTES = tuple(char.encode() for char in _STRUCTURAL)
#: Quote characters up to which an over-count is made again outside strings (a loop per quote:
#: ~10 ms at this many); more strings than this are judged by the first count alone.
EXACT_QUOTES = 20_000
#: Backslashes before those quotes looked at, in all (a JSON text escapes a quote with one or
#: three): beyond it the first count judges, so a run of millions costs nothing here.
_MAX_BACKSLASH_WALK = 200_000

T = TypeVar("T")


def _structure_outside_strings(data: AnyStr, quote: AnyStr, backslash: AnyStr, structural: tuple[AnyStr, ...]) -> int | None:
    """The structural characters of ``data`` outside its JSON strings, or None when it has more
    than `EXACT_QUOTES` quotes (too many strings to walk here) or a string left open. Counted on
    ``data`` as it came (bytes or str: the same characters, no encoded copy of a big line)."""
    if data.count(quote) > EXACT_QUOTES:
        return None
    count, start, inside = 0, 0, False
    walk = _MAX_BACKSLASH_WALK  # backslashes looked at, all quotes together: bounded time
    at = data.find(quote)
    while at >= 0:
        slashes = 0
        while at - slashes - 1 >= 0 and data[at - slashes - 1 : at - slashes] == backslash:  # before it
            slashes += 1
            walk -= 1
            if walk < 0:
                return None
        if not inside or slashes % 2 == 0:  # an unescaped quote opens or closes a string
            if not inside:
                count += sum(data.count(char, start, at) for char in structural)
            inside = not inside
            start = at + 1
        at = data.find(quote, at + 1)
    if inside:
        return None
    return count + sum(data.count(char, start) for char in structural)


def structure_outside_strings(data: bytes | str) -> int | None:
    """``[ { , :`` of ``data`` outside its JSON strings (None: too many quotes or an open string)."""
    if isinstance(data, bytes):
        return _structure_outside_strings(data, b'"', b"\\", _STRUCTURAL_BYTES)
    return _structure_outside_strings(data, '"', "\\", _STRUCTURAL)


def over_budget(raw: bytes | str, what: str = "line") -> str | None:
    """Why ``raw`` is refused before parsing (too many values to read without stalling), or None."""
    if len(raw) <= INLINE_BYTES:
        return None
    count = 0
    for char in _STRUCTURAL:
        count += raw.count(char.encode()) if isinstance(raw, bytes) else raw.count(char)
        if count > MAX_STRUCTURE:
            exact = structure_outside_strings(raw)
            if exact is not None and exact <= MAX_STRUCTURE:
                return None  # the count was in strings (a big file's content): cheap to read
            return (
                f"the {what} holds more than {MAX_STRUCTURE:,} of the characters [ {{ , : "
                f"(a {what} over {INLINE_BYTES:,} bytes may hold at most that many; inside strings "
                f"too when it has over {EXACT_QUOTES:,} quotes); it was not read. Send fewer values per {what}, or the data as one "
                "string (base64)"
            )
    return None


async def parse_off_loop(parse: Callable[[bytes | str], T], raw: bytes | str) -> T:
    """``parse(raw)``: in a worker thread for a line over `INLINE_BYTES`, else here."""
    if len(raw) <= INLINE_BYTES:
        return parse(raw)
    return await anyio.to_thread.run_sync(parse, raw)
