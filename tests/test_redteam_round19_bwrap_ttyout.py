"""Red team, round 19 (bwrap): a sandboxed command typed into the operator's shell through its output.

No host terminal fd reaches a command (`test_redteam_round19_bwrap_terminal.py`), but ``shellrt
run`` relayed the command's bytes to the operator's terminal as they were. A terminal answers some
sequences by typing a reply into its own input -- the operator's shell once the command ends:
a title report (``CSI 21t``, after OSC 0 set the title to a command line), ``DECRQSS``, a status
report (``CSI 6n``), ``ENQ``'s answerback; OSC 52 writes the clipboard. Failed 1 of 1 before (every
sequence arrived raw). Now a terminal gets text, colours and cursor moves only
(`shellrt.cli._tty_filter`); a pipe still gets every byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shellrt.cli._tty_filter import TerminalFilter
from tests._bwrap_session import require_bwrap
from tests._mcp_support import ROOT, isolated_env
from tests._pty import read_terminal

#: printf format: hostile sequences between plain words, a colour, a C1 CSI in UTF-8, ENQ.
_PRINTF = (
    r"printf 'one\033]0;rm -rf ~\007two\033[21tthree\033P$q\"p\033\\four\033[6n\033[c\005"
    r"\033[31mred\033[0m\302\2336n caf\303\251\n'; printf 'err\033]52;c;cm0gLXJmIH4K\007ok\n' >&2"
)
_HOSTILE = (b"\x1b]", b"\x1bP", b"[21t", b"[6n", b"[c", b"\x05", b"\xc2\x9b")


def _cli(ws: Path, tmp_path: Path, *, terminal: bool) -> bytes:
    argv = [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--workspace", str(ws), "--", _PRINTF]
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, **isolated_env(home)}
    if not terminal:
        done = subprocess.run(argv, capture_output=True, cwd=ROOT, env=env, timeout=90, check=False)
        return done.stdout + done.stderr
    master, slave = os.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    return read_terminal(master, proc)


def test_a_terminal_gets_no_reply_query_or_control_string_of_the_command(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    shown = _cli(ws, tmp_path, terminal=True)
    assert not [h for h in _HOSTILE if h in shown], shown
    assert b"onetwothreefour" in shown and b"\x1b[31mred\x1b[0m" in shown, shown
    assert "café".encode() in shown and b"errok" in shown, shown
    # a pipe still gets every byte, as the command wrote it
    piped = _cli(ws, tmp_path, terminal=False)
    assert b"\x1b]0;rm -rf ~\x07" in piped and b"\x1b]52;c;" in piped and b"\x05" in piped, piped


def test_the_filter_decides_the_same_whatever_the_chunks() -> None:
    stream = (
        b"a\x1b]52;c;eA==\x07b\x1b[1;32mok\x1b[0m\x1b[?25l\x1b[?1000h\x1b[>0c\x1b[2 q\xc2\xa0"
        b"\xc2\x9d0;x\x1b\\c\x1b(0\x1b]unterminated\nnext\x1b[" + b"9" * 100 + b"m end\n"
    )
    whole = TerminalFilter().feed(stream)
    for size in (1, 2, 3, 7):
        f = TerminalFilter()
        assert b"".join(f.feed(stream[i : i + size]) for i in range(0, len(stream), size)) == whole
    assert whole == b"ab\x1b[1;32mok\x1b[0m\x1b[?25l\xc2\xa0c\x1b(0\nnext end\n", whole
