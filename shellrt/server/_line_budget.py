"""How much parsing one wire line may cost, judged before it is parsed.

Python's JSON reader (and pydantic's) hold the GIL for a whole line: a worker thread does not
let the event loop run while a line of ten million ``[]`` is read (measured, red team round 28:
a 4 MB line of ``[]`` held the loop 1.5 s from a thread, as from the loop). Their cost follows
the number of values, not the bytes (a 30 MB string is read in ~30 ms, 30 MB of ``[],`` in ~4
s), so a line longer than `INLINE_BYTES` is first counted: its ``[``, ``{``, ``,`` and ``:``
(counted also inside strings, so this over-counts; C ``bytes.count``, ~5 ms per MB) must stay
within `MAX_STRUCTURE`, which bounds the GIL held by one parse to about half a second on an
idle core. Such lines are then parsed in a worker thread, where an object's hook lets the loop
in between objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

__all__ = ["INLINE_BYTES", "MAX_STRUCTURE", "over_budget", "parse_off_loop"]

#: Lines up to this many bytes are parsed on the event loop (at most ~0.15 s, any shape).
INLINE_BYTES = 1 << 20
#: Structural characters (``[ { , :``) a longer line may hold: ~0.45 s of parsing at worst
#: (``"k":0,`` keys), ~20 MB of source code inside strings.
MAX_STRUCTURE = 1_000_000
_STRUCTURAL = ("[", "{", ",", ":")

T = TypeVar("T")


def over_budget(raw: bytes | str, what: str = "line") -> str | None:
    """Why ``raw`` is refused before parsing (too many values to read without stalling), or None."""
    if len(raw) <= INLINE_BYTES:
        return None
    count = 0
    for char in _STRUCTURAL:
        count += raw.count(char.encode()) if isinstance(raw, bytes) else raw.count(char)
        if count > MAX_STRUCTURE:
            return (
                f"the {what} holds more than {MAX_STRUCTURE:,} of the characters [ {{ , : "
                f"(a {what} over {INLINE_BYTES:,} bytes may hold at most that many, strings "
                f"included); it was not read. Send fewer values per {what}, or the data as one "
                "string (base64)"
            )
    return None


async def parse_off_loop(parse: Callable[[bytes | str], T], raw: bytes | str) -> T:
    """``parse(raw)``: in a worker thread for a line over `INLINE_BYTES`, else here."""
    if len(raw) <= INLINE_BYTES:
        return parse(raw)
    return await anyio.to_thread.run_sync(parse, raw)
