"""Names and lines shown to people, each laid out on its own among right-to-left letters.

Why: a viewer lays a line out with the Unicode bidirectional algorithm. A name holding Hebrew or
Arabic letters (no control character: round 25 quoted those) pulls the neutral characters and
digits beside it into its right-to-left run: Grep's ``src/\\u05d0\\u05d1:12:\\u05d2`` shows the line
number on the other side of the name, Write's ``Created <name> (40 bytes)`` moves the count into
the name, and a line whose name starts with such a letter is laid out right to left whole (round 25,
"Left"). In the faces people read (`Tool.render_result`), each such field is an isolate (FSI ...
PDI, U+2068/U+2069): laid out by itself, it moves nothing around it. The model reads logical order
and gets no isolate (it would copy them into paths). An explicit bidirectional control inside a
field (a file's own PDI would end the isolate early) is shown as ``\\uXXXX`` there.
"""

from __future__ import annotations

import re

__all__ = ["isolated"]

#: Right-to-left scripts' blocks (Hebrew to Arabic Extended-A, their presentation forms, the
#: right-to-left supplementary planes' blocks) and the explicit bidirectional controls: a field
#: holding one is isolated. A block's neutral characters count too (an isolate too many is harmless).
_RIGHT_TO_LEFT = re.compile(
    "[\u0590-\u08ff\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069\ufb1d-\ufdff\ufe70-\ufefe"
    "\U00010800-\U00010fff\U0001e800-\U0001efff]"
)
_CONTROLS = re.compile("[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")
FSI, PDI = "\u2068", "\u2069"


def isolated(field: str) -> str:
    """``field`` (a name, a matched line) as an isolate when it holds a right-to-left letter or a
    bidirectional control, its own controls shown as ``\\uXXXX``; else as it is."""
    if field.isascii() or _RIGHT_TO_LEFT.search(field) is None:
        return field
    return FSI + _CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", field) + PDI
