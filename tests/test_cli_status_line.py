"""`shellrt run` shows a live status line on a terminal, and nothing extra when piped."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

from shellrt.cli._status_line import StatusLine, format_bytes

SLOW = "for i in 1 2 3 4; do echo step$i; sleep 0.6; done"


def test_format_bytes() -> None:
    assert format_bytes(0) == "0 B"
    assert format_bytes(12_300) == "12.3 kB"
    assert format_bytes(4_500_000) == "4.5 MB"


def test_status_line_is_silent_when_not_a_tty(tmp_path: Path) -> None:
    with open(tmp_path / "err.txt", "w") as fh:
        line = StatusLine(fh)
        line.update(5.0, 100, ("hello",))
        line.clear()
    assert (tmp_path / "err.txt").read_text() == ""


def test_run_on_a_terminal_draws_status(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(tmp_path), "--", SLOW],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        close_fds=True,
    )
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(10) == 0
    os.close(controller)
    text = seen.decode(errors="replace")
    assert "step1" in text and "step4" in text
    assert "[shellrt]" in text and "\x1b[K" in text


def test_run_piped_has_no_status(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(tmp_path), "--", SLOW],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stdout.decode().split() == ["step1", "step2", "step3", "step4"]
    assert b"[shellrt]" not in done.stderr and b"\x1b" not in done.stderr
