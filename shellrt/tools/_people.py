"""A field of the faces people read (`Tool.render_result`), inert on a terminal and laid out on its own.

Why: those faces are shellrt's framing (a diff's ``+``/``-`` marks, Grep's ``name:line:``,
TodoWrite's ``[x]``) around text a repository or the model chose, and a host shows them to a
person, often on a terminal. A C0 or C1 control there acts: ``ESC[1A ESC[2K`` erased the diff line
above it (the model's change, in ``acceptEdits`` mode), OSC 52 wrote the clipboard, a newline drew a
forged checklist item (red team round 38, novel3). Each is shown as ``\\xNN`` (a tab is kept), then
the field is `isolated` among right-to-left letters (round 26).
"""

from __future__ import annotations

import re

from shellrt.tools._bidi import isolated

__all__ = ["for_people"]

#: What a terminal acts on or breaks a line at: C0 controls but the tab, DEL and C1 (``\x9b`` is CSI).
_ACTIVE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def for_people(field: str) -> str:
    """``field`` (a name, a matched or diff line, a checklist item) with each control as ``\\xNN``
    (``\\n``, ``\\r``), `isolated` when it holds a right-to-left letter or a bidi control."""
    if not field.isprintable() and _ACTIVE.search(field) is not None:  # isprintable: no control
        field = _ACTIVE.sub(lambda m: _NAMED.get(m[0]) or f"\\x{ord(m[0]):02x}", field)
    return isolated(field)
