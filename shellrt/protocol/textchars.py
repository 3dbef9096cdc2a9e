"""The characters a reader does not see or takes for a line break: one table for every judge.

Why: shellrt's notes (`shellrt.protocol.notes`), the file tools' framing escape
(`shellrt.tools._framing`) and the marks inside one numbered line (`shellrt.tools._render`) must
agree on what starts a line and what a reader skips; three copies drift. Standard library only:
the notebook's child process imports it with stub packages (no ``shellrt/__init__``, no pydantic).
"""

from __future__ import annotations

import functools
import re
import unicodedata

from shellrt.protocol.escapes import (
    C1_CONTROLS,
    C1_CSI,
    CSI_INTERMEDIATES,
    CSI_PARAMS,
    ESC,
    ESC_CSI,
    ESC_KINDS,
    FINALS,
    TERMINATORS,
    char_class,
)

__all__ = ["ANSI", "DROPPED_CATEGORIES", "ESCAPE_INTRODUCER", "INLINE_BREAK_MARKS", "LINE_BREAKS", "unseen"]


def _escapes_unseen() -> re.Pattern[str]:
    """A terminal escape (`shellrt.protocol.escapes`): a CSI, an OSC up to its 7-bit terminator
    (or the text's end), or the 7-bit form of another C1 control. Lenient where the table is
    not (DCS, SOS, PM and APC strings are two characters here, CAN and SUB no end): a reader's
    view of text, not a terminal's."""
    osc = next(byte for byte, kind in ESC_KINDS.items() if kind == "osc")
    ends = [end.decode("ascii") for end in TERMINATORS["osc"] if end.isascii()]
    csi = re.escape(chr(ESC_CSI)) + char_class(CSI_PARAMS) + "*" + char_class(CSI_INTERMEDIATES) + "*"
    csi += char_class(FINALS)
    string = re.escape(chr(osc)) + "[^" + char_class(ord(end[0]) for end in ends)[1:] + "*"
    string += "(?:" + "|".join(map(re.escape, ends)) + ")?"
    short = char_class(byte - 0x40 for byte in C1_CONTROLS if byte != C1_CSI)
    return re.compile(re.escape(chr(ESC)) + f"(?:{csi}|{string}|{short})")


#: A terminal escape (CSI, OSC up to its terminator, or a two-character escape): a reader sees none.
ANSI = _escapes_unseen()
#: An escape's introducer: ``ESC`` and the character naming its kind (``[``, ``]``, ``P`` ...). Dropped,
#: it leaves a line as a model reads it (``ESC[shellrt]`` is a CSI to a terminal, ``[shellrt]`` to a
#: model; red team round 31).
ESCAPE_INTRODUCER = re.compile("\x1b[\x20-\x7e]?")
#: Unicode categories a reader does not see before a line's first letter: format characters,
#: combining marks, controls, blanks and the line and paragraph separators.
DROPPED_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Cc", "Zs", "Zl", "Zp"})
#: Each line break but ``\n`` and the visible mark shown for it inside one numbered line of a file.
INLINE_BREAK_MARKS = {
    "\r": "\u240d",
    "\v": "\u240b",
    "\f": "\u240c",
    "\x1c": "\u241c",
    "\x1d": "\u241d",
    "\x1e": "\u241e",
    "\x85": "\u27e8U+0085\u27e9",
    "\u2028": "\u27e8U+2028\u27e9",
    "\u2029": "\u27e8U+2029\u27e9",
}
#: The line breaks Python's ``str.splitlines`` knows (``\n`` first).
LINE_BREAKS = "\n" + "".join(INLINE_BREAK_MARKS)

#: Categories of characters that show nothing a reader can tell apart: controls, format characters
#: (zero-width, bidirectional marks, BOM, soft hyphen, tag characters), private use, unassigned,
#: and the line and paragraph separators.
_UNSEEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Zl", "Zp"})


@functools.lru_cache(maxsize=4096)
def unseen(c: str) -> bool:
    """Whether a reader cannot see ``c`` or tell it from an ASCII space (a blank other than it)."""
    category = unicodedata.category(c)
    return category in _UNSEEN_CATEGORIES or (category == "Zs" and c != " ")
