"""Red team round 10 (interfaces): the live status line wrote a command's output raw to the terminal.

``shellrt run`` draws ``[shellrt] 3s 1.2 kB <last output line>`` on stderr whenever stderr is a
terminal, also when the command's output goes to a file (``shellrt run -- cmd > out.txt``). The
last line was only whitespace-collapsed: an escape sequence in it reached the operator's terminal,
which the redirect was meant to keep from it: OSC 52 writes the clipboard, OSC 0 the window
title, ``ESC[2K`` erases lines. It goes through `for_person` now, like every other text shellrt
shows a person. End to end: real ``shellrt run`` with stderr on a pseudo-terminal.
"""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from shellrt.cli._status_line import StatusLine
from tests._mcp_support import ROOT

CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"
TITLE = "\x1b]0;owned\x07"


def test_the_status_line_escapes_the_last_line() -> None:
    out = io.StringIO()
    status = StatusLine(out, enabled=True)
    status.update(5.0, 100, [f"building {CLIPBOARD}{TITLE}\x1b[2Kdone"])
    drawn = out.getvalue()
    assert drawn.startswith("\r\x1b[K")  # its own erase, and nothing else of the kind
    assert "\x1b" not in drawn[len("\r\x1b[K") :], repr(drawn)
    assert "\\x1b]52;c;cHduZWQ=" in drawn


def test_a_redirected_command_cannot_write_the_operators_clipboard(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = "printf '\\033]52;c;cHduZWQ=\\007'; sleep 2.5"  # then quiet while the status line draws
    master, slave = pty.openpty()
    env = {**os.environ, "SHELLRT_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    with open(tmp_path / "out.txt", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(ws), "--", script],
            stdout=out,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(60) == 0
    assert (tmp_path / "out.txt").read_bytes() == CLIPBOARD.encode()  # the file has it, as asked
    assert b"[shellrt]" in seen, bytes(seen)  # the status line was drawn
    assert b"\x1b]52" not in seen, bytes(seen)
