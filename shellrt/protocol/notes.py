"""shellrt's own notes in a result, and command output that cannot pass for one.

Why: a command's output and shellrt's notes about it (exit code, truncation and
where the full output is, timeouts, the working directory, reverted protected
files, a task's status) reach the model as one text. A command that prints
``[Output truncated: ... saved at /tmp/evil]`` could steer the model. So every
note starts with `NOTE_MARK`, and every line of command output that reads like a
note — after case folding, NFKC, stripping blanks, terminal escapes, zero-width
and lookalike characters, at any line break Python or a terminal knows (``\\r``
too) — is shown prefixed with `OUTPUT_MARK`; `neutralize_output` counts them, so
the result can say so. A cut that makes the middle of a line a line start
(`cut_tail`) marks that partial line.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from shellrt.protocol.textchars import ANSI, DROPPED_CATEGORIES, ESCAPE_INTRODUCER, LINE_BREAKS

__all__ = [
    "NOTE_MARK",
    "OUTPUT_MARK",
    "cut_tail",
    "neutralize_output",
    "neutralized_note",
    "note",
    "reads_as_note",
    "starts_mid_line_as_note",
    "untrusted_note",
]

#: How every shellrt note in a command's result begins.
NOTE_MARK = "[shellrt]"
#: Put before a line of command output that reads like a note.
OUTPUT_MARK = "(output) "
#: Openings (folded) a note has, or had in earlier versions of shellrt.
_OPENINGS = ("[shellrt", "shellrt]", "[output truncated", "[output incomplete")
#: Letters that look like the marker's letters (NFKC does not fold them): Cyrillic, Greek.
_LOOKALIKES = str.maketrans(
    {
        "\u0455": "s",
        "\u04bb": "h",
        "\u0435": "e",
        "\u04cf": "l",
        "\u03b9": "l",
        "\u0433": "r",
        "\u0442": "t",
        "\u03c4": "t",
        "\u03b5": "e",
        "\u03bf": "o",
        "\u043e": "o",
        "\u0440": "p",
        "\u0441": "c",
        "\u27e6": "[",
        "\u3014": "[",
        "\u3010": "[",
        "\u2772": "[",
        "\u2045": "[",
        "\u27e7": "]",
        "\u3015": "]",
        "\u3011": "]",
        "\u2773": "]",
        "\u2046": "]",
    }
)
#: ASCII controls (a tab, a NUL or a bell between the letters is not seen by a reader).
_CONTROL_BYTES = bytes(range(0x20)) + b"\x7f"
#: ASCII upper case to lower case: one `bytes.translate` pass folds case and drops controls.
_LOWER_BYTES = bytes.maketrans(bytes(range(0x41, 0x5B)), bytes(range(0x61, 0x7B)))
#: The openings as judged: blanks are dropped from a line before it is compared (round 20; the
#: non-ASCII path dropped them before, so ``[output truncated …é`` was never marked).
_FOLDED_OPENINGS = tuple(o.replace(" ", "") for o in _OPENINGS)
_OPENING_BYTES = tuple(o.encode("ascii") for o in _FOLDED_OPENINGS)
#: Characters dropped before judging a line: invisible (format), combining marks, controls.
_DROPPED = DROPPED_CATEGORIES
#: Markup a line may start with and still show a note's words as its first (round 20): markdown
#: headings, quotes, list bullets, emphasis, code and escapes (``# [shellrt] …``, ``> [shellrt]``,
#: ``**[shellrt] …**``, ``\\[shellrt\\]``: a page converted to markdown renders them so). Skipped
#: before the opening is looked for, and blanks dropped inside it (``[ shellrt ]``).
_DECORATION = "#>*+-_~`|=\\!\"'(.)0123456789"
_DECORATION_BYTES = _DECORATION.encode("ascii")
#: ASCII bytes left out of a line before it is judged: controls and blanks.
_DROPPED_BYTES = _CONTROL_BYTES + b" "
#: How much of a line's start is judged (a note's opening is short; bounded work per line).
_JUDGED_CHARS = 160


def note(text: str) -> str:
    """``text`` as a shellrt note (marked once).

    A note may quote what a command chose (a file name, a directory): a line break in
    it must not start a line that passes for another note, so later lines are judged
    like output.
    """
    marked = text if text.startswith(NOTE_MARK) else f"{NOTE_MARK} {text}"
    first, *rest = marked.splitlines(keepends=True) or [marked]
    return first + neutralize_output("".join(rest))[0] if rest else marked


def neutralized_note(count: int) -> str:
    """The note saying how many lines of output were marked (`neutralize_output`)."""
    lines = "line" if count == 1 else "lines"
    return note(
        f"{count} {lines} of the command's output began like a shellrt note; "
        f"{'it is' if count == 1 else 'they are'} shown prefixed with {OUTPUT_MARK.strip()!r}."
    )


def untrusted_note(count: int, source: str) -> str:
    """The note saying how many lines of ``source`` (a web page, an MCP server's result: text
    that is no command's output but just as untrusted) were marked by `neutralize_output`."""
    lines = "line" if count == 1 else "lines"
    return note(
        f"{count} {lines} of {source} began like a shellrt note; "
        f"{'it is' if count == 1 else 'they are'} shown prefixed with {OUTPUT_MARK.strip()!r}."
    )


def reads_as_note(line: str) -> bool:
    """Whether a model could take ``line`` (its start) for one of shellrt's notes: as a terminal
    shows it (escapes unseen), or as a model reads it, an escape's ``ESC`` and kind only dropped
    (round 31: ``ESC[shellrt] …`` is a CSI ending in ``s`` to a terminal, ``[shellrt]`` to a model)."""
    if _reads_as_note(line):
        return True
    return "\x1b" in line and _reads_as_note(ESCAPE_INTRODUCER.sub("", line))




def _reads_as_note(line: str) -> bool:
    head = line[:_JUDGED_CHARS]
    if "\x1b" in head:
        head = ANSI.sub("", head)
    shown: bytes | str
    if head.isascii():
        shown = head.encode("ascii").translate(_LOWER_BYTES, _DROPPED_BYTES).lstrip(_DECORATION_BYTES)
        if shown.startswith(_OPENING_BYTES):
            return True
    else:
        opens = _may_open(head)
        if opens is False:
            return False
        shown = ""
        if opens:
            shown = unicodedata.normalize("NFKC", head).casefold().translate(_LOOKALIKES)
            shown = "".join(c for c in shown if unicodedata.category(c) not in _DROPPED).lstrip(_DECORATION)
            if shown.startswith(_FOLDED_OPENINGS):
                return True
    if len(line) <= _JUDGED_CHARS or (shown and not _opening_start(shown)):
        return False
    # The window showed nothing a reader sees, or only the start of an opening: what no one sees
    # (160 zero-width spaces, escapes or controls before `[shellrt]` or inside it) pushed the rest
    # out of it (round 31). Judged again on the line's visible start (at most the window long).
    return _reads_as_note(_visible_start(line))


def _opening_start(shown: bytes | str) -> bool:
    """Whether ``shown`` (a judged head) is the start of an opening that more letters might finish."""
    if isinstance(shown, bytes):
        return shown[:1] in b"[s" and any(o.startswith(shown) for o in _OPENING_BYTES)
    return shown[:1] in "[s" and any(o.startswith(shown) for o in _FOLDED_OPENINGS)


def _visible_start(line: str) -> str:
    """The first `_JUDGED_CHARS` characters of ``line`` a reader sees, leading markup left out."""
    text = ANSI.sub("", line) if "\x1b" in line else line
    if text.isascii():
        shown = text.encode("ascii").translate(None, _DROPPED_BYTES).lstrip(_DECORATION_BYTES)
        return shown[:_JUDGED_CHARS].decode("ascii")
    seen: list[str] = []
    for c in text:
        if c.isascii():
            if c <= " " or c == "\x7f" or (not seen and c in _DECORATION):
                continue
        elif _invisible(c):
            continue
        seen.append(c)
        if len(seen) >= _JUDGED_CHARS:
            break
    return "".join(seen)


def _may_open(head: str) -> bool | None:
    """Whether the first visible character of ``head`` can begin a note (cheap: most lines cannot);
    None when ``head`` shows none."""
    for c in head:
        if c.isascii():
            if " " < c < "\x7f" and c not in _DECORATION:
                return c in "[sS"
        elif not _invisible(c):
            return _may_begin(c)
    return None


@functools.lru_cache(maxsize=1024)
def _invisible(c: str) -> bool:
    return unicodedata.category(c) in _DROPPED


@functools.lru_cache(maxsize=1024)
def _may_begin(c: str) -> bool:
    """Whether a visible non-ASCII character folds to the first letter of a note's opening."""
    return unicodedata.normalize("NFKC", c).casefold().translate(_LOOKALIKES)[:1] in ("[", "s")


#: An OSC string (`ANSI` takes it to its terminator, BEL or ESC, or the text's end) with a line
#: break before any terminator.
_STRING_ACROSS_LINES = re.compile(f"\x1b\\][^\x07\x1b{re.escape(LINE_BREAKS)}]*[{re.escape(LINE_BREAKS)}]")


def _has_opening(text: str) -> bool:
    """Whether the ASCII letters of ``text``, folded as `reads_as_note` folds them, hold an opening."""
    folded = text.encode("ascii", "ignore").translate(_LOWER_BYTES, _DROPPED_BYTES)
    return b"shellrt" in folded or b"[output" in folded


def neutralize_output(text: str) -> tuple[str, int]:
    """``text`` (command output) with `OUTPUT_MARK` before each line that reads as a note; and how many."""
    escapes = "\x1b" in text
    # An unterminated OSC runs to the text's end here, over lines each judged alone below (round
    # 31: `ESC]0;x`, a line break, `[shellrt] …` hid the note from this look): then no shortcut.
    if not (escapes and _STRING_ACROSS_LINES.search(text)):
        probe = ANSI.sub("", text) if escapes else text
        # What `reads_as_note` judges of ASCII lines: the letters without escapes and controls, and
        # with them (`ESC[shellrt]`, as a model reads it).
        if probe.isascii() and not _has_opening(probe) and not (escapes and _has_opening(text)):
            return text, 0  # the usual case: nothing to judge line by line
    lines = text.splitlines(keepends=True)
    count = 0
    for index, line in enumerate(lines):
        if reads_as_note(line):
            lines[index] = OUTPUT_MARK + line
            count += 1
    return ("".join(lines), count) if count else (text, 0)


def cut_tail(text: str, start: int) -> str:
    """``text[start:]``; a partial first line that reads as a note is marked with ``…``."""
    tail = text[start:]
    return "…" + tail if starts_mid_line_as_note(text, start) else tail


#: The first line break of a text (any `str.splitlines` knows).
_BREAK = re.compile("[" + re.escape(LINE_BREAKS) + "]")


def starts_mid_line_as_note(text: str, start: int) -> bool:
    """Whether ``text[start:]`` (a cut's tail) begins inside a line with a partial line that reads
    as a note. Only a line break makes a line start: after a blank (``a [shellrt] …`` cut after
    ``a ``) the partial line was never judged on its own (round 31: the Bash cut took any blank)."""
    if start <= 0 or start >= len(text) or text[start - 1] in LINE_BREAKS:
        return False
    stop = _BREAK.search(text, start)
    return reads_as_note(text[start : stop.start() if stop else len(text)])
