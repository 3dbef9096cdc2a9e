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

__all__ = ["open_sequence_start"]

#: An escape sequence's start: ESC, or a C1 introducer of a string or a CSI as UTF-8 (``C2 xx``).
#: A whole plain CSI (colours, cursor moves: most of what output holds) is passed over by the
#: pattern itself, not one by one here: 256 KiB of coloured lines took 78 ms, now a few.
_INTRO = re.compile(rb"\x1b(?!\[[\x20-\x3f]*[\x40-\x7e])|\xc2[\x90\x98\x9b\x9d\x9e\x9f]")
#: What ends a string: ST (``ESC \`` or C1 ``C2 9C``); CAN and SUB abort one. An OSC also ends at BEL.
_STRING_END = re.compile(rb"\x1b\\|\xc2\x9c|[\x18\x1a]")
_OSC_END = re.compile(rb"\x07|\x1b\\|\xc2\x9c|[\x18\x1a]")
#: After ESC: the introducers of a string (OSC, DCS, SOS, PM, APC).
_ESC_STRINGS = frozenset(b"]PX^_")
_ESC_CSI = ord("[")
_C1_CSI, _C1_OSC = 0x9B, 0x9D


def _csi_end(data: bytes, at: int) -> int | None:
    """Just past the CSI whose parameters start at ``at``, or None when ``data`` ends inside it."""
    for i in range(at, len(data)):
        byte = data[i]
        if 0x40 <= byte <= 0x7E or byte in (0x18, 0x1A) or byte >= 0x7F:
            return i + 1  # the final byte; CAN/SUB or a byte no CSI holds end it too
        if byte == 0x1B:
            return i  # a new sequence begins: this one is over
        # parameters, intermediates and C0 controls (a terminal runs those and stays in the CSI)
    return None


def _escape_end(data: bytes, at: int) -> int | None:
    """Just past the sequence ``ESC`` at ``at`` begins, or None when ``data`` ends inside it."""
    if at + 1 >= len(data):
        return None
    kind = data[at + 1]
    if kind == _ESC_CSI:
        return _csi_end(data, at + 2)
    if kind in _ESC_STRINGS:
        found = (_OSC_END if kind == ord("]") else _STRING_END).search(data, at + 2)
        return None if found is None else found.end()
    i = at + 1
    while i < len(data) and 0x20 <= data[i] <= 0x2F:  # intermediates (``ESC ( B``), then a final byte
        i += 1
    return None if i >= len(data) else i + 1


def open_sequence_start(data: bytes) -> int | None:
    """The offset of the escape sequence ``data`` ends inside, or None when it ends outside any."""
    if data.find(b"\x1b") < 0 and data.find(b"\xc2") < 0:
        return None  # most output: two memchr scans instead of the pattern's (~400x slower)
    at = 0
    while (found := _INTRO.search(data, at)) is not None:
        start = found.start()
        if data[start] == 0x1B:
            end = _escape_end(data, start)
        elif data[start + 1] == _C1_CSI:
            end = _csi_end(data, start + 2)
        else:
            string_end = (_OSC_END if data[start + 1] == _C1_OSC else _STRING_END).search(data, start + 2)
            end = None if string_end is None else string_end.end()
        if end is None:
            return start
        at = end
    return None
