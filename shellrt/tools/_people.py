"""A field of the faces people read (`Tool.render_result`), inert on a terminal, seen whole, laid out on its own.

Why: those faces are shellrt's framing (a diff's ``+``/``-`` marks, Grep's ``name:line:``,
TodoWrite's ``[x]``) around text a repository or the model chose, and a host shows them to a
person, often on a terminal. A C0 or C1 control there acts: ``ESC[1A ESC[2K`` erased the diff line
above it (the model's change, in ``acceptEdits`` mode), OSC 52 wrote the clipboard, a newline drew a
forged checklist item (red team round 38, novel3). A format character prints as nothing: tag
characters (U+E0000..) spelled a sentence the next model reads and the person approving the diff
never saw, a zero-width space made one name of two (round 39, review6). Each is shown as its
escape (``\\xNN``, ``\\n``, ``\\uXXXX``: what `shellrt.permissions.shown.for_person` escapes in a
prompt; a tab and the Zs spaces are kept), then the field is `isolated` among right-to-left
letters (round 26).
"""

from __future__ import annotations

import re

from shellrt.protocol.control_escape import escape_char, name_mark_runs
from shellrt.tools._bidi import isolated

__all__ = ["for_people"]

#: Where an escape may be due: anything but the tab and printable ASCII (each is then judged).
_CANDIDATE = re.compile("[^\t\x20-\x7e]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _shown(match: re.Match[str]) -> str:
    return escape_char(match[0], _NAMED)


def for_people(field: str) -> str:
    """``field`` (a name, a matched or diff line, a checklist item) with each control, format,
    separator, surrogate or unassigned character as its escape (``\\x1b``, ``\\n``, ``\\u200b``),
    long runs of combining marks named (as a prompt names them), `isolated` when it holds a
    right-to-left letter."""
    field = name_mark_runs(field)  # a smear of marks hid the lines around it (round 40)
    if not field.isprintable():  # isprintable: none of those (a tab is not printable: judged)
        field = _CANDIDATE.sub(_shown, field)
    return isolated(field)
