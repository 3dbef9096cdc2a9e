"""Text the model chose, made safe to show a person who decides on it.

An approval prompt prints the call's description (a Bash command, a file name, a
URL: all chosen by the model) on the person's terminal or MCP client. Raw, a
command like ``rm -rf victim # <CR><ESC>[2KBash: ls -la`` showed as ``Bash: ls
-la`` while ``rm`` ran once approved (red team round 7); bidirectional overrides
and invisible characters reorder or hide text the same way, and a newline could
start a line that looks like the prompt's own. Here every such character is shown
as an escape (``\\x1b``, ``\\u202e``) and continuation lines are marked, so what
the person reads is what runs.
"""

from __future__ import annotations

import unicodedata

__all__ = ["for_person"]

#: How a line after a newline in shown text starts: never mistaken for the prompt's own lines.
CONTINUATION = "\n    | "


def for_person(text: str) -> str:
    """``text`` with controls, format and separator characters escaped; newlines marked."""
    if text.isprintable():
        return text  # the common case: nothing to escape (no control, format or separator characters)
    out: list[str] = []
    for ch in text:
        if ch == "\n":
            out.append(CONTINUATION)
        elif ch == "\t" or ch.isprintable() or unicodedata.category(ch) == "Zs":
            out.append(ch)  # Zs: a space other than U+0020 (no-break, thin…) shows as a space
        else:
            code = ord(ch)
            out.append(
                f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
            )
    return "".join(out)
