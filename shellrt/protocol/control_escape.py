"""Control characters written as their escapes, for text bound for an operator's terminal or a person.

Why here, at the bottom layer: the CLI's standard error (`shellrt.cli._stderr`), an external MCP
server's standard error relayed by the MCP tools (`shellrt.tools.mcp._stderr_tty`), the people faces
of tool results (`shellrt.tools._people`, `shellrt.protocol.tool.rendered_content`) and approval
prompts (`shellrt.permissions.shown`) must escape alike (red team rounds 8, 29, 30 and 39 found
escapers that disagreed), and the lower layers may not import the upper ones. One rule,
`escape_char`; each caller only chooses which characters it names or lays out itself.
Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["MIN_MARK_RUN", "escape_char", "escape_controls", "name_mark_runs", "unicode_escape"]

#: ASCII controls other than newline and tab, and DEL.
_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_NONE_NAMED: Mapping[str, str] = {}
#: Runs of this many combining marks or more on one character are named, not printed (a letter
#: with its accents has one to three).
MIN_MARK_RUN = 5
#: Where such a run may be: non-ASCII characters that are neither letters nor digits (a combining
#: mark is neither), so text in any script is skipped at C speed and only these are looked at.
_MAYBE_MARKS = re.compile(rf"[^\x00-\x7f\w]{{{MIN_MARK_RUN},}}")


def unicode_escape(ch: str) -> str:
    """``ch`` as ``\\uXXXX`` (or ``\\UXXXXXXXX`` past the Basic Multilingual Plane)."""
    code = ord(ch)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_char(ch: str, named: Mapping[str, str] = _NONE_NAMED) -> str:
    """``ch`` as a person should see it: itself when it prints (a letter, a mark, a symbol) or is a
    space other than U+0020 (Zs: shows as a space); otherwise its name in ``named`` (``\\n``) or its
    escape (``\\x1b``, ``\\u202e``, ``\\U000e0041``). The caller keeps the tab and newline it lays out."""
    if ch.isprintable():
        return ch
    import unicodedata  # only for a character that does not print: start-up stays lean

    if unicodedata.category(ch) == "Zs":
        return ch
    shown = named.get(ch)
    if shown is not None:
        return shown
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else unicode_escape(ch)


def escape_controls(text: str) -> str:
    """``text`` with each control, format or separator character written as its escape (``\\x1b``,
    ``\\u202e``); newlines, tabs and spaces kept, so a traceback and a help text keep their layout
    (as `shellrt.permissions.shown.for_person` escapes, without its continuation marks)."""
    if text.isascii():
        return _ASCII_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    # A printable line is kept as is (``isprintable``: C speed); only the others are looked at
    # character by character (1 MB of accented text: ~380 -> ~44 ms; round 39, review9).
    return "\n".join(line if line.isprintable() else _escape_line(line) for line in text.split("\n"))


def _escape_line(line: str) -> str:
    return "".join(ch if ch == "\t" else escape_char(ch) for ch in line)


def name_mark_runs(text: str) -> str:
    """``text`` with each run of `MIN_MARK_RUN` combining marks or more named (``[240 combining
    marks]``): they stack into a smear over the lines above and below (a browser draws them all; a
    terminal clips them) and hide them from the person reading (red team rounds 10 and 40)."""
    if text.isascii():
        return text
    return _MAYBE_MARKS.sub(lambda m: _named_marks(m.group()), text)


def _named_marks(text: str) -> str:
    import unicodedata

    out: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in ("Mn", "Me"):
            continue
        out.append(f"[{i - start:,} combining marks]" if i - start >= MIN_MARK_RUN else text[start:i])
        out.append(ch)
        start = i + 1
    end = len(text)
    out.append(f"[{end - start:,} combining marks]" if end - start >= MIN_MARK_RUN else text[start:end])
    return "".join(out)
