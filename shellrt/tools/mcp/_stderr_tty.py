"""An MCP server's stderr shown on ours, with its control characters escaped.

Why: with no session log directory a stdio server's stderr was shellrt's own fd 2, so the
server's bytes (or a package's it runs, or a tool input it echoes) reached the operator's terminal
raw: OSC 52 wrote the clipboard, ``ESC[2K`` and ``\\r`` erased shellrt's own line, U+009B and
U+202E hid what followed (red team round 30, mend; round 29's `shellrt.cli._stderr` escapes text
written through ``sys.stderr`` only). The server now writes to a pipe; a thread decodes it (UTF-8,
a character split across reads kept whole, bad bytes replaced) and writes it escaped as the CLI's
own lines are (`escape_controls`) to ``sys.stderr`` as it is at each write. A thread, as for the
log (`_stderr_log`): it needs no event loop and ends when every holder of the write end is gone.
"""

from __future__ import annotations

import codecs
import os
import sys
import threading
from typing import TextIO

from shellrt.protocol.control_escape import escape_controls

__all__ = ["EscapedStderr"]

_CHUNK = 64 * 1024


class EscapedStderr:
    """A pipe whose data a thread writes escaped to ``sys.stderr``; ``writer`` is its write end for
    the server (the caller closes it when the connection's generation ends)."""

    def __init__(self, name: str) -> None:
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        self._read_fd = read_fd
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._thread = threading.Thread(target=self._copy, name=f"mcp-stderr-{name}", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while chunk := os.read(self._read_fd, _CHUNK):
                _show(decoder.decode(chunk))
            _show(decoder.decode(b"", final=True))
        except OSError:
            pass
        finally:
            os.close(self._read_fd)


def _show(text: str) -> None:
    """``text`` escaped on this process's stderr; dropped when there is none (never raises)."""
    stream = sys.stderr
    if not text or stream is None:
        return
    try:
        stream.write(escape_controls(text))
        stream.flush()
    except (OSError, ValueError):
        pass  # a closed or broken stderr: the server's text is drained and dropped
