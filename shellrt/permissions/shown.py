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

Round 10: characters that print as nothing without being spaces (U+2800 BRAILLE PATTERN BLANK,
the Hangul fillers) padded a prompt as blanks did, and long runs of combining marks print as a tall
smear over the lines around them; both are named now. What still looks like something else (a
Cyrillic ``\\u0430`` in ``rm -rf backup``, a variation selector, a right-to-left letter that reorders the
words around it in a browser) is shown a second time in ASCII by `ascii_form`, with the foreign
characters named. A client that renders Markdown (an MCP elicitation) gets the text as code
(`markdown_literal`): no link, HTML comment, strikethrough or early closing fence can hide part of it.
"""

from __future__ import annotations

import math
import re
import unicodedata

from shellrt.protocol.control_escape import escape_char, name_mark_runs, unicode_escape

__all__ = ["ascii_form", "beginning", "for_person", "markdown_literal", "model_claim", "recap", "tall_rows"]

#: How a line after a newline in shown text starts: never mistaken for the prompt's own lines.
CONTINUATION = "\n    | "
#: Blanks a terminal prints as empty columns: tab, space and the other Zs spaces, and the letters
#: and symbols drawn as nothing (Hangul fillers, the blank Braille pattern; round 10).
_BLANKS = "\t \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u115f\u1160\u2800\u3164\uffa0"
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
    if text.isprintable() and _BLANK_RUN.search(text) is None and text.isascii():
        return text  # the common case: nothing to escape (no control, format or separator characters)
    text = _EMPTY_LINES.sub(_name_empty_lines, text)
    if not text.isascii():
        text = name_mark_runs(text)
    text = _BLANK_RUN.sub(lambda m: f"[{len(m.group()):,} blanks]", text)
    out: list[str] = []
    for ch in text:
        if one_line and ch in _ONE_LINE:
            out.append(_ONE_LINE[ch])
        elif ch == "\n":
            out.append(CONTINUATION)
        else:
            out.append(ch if ch == "\t" else escape_char(ch))
    return "".join(out)


#: How much of a model-written description a prompt shows (the command is what is decided on).
CLAIM_CHARS = 120


def model_claim(text: str, whose: str = "the model's description") -> str:
    """A model-written description of a call (Bash's ``description``), to follow the call on its
    line: labelled as the model's unchecked words, one line, at most `CLAIM_CHARS` characters.
    Shown plain, "read-only, nothing is written" or a newline and a second command read as the
    prompt's own (red team round 18). ``whose``: the label, when another party wrote it (an MCP
    server's title for its tool, round 19)."""
    shown = " ".join(for_person(text, one_line=True).split())
    if len(shown) > CLAIM_CHARS:
        shown = f"{shown[:CLAIM_CHARS]}… [{len(shown) - CLAIM_CHARS:,} more characters not shown]"
    return f"  [{whose}, not checked: {shown}]"


def shell_word(text: str) -> str:
    """``text`` as one word of a command we suggest the person type or paste: quoted for the
    shell, then escaped for the terminal. A symlink target a repository chose
    (``x; touch PWNED #`` with an OSC 52) went into ``cp … {target} …`` raw: pasted, it ran the
    rest; printed, it wrote the clipboard (red team round 19)."""
    import shlex  # only for advice: not on every import of this module

    return for_person(shlex.quote(text), one_line=True)


def _name_empty_lines(match: re.Match[str]) -> str:
    return f"\n[{match.group().count(chr(10)) - 1:,} empty lines]\n"


def tall_rows(shown: str) -> int | None:
    """The rows ``shown`` (a `for_person` text) fills on a small screen when that is more than a
    prompt's text may fill (`SCREEN_ROWS`); else None."""
    rows = sum(max(1, math.ceil(len(line.expandtabs(8)) / SCREEN_COLUMNS)) for line in shown.split("\n"))
    return rows if rows > SCREEN_ROWS else None


def beginning(shown: str) -> str:
    """How ``shown`` begins: its first line, cut at 120 characters."""
    first = shown.split("\n", 1)[0]
    return first if len(first) <= 120 else first[:120] + "…"


def recap(shown: str) -> str | None:
    """For a prompt: when ``shown`` (a `for_person` text) is taller than a small screen, the line
    to print right above the menu, saying so and how it begins; else None."""
    rows = tall_rows(shown)
    if rows is None:
        return None
    return f"(the call above fills {rows:,} lines: read all of it before answering; it begins: {beginning(shown)})"


#: How many foreign characters `ascii_form` names (each distinct one once).
_NAMED_CHARACTERS = 6


def ascii_form(shown: str) -> str | None:
    """``shown`` (a `for_person` text) with every character outside ASCII written as its code
    (``\\u0430``), then the first few such characters named; None when it is all ASCII.

    A person cannot tell ``rm -rf backup`` with a Cyrillic ``\\u0430`` from the Latin word, see a variation
    selector, or read words a right-to-left letter reordered; the ASCII form shows what runs.
    """
    if shown.isascii():
        return None
    seen: dict[str, None] = {}
    out: list[str] = []
    for ch in shown:
        if ch.isascii():
            out.append(ch)
            continue
        seen.setdefault(ch)
        out.append(unicode_escape(ch))
    names = [
        f"{unicode_escape(ch)} {unicodedata.name(ch, 'unnamed')}" for ch in list(seen)[:_NAMED_CHARACTERS]
    ]
    more = len(seen) - len(names)
    named = "; ".join(names) + (f"; and {more:,} more" if more > 0 else "")
    return f"{''.join(out)}\n(characters outside ASCII: {named})"


#: A code block's lines longer than this are wrapped, marked (`WRAPPED`): a client that scrolls code
#: sideways would otherwise hide the end of a long line.
MARKDOWN_COLUMNS = 100
#: How a wrapped line of a code block goes on (never how a line of `for_person` text starts).
WRAPPED = "\n    ↪ "


def markdown_literal(shown: str) -> str:
    """``shown`` (a `for_person` text) as a Markdown fenced code block a renderer shows verbatim.

    The fence is longer than any run of backticks inside, so no line of the text closes it; in a
    code block nothing is a link, HTML, heading, emphasis or escape. Long lines are wrapped.
    """
    longest = max((len(run) for run in re.findall("`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    lines = []
    for line in shown.split("\n"):
        parts = [line[i : i + MARKDOWN_COLUMNS] for i in range(0, len(line), MARKDOWN_COLUMNS)] or [""]
        lines.append(WRAPPED.join(parts))
    body = "\n".join(lines)
    return f"{fence}text\n{body}\n{fence}"
