"""Text renderings shared by the file tools: unified diffs for people, short snippets for the model,
and repository text marked so that it cannot pass for shellrt's own notes."""

from __future__ import annotations

import difflib

from shellrt.protocol.notes import neutralize_output, untrusted_note
from shellrt.supervisor.text import shown_name
from shellrt.tools._paths import shown_path

__all__ = ["marked_listing", "numbered_snippet", "shown_file", "unified_diff"]

_MAX_DIFF_LINES = 400


def _display_lines(text: str) -> list[str]:
    return [line.rstrip("\r\n") for line in text.splitlines()]


def unified_diff(old: str, new: str, path: str, *, context: int = 3) -> str:
    """A unified diff of ``old`` -> ``new`` (line endings hidden), capped for display."""
    lines = list(
        difflib.unified_diff(
            _display_lines(old),
            _display_lines(new),
            f"a/{path.lstrip('/')}",
            f"b/{path.lstrip('/')}",
            n=context,
            lineterm="",
        )
    )
    if len(lines) > _MAX_DIFF_LINES:
        lines = [*lines[:_MAX_DIFF_LINES], f"… [{len(lines) - _MAX_DIFF_LINES} more diff lines]"]
    return "\n".join(lines)


def numbered_snippet(
    text: str, char_index: int, span_chars: int, *, context: int = 3, max_lines: int = 16
) -> str:
    """``cat -n`` lines around ``text[char_index : char_index + span_chars]``."""
    first = text.count("\n", 0, char_index)
    last = first + text.count("\n", char_index, char_index + max(span_chars, 0))
    lines = _display_lines(text) or [""]
    lo = max(0, first - context)
    hi = min(len(lines), last + context + 1, lo + max_lines)
    return "\n".join(f"{n + 1:>6}\t{lines[n]}" for n in range(lo, hi))


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


def shown_file(path: str) -> str:
    """A file name in a listing: `shown_path`, or bash's ``$'...'`` when the name holds bytes that
    are not UTF-8 (`shellrt.supervisor.text.shown_name`): lone surrogates made the whole result
    unsendable (red team round 13)."""
    return shown_name(path) or shown_path(path)
