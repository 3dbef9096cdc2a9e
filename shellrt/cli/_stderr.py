"""The CLI's standard error, with control characters escaped on every text write.

Why a stream and not each message: the lines that reach the operator's terminal on stderr come
from many writers, and others choose their text. The CLI's own diagnostics (an exception's
message, a path the operator typed, an ``--workspace`` that is not a directory), argparse's usage
errors (``unrecognized arguments`` echoes the words raw), a traceback of an uncaught exception
(its message, the file names in it), ``warnings.warn`` text and ``SystemExit("…")`` all write
through ``sys.stderr``. Printed raw, an ESC in them sets the title, erases shellrt's own line or
writes the clipboard (OSC 52) with a command the operator then pastes (red team round 29; round
28's "Left"). Escaping at the stream covers every one of them, and the ones added later.

Bytes written to ``buffer`` (a command's own stderr, passed through `shellrt.cli._tty_filter`)
and the CLI's deliberate sequences (a status line's ``\\r ESC[K``, written to `unescaped`) are
not changed: only the writer that drew the line may erase it.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO, cast

from shellrt.protocol.control_escape import escape_controls

__all__ = ["EscapingStderr", "escape_controls", "escaping_stderr", "unescaped"]


class EscapingStderr:
    """A text stream that escapes what is written to it; everything else is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.unescaped = stream

    def write(self, text: str) -> int:
        self.unescaped.write(escape_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unescaped, name)  # buffer, fileno, flush, isatty, encoding…


def escaping_stderr() -> TextIO | None:
    """Put an `EscapingStderr` in place of ``sys.stderr``; the stream it replaced (None: it was one already)."""
    current = sys.stderr
    if current is None or isinstance(current, EscapingStderr):
        return None
    sys.stderr = cast(TextIO, EscapingStderr(current))
    return current


def unescaped(stream: TextIO) -> TextIO:
    """The stream under ``stream`` when it escapes, for a writer whose own control sequences are
    the point (a status line redrawn in place); else ``stream``."""
    return stream.unescaped if isinstance(stream, EscapingStderr) else stream
