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

The model also chooses how long the text is: ``rm -rf victim #``, 10,000 spaces, then
``ls -la`` filled 125 rows of a terminal, and the person saw ``ls -la`` alone above the
menu (red team round 9). Long runs of blanks and of empty lines are therefore named
(``[9,985 blanks]``, ``[300 empty lines]``), never printed, and `recap` gives the line a
prompt prints right above its menu when the text is taller than a screen.
"""

from __future__ import annotations

import math
import re
import unicodedata

__all__ = ["for_person", "recap"]

#: How a line after a newline in shown text starts: never mistaken for the prompt's own lines.
CONTINUATION = "\n    | "
#: Blanks a terminal prints as empty columns: tab, space and the other Zs spaces.
_BLANKS = "\t \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
#: Runs of this many blanks or more are named, not printed (indentation is shorter).
MIN_BLANK_RUN = 16
_BLANK_RUN = re.compile(f"[{_BLANKS}]{{{MIN_BLANK_RUN},}}")
#: Runs of this many empty (or blank-only) lines or more are named, not printed.
MIN_EMPTY_LINES = 3
_EMPTY_LINES = re.compile(f"\n(?:[{_BLANKS}]*\n){{{MIN_EMPTY_LINES},}}")
#: The screen `recap` assumes: a small terminal's width, and the rows a prompt's text may fill.
SCREEN_COLUMNS, SCREEN_ROWS = 80, 12


#: How a line break and a tab read on one line (as they are typed).
_ONE_LINE = {"\n": "\\n", "\t": "\\t"}


def for_person(text: str, *, one_line: bool = False) -> str:
    """``text`` with controls, format and separator characters escaped; newlines marked;
    long runs of blanks and empty lines named instead of printed.

    ``one_line``: a line break shows as ``\\n`` and a tab as ``\\t`` (for a status line), not as
    a marked continuation line and a tab.
    """
    if text.isprintable() and _BLANK_RUN.search(text) is None:
        return text  # the common case: nothing to escape (no control, format or separator characters)
    text = _EMPTY_LINES.sub(_name_empty_lines, text)
    text = _BLANK_RUN.sub(lambda m: f"[{len(m.group()):,} blanks]", text)
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


def _name_empty_lines(match: re.Match[str]) -> str:
    return f"\n[{match.group().count(chr(10)) - 1:,} empty lines]\n"


def recap(shown: str) -> str | None:
    """For a prompt: when ``shown`` (a `for_person` text) is taller than a small screen, the line
    to print right above the menu, saying so and how it begins; else None."""
    lines = shown.split("\n")
    rows = sum(max(1, math.ceil(len(line.expandtabs(8)) / SCREEN_COLUMNS)) for line in lines)
    if rows <= SCREEN_ROWS:
        return None
    first = lines[0] if len(lines[0]) <= 120 else lines[0][:120] + "…"
    return f"(the call above fills {rows:,} lines: read all of it before answering; it begins: {first})"
