"""Text the model chose, made safe to show a person who decides on it.

An approval prompt prints the call's description (a Bash command, a file name, a
URL: all chosen by the model) on the person's terminal or MCP client. Raw, a
command like ``rm -rf victim # <CR><ESC>[2KBash: ls -la`` showed as ``Bash: ls
-la`` while ``rm`` ran once approved (red team round 7); bidirectional overrides
and invisible characters reorder or hide text the same way, and a newline could
start a line that looks like the prompt's own. Here every such character is shown
as an escape (``\\x1b``, ``\\u202e``) and continuation lines are marked, so what
the person reads is what runs.

One function for every place shellrt shows others' text to a person: prompts, the CLI's
diagnostics and transcripts (`shellrt.cli._terminal`), and, with ``one_line=True``, the
batch's one-line status and summary (`shellrt.batch.progress.terminal_safe`), where a line
break must not start a line at all and is shown as ``\\n``. Round 8 found two escapers
disagreeing: the batch's spelled a carriage return ``\\r`` where this one wrote ``\\x0d``,
and escaped a no-break space this one keeps.
"""

from __future__ import annotations

import unicodedata

__all__ = ["for_person"]

#: How a line after a newline in shown text starts: never mistaken for the prompt's own lines.
CONTINUATION = "\n    | "


#: How a line break and a tab read on one line (as they are typed).
_ONE_LINE = {"\n": "\\n", "\t": "\\t"}


def for_person(text: str, *, one_line: bool = False) -> str:
    """``text`` with controls, format and separator characters escaped; newlines marked.

    ``one_line``: a line break shows as ``\\n`` and a tab as ``\\t`` (for a status line), not as
    a marked continuation line and a tab.
    """
    if text.isprintable():
        return text  # the common case: nothing to escape (no control, format or separator characters)
    out: list[str] = []
    for ch in text:
        if one_line and ch in _ONE_LINE:
            out.append(_ONE_LINE[ch])
        elif ch == "\n":
            out.append(CONTINUATION)
        elif ch == "\t" or ch.isprintable() or unicodedata.category(ch) == "Zs":
            out.append(ch)  # Zs: a space other than U+0020 (no-break, thin…) shows as a space
        else:
            code = ord(ch)
            out.append(
                f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
            )
    return "".join(out)
