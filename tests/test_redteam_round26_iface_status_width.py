"""Round 26, interfaces: ``shellrt run``'s status line wrapped on a line of wide letters.

The status line (drawn on a terminal after a second: elapsed, bytes, the command's last line) was
cut to the terminal's width in characters. CJK letters and most emoji take two columns each, so
the command's line of them took up to twice the width and wrapped; the redraw's ``\\r ESC[K``
erased only the last row, and every redraw left a copy of the command's text among its output.
It is now cut by the columns the terminal draws.
"""

from __future__ import annotations

import io
import unicodedata

import pytest

from shellrt.cli._status_line import StatusLine


def _columns(text: str) -> int:
    return sum(
        2 if unicodedata.east_asian_width(c) in ("W", "F") else 0 if unicodedata.combining(c) else 1 for c in text
    )


@pytest.mark.parametrize("last", ["全" * 60, "\U0001f600" * 60, "ab全" * 30, "e\u0301" * 60, "plain " * 20])
def test_the_status_line_fits_the_terminal_whatever_letters_the_command_prints(
    monkeypatch: pytest.MonkeyPatch, last: str
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    screen = io.StringIO()
    StatusLine(screen, enabled=True).update(3.0, 1000, [last])
    drawn = screen.getvalue()
    assert drawn.startswith("\r\x1b[K[shellrt]"), drawn
    line = drawn[len("\r\x1b[K") :]
    assert _columns(line) <= 39, (_columns(line), line)
    assert _columns(line) >= 37 or last.startswith("e"), line  # the room is used, not left empty
