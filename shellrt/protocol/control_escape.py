"""Control characters written as their escapes, for text bound for an operator's terminal.

Why here, at the bottom layer: the CLI's standard error (`shellrt.cli._stderr`) and an external MCP
server's standard error relayed by the MCP tools (`shellrt.tools.mcp._stderr_tty`) must escape alike
(red team rounds 29 and 30), and the tools layer may not import the CLI. Standard library only.
"""

from __future__ import annotations

import re

__all__ = ["escape_controls"]

#: ASCII controls other than newline and tab, and DEL.
_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def escape_controls(text: str) -> str:
    """``text`` with each control, format or separator character written as its escape (``\\x1b``,
    ``\\u202e``); newlines, tabs and spaces kept, so a traceback and a help text keep their layout
    (as `shellrt.permissions.shown.for_person` escapes, without its continuation marks)."""
    if text.isascii():
        return _ASCII_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    out: list[str] = []
    for ch in text:
        if ch.isprintable() or ch in "\n\t":
            out.append(ch)
            continue
        import unicodedata  # only for a non-ASCII control: start-up stays lean

        code = ord(ch)
        if unicodedata.category(ch) == "Zs":
            out.append(ch)  # a space other than U+0020 shows as a space
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)
