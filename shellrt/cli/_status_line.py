"""A live one-line status (elapsed, bytes, last line) for long commands on a terminal.

Drawn on stderr only when stderr is a TTY and the command has run for a
moment; erased before any output chunk is written so it never mixes with the
command's own output, and erased for good at the end. When piped, it prints
nothing at all. The last line is the command's text and is escaped (`for_person`).
"""

from __future__ import annotations

import shutil
from typing import TextIO

__all__ = ["StatusLine", "format_bytes"]

#: Don't draw for commands that finish quickly.
SHOW_AFTER_S = 1.0


def format_bytes(count: int) -> str:
    """Bytes in a short human form (``0 B``, ``12.3 kB``, ``4.5 MB``)."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def _fit(text: str, columns: int) -> str:
    """The longest start of ``text`` a terminal draws in ``columns`` columns.

    Why (red team round 26): cut by characters, a line of wide letters (CJK, most emoji: two
    columns each) took up to twice the width and wrapped; ``\r ESC[K`` then erased only its last
    row, so every redraw left a copy of the command's text among its output on the screen."""
    if text.isascii():
        return text[:columns]
    import unicodedata  # here: `shellrt run`'s start-up stays lean (tests/test_cli_imports.py)

    used = 0
    for index, char in enumerate(text):
        wide = 2 if unicodedata.east_asian_width(char) in ("W", "F") else 0 if unicodedata.combining(char) else 1
        if used + wide > columns:
            return text[:index]
        used += wide
    return text


class StatusLine:
    """Renders progress on one terminal line; a no-op when ``stream`` is not a TTY."""

    def __init__(self, stream: TextIO, *, enabled: bool | None = None) -> None:
        from shellrt.cli._stderr import unescaped  # loaded by `main` already

        self.stream = unescaped(stream)  # its own \r ESC[K redraw the line; its text is escaped
        self.enabled = stream.isatty() if enabled is None else enabled
        self._shown = False

    def render(self, elapsed_s: float, total_bytes: int, last_line: str) -> str:
        """The text of the line, cut to the terminal width."""
        width = shutil.get_terminal_size((80, 24)).columns
        head = f"[shellrt] {elapsed_s:5.0f}s  {format_bytes(total_bytes):>9}"
        # The command's text: escaped, or its escapes would reach the operator's terminal even when
        # its output goes to a file (OSC 52 writes the clipboard; red team round 10). Imported here:
        # the line is drawn after a second, and `shellrt run`'s start-up stays lean.
        from shellrt.permissions.shown import for_person

        last = for_person(" ".join(last_line.split()), one_line=True)
        text = f"{head}  {last}" if last else head
        return _fit(text, max(10, width - 1))

    def update(self, elapsed_s: float, total_bytes: int, last_lines: tuple[str, ...] | list[str]) -> None:
        """Redraw the line (after `SHOW_AFTER_S`)."""
        if not self.enabled or elapsed_s < SHOW_AFTER_S:
            return
        last = next((line for line in reversed(last_lines) if line.strip()), "")
        self.stream.write("\r\x1b[K" + self.render(elapsed_s, total_bytes, last))
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the line if it is on screen (call before writing output)."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
