"""Where a preview's head, cut by us, stops inside an escape sequence the command began.

A cut output's preview is its head, a note of ours ("N bytes omitted; full output in PATH") and its
tail. When the head ends inside an escape sequence -- an OSC, DCS, SOS, PM or APC string, a CSI, a
bare ESC, or their 8-bit C1 forms -- whatever renders the result on a terminal (an MCP client, a
log viewer, ``cat`` of a transcript) reads our note as the rest of that sequence: an OSC string
takes it whole into the window title until the tail's BEL, so the reader never learns the output
was cut or where the rest is; a CSI eats its first characters (red team round 26). The bytes from
the sequence's start are left out of the head (and counted as omitted): the file keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from shellrt.protocol import escapes

__all__ = ["crosses_a_line", "open_sequence_start"]


def _bytes_class(values: Iterable[int]) -> bytes:
    return escapes.char_class(values).encode("ascii")


#: An escape sequence's start: ESC, or a C1 introducer of a string or a CSI as UTF-8 (``C2 xx``).
#: A whole plain CSI (colours, cursor moves: most of what output holds) is passed over by the
#: pattern itself, not one by one here: 256 KiB of coloured lines took 78 ms, now a few.
_INTRO = re.compile(
    re.escape(bytes([escapes.ESC]))
    + b"(?!"
    + re.escape(bytes([escapes.ESC_CSI]))
    + _bytes_class(escapes.CSI_BODY)
    + b"*"
    + _bytes_class(escapes.FINALS)
    + b")|"
    + re.escape(bytes([escapes.C1_LEAD]))
    + _bytes_class([escapes.C1_CSI, *escapes.C1_STRINGS])
)
#: DEL: ignored inside an escape or a CSI.
_DEL = 0x7F
#: What a terminal runs (C0 controls) or ignores (DEL) after ESC and stays in the escape: all but
#: CAN and SUB, which abort it, and ESC, which begins another.
_STAYS = frozenset(range(0x20)) - {escapes.ESC, *escapes.ABORTS} | {_DEL}
#: kind of string -> what ends it (`escapes.TERMINATORS`), or CAN and SUB, which abort it.
_STRING_ENDS = {
    kind: re.compile(b"|".join(map(re.escape, ends)) + b"|" + _bytes_class(escapes.ABORTS))
    for kind, ends in escapes.TERMINATORS.items()
}


def _csi_end(data: bytes, at: int) -> int | None:
    """Just past the CSI whose parameters start at ``at``, or None when ``data`` ends inside it."""
    for i in range(at, len(data)):
        byte = data[i]
        if byte == _DEL:
            continue  # a terminal ignores it and stays in the CSI (round 35)
        if byte in escapes.FINALS or byte in escapes.ABORTS or byte > _DEL:
            return i + 1  # the final byte; CAN/SUB or a byte no CSI holds end it too
        if byte == escapes.ESC:
            return i  # a new sequence begins: this one is over
        # parameters, intermediates and C0 controls (a terminal runs those and stays in the CSI)
    return None


def _string_end(kind: str, data: bytes, at: int) -> int | None:
    """Just past the end of the string of ``kind`` whose body starts at ``at``, or None."""
    found = _STRING_ENDS[kind].search(data, at)
    return None if found is None else found.end()


def _escape_end(data: bytes, at: int) -> int | None:
    """Just past the sequence ``ESC`` at ``at`` begins, or None when ``data`` ends inside it.

    A C0 control (but CAN, SUB and ESC) or DEL after ESC or its intermediates is run or ignored by
    a terminal, which stays in the escape: ``ESC LF [`` is a CSI. Taken as the final byte, it
    made an output ending ``ESC LF`` look closed, and the text after it lost its first characters
    on a terminal (round 35)."""
    i = _past_stays(data, at + 1)
    if i >= len(data):
        return None
    introducer = data[i]
    if introducer == escapes.ESC:
        return i  # a new sequence begins: this one is over
    if introducer == escapes.ESC_CSI:
        return _csi_end(data, i + 1)
    if introducer in escapes.ESC_STRINGS:
        return _string_end(escapes.ESC_KINDS[introducer], data, i + 1)
    # intermediates (``ESC ( B``), then a final byte (CAN and SUB end it as one)
    while i < len(data) and data[i] in escapes.CSI_INTERMEDIATES:
        i = _past_stays(data, i + 1)
    return None if i >= len(data) else i + 1


def _past_stays(data: bytes, i: int) -> int:
    """The first offset from ``i`` that is no byte a terminal runs or ignores inside an escape."""
    while i < len(data) and data[i] in _STAYS:
        i += 1
    return i


def _sequences(data: bytes) -> Iterator[tuple[int, int | None]]:
    """Each escape sequence of ``data`` that the pattern does not pass over whole: its start and
    the offset just past its end (None: ``data`` ends inside it, and nothing follows)."""
    at = 0
    while (found := _INTRO.search(data, at)) is not None:
        start = found.start()
        if data[start] == escapes.ESC:
            end = _escape_end(data, start)
        elif data[start + 1] == escapes.C1_CSI:
            end = _csi_end(data, start + 2)
        else:
            end = _string_end(escapes.C1_KINDS[data[start + 1]], data, start + 2)
        yield start, end
        if end is None:
            return
        at = end


def open_sequence_start(data: bytes) -> int | None:
    """The offset of the escape sequence ``data`` ends inside, or None when it ends outside any."""
    if data.find(escapes.ESC) < 0 and data.find(escapes.C1_LEAD) < 0:
        return None  # most output: two memchr scans instead of the pattern's (~400x slower)
    for start, end in _sequences(data):
        if end is None:
            return start
    return None


def crosses_a_line(data: bytes) -> bool:
    """Whether a sequence of ``data`` holds a newline or is left open at its end: then some line
    of it ends inside a sequence, and the lines a reader keeps (a filter) may leave it open (round
    35). A complete CSI never holds one (its body is printable), so colours cost one pass."""
    if data.find(escapes.ESC) < 0 and data.find(escapes.C1_LEAD) < 0:
        return False
    return any(end is None or data.find(b"\n", start, end) >= 0 for start, end in _sequences(data))
