"""Text from inside a container, made safe to show: control and format characters escaped.

Errors and reasons quote what a container holds or said (an image's stderr, the names of files
a command made). They reach an operator's terminal through ``shellrt run``, logs and summaries,
where an escape sequence sets the clipboard (OSC 52), rewrites the screen (CSI) or forges a line
(``\\r``). Printable text, newlines included where allowed, passes unchanged.
"""

from __future__ import annotations

__all__ = ["shown"]


def shown(text: str, *, newlines: bool = False) -> str:
    """``text`` with every non-printable character (newlines too unless ``newlines``) escaped."""
    return "".join(
        c if c.isprintable() or (newlines and c == "\n") else c.encode("unicode_escape").decode("ascii")
        for c in text
    )
