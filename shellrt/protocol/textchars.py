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

__all__ = ["ANSI", "DROPPED_CATEGORIES", "INLINE_BREAK_MARKS", "LINE_BREAKS", "unseen"]

#: A terminal escape (CSI, OSC up to its terminator, or a two-character escape): a reader sees none.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
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
