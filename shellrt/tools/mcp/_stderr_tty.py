"""An MCP server's stderr shown on ours, with its control characters escaped.

Why: with no session log directory a stdio server's stderr was shellrt's own fd 2, so the
server's bytes (or a package's it runs, or a tool input it echoes) reached the operator's terminal
raw: OSC 52 wrote the clipboard, ``ESC[2K`` and ``\\r`` erased shellrt's own line, U+009B and
U+202E hid what followed (red team round 30, mend; round 29's `shellrt.cli._stderr` escapes text
written through ``sys.stderr`` only). The server now writes to a pipe; a thread decodes it (UTF-8,
a character split across reads kept whole, bad bytes replaced) and writes it escaped as the CLI's
own lines are (`escape_controls`) to ``sys.stderr`` as it is at each write. A thread, as for the
log (`_stderr_log`): it needs no event loop and ends when every holder of the write end is gone.

Round 31 (mend): a server that flooded its stderr held the terminal and buried shellrt's own lines,
and its lines did not say whose they were. Each line now starts with ``[mcp NAME]`` (the configured
name, escaped), is cut at `LINE_CAP` characters (the rest counted, never held), and passes a token
bucket (`LINES_PER_SECOND`, `LINES_BURST`); lines past it are dropped and counted, and the count is
shown as one line when the bucket allows again, when the server is quiet for a second, or at its end.
"""

from __future__ import annotations

import codecs
import os
import select
import sys
import threading
from typing import TextIO

from shellrt.protocol.control_escape import escape_controls
from shellrt.tools.mcp._token_bucket import TokenBucket

__all__ = ["LINES_BURST", "LINES_PER_SECOND", "LINE_CAP", "EscapedStderr"]

_CHUNK = 64 * 1024
#: Characters of one line shown; the rest is counted.
LINE_CAP = 2000
#: Lines shown per second, steady, and at most at once.
LINES_PER_SECOND = 20.0
LINES_BURST = 100
#: Characters of the server's name shown in each line's prefix.
_NAME_CAP = 64
#: Milliseconds of quiet after which a pending "lines dropped" count is shown.
_QUIET_MS = 1000


class EscapedStderr:
    """A pipe whose data a thread writes escaped to ``sys.stderr``; ``writer`` is its write end for
    the server (the caller closes it when the connection's generation ends)."""

    def __init__(self, name: str) -> None:
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        self._read_fd = read_fd
        self._lines = _Lines(name)
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._thread = threading.Thread(target=self._copy, name=f"mcp-stderr-{name[:_NAME_CAP]}", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        poller = select.poll()
        poller.register(self._read_fd, select.POLLIN)
        try:
            while True:
                if not poller.poll(_QUIET_MS):
                    _show(self._lines.quiet())
                    continue
                chunk = os.read(self._read_fd, _CHUNK)
                if not chunk:
                    break
                _show(self._lines.feed(decoder.decode(chunk)))
            _show(self._lines.feed(decoder.decode(b"", final=True)) + self._lines.finish())
        except OSError:
            pass
        finally:
            os.close(self._read_fd)


class _Lines:
    """The server's text cut into shown lines: prefixed, escaped, capped and rate-limited."""

    def __init__(self, name: str) -> None:
        shown = escape_controls(name[:_NAME_CAP]).replace("\n", "\\x0a").replace("\t", "\\x09")
        self._prefix = f"[mcp {shown}] "
        self._bucket = TokenBucket(LINES_PER_SECOND, LINES_BURST)
        self._pending = ""
        self._cut = 0
        self._dropped = 0

    def feed(self, text: str) -> str:
        """What to show for ``text``: each line it completes (the last part waits for its end)."""
        out: list[str] = []
        for i, part in enumerate(text.split("\n")):
            if i:
                out.append(self._line())
            room = max(LINE_CAP - len(self._pending), 0)
            self._pending += part[:room]
            self._cut += len(part) - len(part[:room])
        return "".join(out)

    def quiet(self) -> str:
        """The dropped count, when the bucket allows it (the server has been quiet)."""
        return self._summary() if self._dropped and self._bucket.take() else ""

    def finish(self) -> str:
        """The last line (no newline at the end) and the dropped count, at the server's end."""
        last = self._line() if self._pending or self._cut else ""
        return last + (self._summary() if self._dropped else "")

    def _line(self) -> str:
        line, cut = self._pending, self._cut
        self._pending, self._cut = "", 0
        if not self._bucket.take():
            self._dropped += 1
            return ""
        summary = self._summary() if self._dropped else ""
        tail = f" [{cut} more characters not shown]" if cut else ""
        return f"{summary}{self._prefix}{escape_controls(line)}{tail}\n"

    def _summary(self) -> str:
        dropped, self._dropped = self._dropped, 0
        return f"{self._prefix}[{dropped} lines dropped: the server writes to stderr faster than shown]\n"


def _show(text: str) -> None:
    """``text`` (escaped by `_Lines`) on this process's stderr; dropped when there is none (never raises)."""
    stream = sys.stderr
    if not text or stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass  # a closed or broken stderr: the server's text is drained and dropped
