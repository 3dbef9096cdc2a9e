"""Red team round 55 (iface8): a command run by ``shellrt run`` must not erase the operator's scrollback.

On a terminal, ``shellrt run`` keeps colours, cursor moves and erases (progress bars redraw with
them) and leaves out every other sequence (round 19). Erase in display was kept whatever its
parameter: ``ESC[3J`` (xterm's extension, understood by VTE, iTerm2, kitty, tmux, Windows
Terminal) deletes the terminal's whole scrollback, everything the operator's session printed
before the command (earlier runs, their "left out" and "reverted" lines), beyond the screen a
progress bar redraws. Now only erases of the screen (``J`` with no parameter, 0, 1 or 2) are
kept; the rest is left out and counted.

The real CLI with its stdout on a pty of the test's own (nothing reaches a real terminal), the
lean local path; and the filter itself fed the sequence split across chunks.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.cli._tty_filter import TerminalFilter
from tests._pty import read_terminal

_ROOT = Path(__file__).resolve().parents[1]
_HOSTILE = r"printf 'one\033[3Jtwo\033[2Jthree\033[3;1Jfour\033[1;3Jfive\033[Jsix\n'"


def test_run_leaves_out_the_scrollback_erase(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    main, side = pty.openpty()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(tmp_path / "ws"),
         "--", _HOSTILE],
        stdin=subprocess.DEVNULL, stdout=side, stderr=side, env=env, cwd=tmp_path,
    )
    os.close(side)
    seen = read_terminal(main, proc, timeout_s=60)
    assert proc.returncode == 0, seen
    assert b"\x1b[3J" not in seen and b"\x1b[3;1J" not in seen and b"\x1b[1;3J" not in seen, seen
    assert b"one" in seen and b"two\x1b[2Jthree" in seen and b"five\x1b[Jsix" in seen, seen
    assert b"left out" in seen, seen


@pytest.mark.parametrize("cut", range(1, 6))
def test_the_filter_judges_a_split_erase_whole(cut: int) -> None:
    data = b"a\x1b[3Jb\x1b[2Jc"
    screen = TerminalFilter()
    out = screen.feed(data[:cut]) + screen.feed(data[cut:])
    assert out == b"ab\x1b[2Jc" and screen.dropped == 1, (out, screen.dropped)
