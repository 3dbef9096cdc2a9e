"""Text renderings shared by the file tools: unified diffs for people, short snippets for the model,
and repository text marked so that it cannot pass for shellrt's own notes."""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable

from shellrt.protocol.notes import neutralize_output, untrusted_note
from shellrt.protocol.textchars import INLINE_BREAK_MARKS
from shellrt.supervisor.text import shown_name
from shellrt.tools._paths import shown_path
from shellrt.tools._people import for_people

__all__ = [
    "BREAKS_NOTE",
    "PEOPLE_LINES",
    "for_prompt",
    "marked_listing",
    "numbered_snippet",
    "one_line",
    "people_listing",
    "shown_file",
    "unified_diff",
]

_MAX_DIFF_LINES = 400
#: Characters of a Write's content (or an Edit's text) a permission prompt shows: its head and tail.
PROMPT_HEAD, PROMPT_TAIL = 8_000, 2_000


def for_prompt(text: str, mark: str = "+ ") -> str:
    """``text`` (a Write's content, an Edit's old or new text) for a permission prompt.

    The person approves what they read (round 17: a Write showed its file name only). A text too
    long for a prompt keeps its head and tail, and says how much of the middle is not shown and
    where the whole is (the escaping is the prompt's own, `shellrt.permissions.shown`).

    Every line of the text with anything visible on it starts with ``mark`` (round 23): the prompt's
    own lines between quoted texts (an Edit's ``with:``, the cut's note) are bare, so a line of
    the text cannot pass for one. Blank lines stay bare, so that runs of them are still named.
    """
    if len(text) <= PROMPT_HEAD + PROMPT_TAIL:
        return _marked(text, mark)
    hidden = len(text) - PROMPT_HEAD - PROMPT_TAIL
    return (
        f"{_marked(text[:PROMPT_HEAD], mark)}\n[{hidden:,} characters not shown here: see the whole input "
        f"(answer e on a terminal) before allowing]\n{_marked(text[-PROMPT_TAIL:], mark)}"
    )


def _marked(text: str, mark: str) -> str:
    """``mark`` before each line of ``text`` that is not blank (lines as a prompt breaks them: at ``\\n``;
    every other separator is shown escaped)."""
    return "\n".join(mark + line if line.strip() else line for line in text.split("\n"))


def _display_lines(text: str) -> list[str]:
    return [line.rstrip("\r\n") for line in text.splitlines()]


#: The line breaks other than ``\n`` that Python's ``splitlines`` (and a model reading a result)
#: knows, and the visible mark shown for each inside one numbered line of a file (red team round
#: 23). Lines are numbered at ``\n``; after such a break the file itself wrote the start of the next
#: line of the result: a forged ``    12\t...`` line or ``auth.py:3:...`` hit.
_INLINE_BREAKS = INLINE_BREAK_MARKS
_BREAK_TABLE = str.maketrans(_INLINE_BREAKS)
_BREAK = re.compile("[" + "".join(_INLINE_BREAKS) + "]")
#: What a result says when `one_line` marked a line (the count goes before it).
BREAKS_NOTE = (
    "held a line break other than \\n (\\r, \\f, U+2028 ...), shown as a mark (\u240d for \\r, "
    "\u27e8U+2028\u27e9 ...) so that each line stays one line. Edit's old_string needs the real character; "
    "Bash (`cat -A`, `sed`) shows and changes such lines."
)


def one_line(text: str) -> tuple[str, bool]:
    """``text`` (one line of a file, split at ``\\n``) with each other line break shown as a visible
    mark, so that it cannot start a line of the result; and whether it held one."""
    if _BREAK.search(text) is None:
        return text, False
    return text.translate(_BREAK_TABLE), True


#: Lines difflib may compare (old times new, of the changed middle): its matcher is quadratic, and
#: worse for lines that repeat. A `replace_all` on every other line of a 10,000-line file held a
#: core for 52 s after the write (red team, round 14); 700 x 700 lines take about 0.2 s.
_MAX_MATCHED_PAIRS = 500_000
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@$")


def unified_diff(
    old: str, new: str, path: str, *, context: int = 3, max_lines: int | None = _MAX_DIFF_LINES
) -> str:
    """A unified diff of ``old`` -> ``new`` (line endings hidden), capped for display (for people:
    names and lines `isolated`).

    Bounded in time whatever the texts: the common head and tail are set aside, and the middle
    goes to difflib only while it is small; a larger one is paired line by line (`_paired`), still
    a diff that applies, not always the shortest one.
    """
    a, b = _display_lines(old), _display_lines(new)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo = max(0, head - context)
    a_end, b_end = len(a) - max(0, tail - context), len(b) - max(0, tail - context)
    # For people (round 26): the names on their own lines (a canonical path's words are the
    # disk's: `shown_path`), each name and line laid out on its own among right-to-left letters.
    names = (for_people(shown_path(f"a/{path.lstrip('/')}")), for_people(shown_path(f"b/{path.lstrip('/')}")))
    if (a_end - lo) * (b_end - lo) <= _MAX_MATCHED_PAIRS:
        found = difflib.unified_diff(a[lo:a_end], b[lo:b_end], *names, n=context, lineterm="")
        lines = [_shifted(line, lo) for line in found]
    else:
        lines = _paired(a, b, head, tail, context, names)
    # The two header lines hold names escaped already; every other line is escaped, a text line
    # that starts ``--- `` or ``+++ `` (a removed ``-- `` comment) included (round 39, review6).
    headers = (f"--- {names[0]}", f"+++ {names[1]}")
    lines = [line if line in headers else _isolated_line(line) for line in lines]
    if max_lines is not None and len(lines) > max_lines:
        lines = [*lines[:max_lines], f"… [{len(lines) - max_lines} more diff lines]"]
    return "\n".join(lines)


