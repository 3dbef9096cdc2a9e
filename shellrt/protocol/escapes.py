"""The terminal escape-sequence grammar shellrt judges a command's output by: one table.

Why: the preview cut (`shellrt.supervisor._escape_cut`: where a sequence left open ends a cut),
``shellrt run``'s terminal filter (`shellrt.cli._tty_filter`) and the escapes a reader does not
see (`shellrt.protocol.textchars.ANSI`) each spelled out the introducers and terminators; three
copies drift (round 27). Each derives what it needs from here and keeps its own policy (what it
keeps, where it is more lenient) next to its code. Standard library only, nothing imported: the
notebook's child process imports `textchars` with stub packages.

Bytes are ECMA-48's: an introducer is ``ESC x`` (7-bit) or the C1 control ``x + 0x40`` (8-bit,
in UTF-8 output the two bytes ``C2 xx``).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ABORTS",
    "BEL",
    "C1_CONTROLS",
    "C1_CSI",
    "C1_KINDS",
    "C1_LEAD",
    "C1_STRINGS",
    "CSI_BODY",
    "CSI_INTERMEDIATES",
    "CSI_PARAMS",
    "ESC",
    "ESC_CSI",
    "ESC_KINDS",
    "ESC_STRINGS",
    "FINALS",
    "STRING_KINDS",
    "ST_7BIT",
    "ST_C1",
    "TERMINATORS",
    "char_class",
]

ESC = 0x1B
BEL = 0x07
#: CAN and SUB abort a sequence: a terminal drops it and reads on as text.
ABORTS = frozenset({0x18, 0x1A})
#: The byte after ESC -> the kind of sequence it begins. Any other byte begins a short escape
#: (``ESC [intermediates] final``: ``ESC 7``, ``ESC ( B``, ``ESC c``).
ESC_KINDS: dict[int, str] = {
    ord("["): "csi",
    ord("]"): "osc",
    ord("P"): "dcs",
    ord("X"): "sos",
    ord("^"): "pm",
    ord("_"): "apc",
}
#: The kinds that carry a string up to a terminator (a CSI ends at its final byte instead).
STRING_KINDS = frozenset({"osc", "dcs", "sos", "pm", "apc"})
#: The C1 controls (U+0080..U+009F): each is ``ESC`` and the byte 0x40 less.
C1_CONTROLS = range(0x80, 0xA0)
#: The C1 introducer -> its kind (the 8-bit form of `ESC_KINDS`).
C1_KINDS: dict[int, str] = {byte + 0x40: kind for byte, kind in ESC_KINDS.items()}
#: UTF-8's lead byte of U+0080..U+00BF: a C1 control in output is ``C2`` and the control.
C1_LEAD = 0xC2
#: ST, the string terminator: ``ESC \`` and the C1 control 0x9C.
ST_7BIT = b"\x1b\\"
ST_C1 = 0x9C
#: kind -> what ends its string besides the `ABORTS`: ST in either form; an OSC also at BEL
#: (xterm's form, which most programs write).
TERMINATORS: dict[str, tuple[bytes, ...]] = {
    kind: (ST_7BIT, bytes([C1_LEAD, ST_C1]), *((bytes([BEL]),) if kind == "osc" else ()))
    for kind in sorted(STRING_KINDS)
}
#: A CSI is parameter bytes, then intermediate bytes, then one final byte; a short escape is
#: intermediate bytes, then one final byte.
CSI_PARAMS = range(0x30, 0x40)
CSI_INTERMEDIATES = range(0x20, 0x30)
FINALS = range(0x40, 0x7F)
#: The bytes a CSI holds before its final byte, in whatever order (a terminal stays in the CSI).
CSI_BODY = range(CSI_INTERMEDIATES.start, CSI_PARAMS.stop)

#: Derived: the introducers of a CSI and of a string, after ESC and as C1 controls.
ESC_CSI = next(byte for byte, kind in ESC_KINDS.items() if kind == "csi")
C1_CSI = ESC_CSI + 0x40
ESC_STRINGS = frozenset(byte for byte, kind in ESC_KINDS.items() if kind in STRING_KINDS)
C1_STRINGS = frozenset(byte + 0x40 for byte in ESC_STRINGS)


def char_class(values: Iterable[int]) -> str:
    """A regular-expression class (``[...]``) matching exactly ``values`` (each below 0x100), in
    ``\\xNN`` form: the same text serves a ``str`` pattern and, encoded as ASCII, a ``bytes`` one.
    Consecutive values become ranges."""
    ordered = sorted(set(values))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        first, last = ordered[i], ordered[j]
        parts.append(f"\\x{first:02x}" if first == last else f"\\x{first:02x}-\\x{last:02x}")
        i = j + 1
    return "[" + "".join(parts) + "]"