def _isolated_line(line: str) -> str:
    """A diff's text line with its text (after the ``+``/``-``/space mark) `isolated`: a line
    opening with a right-to-left letter would be laid out right to left, its mark on the right."""
    if line[:1] in ("+", "-", " "):
        return line[0] + for_people(line[1:])
    return line


def _shifted(line: str, by: int) -> str:
    """A hunk header of a diff of a slice starting at line ``by``, numbered for the whole text."""
    match = _HUNK.match(line) if by and line.startswith("@@") else None
    if match is None:
        return line
    old_at, old_len, new_at, new_len = match.groups()
    return f"@@ -{int(old_at) + by}{old_len or ''} +{int(new_at) + by}{new_len or ''} @@"


def _paired(
    a: list[str], b: list[str], head: int, tail: int, context: int, names: tuple[str, str]
) -> list[str]:
    """A diff without matching: the middles' lines paired in order (same count: each differing
    run becomes a hunk; otherwise one hunk replaces the whole middle). Linear in the texts."""
    a_mid, b_mid = len(a) - head - tail, len(b) - head - tail
    if a_mid == b_mid:
        runs: list[tuple[int, int]] = []
        i = head
        while i < head + a_mid:
            if a[i] != b[i]:
                start = i
                while i < head + a_mid and a[i] != b[i]:
                    i += 1
                runs.append((start, i))
            else:
                i += 1
    else:
        runs = [(head, -1)]  # one run: a[head:len(a)-tail] -> b[head:len(b)-tail]
    out = [f"--- {names[0]}", f"+++ {names[1]}"]
    groups: list[list[tuple[int, int]]] = []
    for run in runs:
        if groups and run[1] != -1 and run[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(run)
        else:
            groups.append([run])
    for group in groups:
        first, last = group[0][0], group[-1][1]
        a_stop, b_stop = (len(a) - tail, len(b) - tail) if last == -1 else (last, last)
        start = max(0, first - context)
        a_hi, b_hi = min(len(a), a_stop + context), min(len(b), b_stop + context)
        body: list[str] = [" " + line for line in a[start:first]]
        for k, (s, e) in enumerate(group):
            if k:
                body += [" " + line for line in a[group[k - 1][1] : s]]
            a_e, b_e = (a_stop, b_stop) if e == -1 else (e, e)
            body += ["-" + line for line in a[s:a_e]]
            body += ["+" + line for line in b[s:b_e]]
        body += [" " + line for line in a[a_stop:a_hi]]
        out.append(f"@@ -{_range(start, a_hi - start)} +{_range(start, b_hi - start)} @@")
        out += body
    return out


def _range(start: int, length: int) -> str:
    """A hunk's range as unified diff writes it (1-based; an empty range names the line before)."""
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def numbered_snippet(
    text: str, char_index: int, span_chars: int, *, context: int = 3, max_lines: int = 16
) -> str:
    """``cat -n`` lines around ``text[char_index : char_index + span_chars]``, numbered as Read
    numbers them: at ``\\n`` (a CRLF's ``\\r`` dropped), other breaks shown by `one_line`."""
    first = text.count("\n", 0, char_index)
    last = first + text.count("\n", char_index, char_index + max(span_chars, 0))
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()
    lo = max(0, first - context)
    hi = min(len(lines), last + context + 1, lo + max_lines)
    return "\n".join(f"{n + 1:>6}\t{one_line(lines[n].removesuffix(chr(13)))[0]}" for n in range(lo, hi))


def marked_listing(text: str, notes: list[str], source: str) -> str:
    """``text`` (file names, matched lines: the repository's words), then ``notes`` (shellrt's own).

    A line of ``text`` that reads like one of shellrt's notes (at any line break Python knows:
    a matched line may hold ``\\r`` or U+2028) is marked as command output is, and a last note
    counts them.
    """
    body, count = neutralize_output(text)
    if count:
        notes = [*notes, untrusted_note(count, source)]
    return "\n".join([body, *notes]) if notes else body


#: Lines of a listing shown to people (the model's result holds them all; the transcript keeps both).
PEOPLE_LINES = 250


def people_listing(head: str, lines: Iterable[str]) -> str:
    """``head``, then at most `PEOPLE_LINES` of ``lines`` (already `isolated`) and a line when more:
    the face people read, bounded whatever the model asked for (``limit``, ``head_limit=0``)."""
    shown = list(itertools.islice(lines, PEOPLE_LINES + 1))
    more = ""
    if len(shown) > PEOPLE_LINES:
        shown.pop()
        more = "... (more not shown here; the model's result lists up to the tool's limit)"
    return "\n".join([head, *shown, *([more] if more else [])])


def shown_file(path: str) -> str:
    """A file name in a listing: `shown_path`, or bash's ``$'...'`` when the name holds bytes that
    are not UTF-8 (`shellrt.supervisor.text.shown_name`): lone surrogates made the whole result
    unsendable (red team round 13)."""
    return shown_name(path) or shown_path(path)
