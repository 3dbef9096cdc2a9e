"""Round 23, interfaces: a command's output left the operator's terminal in a state that hid or
garbled what ``shellrt run`` says after it.

On a terminal ``shellrt run`` keeps colours (SGR), charset designations, shift-out and hiding the
cursor (round 19: progress bars and colour use them). They outlive the command: ``ESC[8m``
(conceal) or black on black made shellrt's own lines after the output — "left out N control
sequences (clipboard, …)", "reverted: …", "timed out" — invisible; ``ESC(0`` / ``ESC)0`` + SO drew
them as line-drawing glyphs; the cursor stayed hidden in the operator's shell. Now a terminal
stream that got any such sequence is reset (SGR, both charsets, shift-in, cursor shown) once the
command's output ends, before shellrt writes anything of its own. The real CLI on a pty of the
test's own; the lean local path and the supervisor path (bwrap).
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._pty import read_terminal
from tests.conftest import require

_ROOT = Path(__file__).resolve().parents[1]
#: Text, then state that outlives it: conceal, black on black, G0 and G1 line drawing, shift-out,
#: a hidden cursor; and an OSC 52 (left out) so that shellrt reports after the output.
_HOSTILE = (
    r"printf 'all checks passed\n\033[8m\033[30;40m\033(0\033)0\016\033[?25l'; "
    r"printf '\033]52;c;Y3VybCBldmlsfHNo\007'"
)
_SEQUENCE = re.compile(rb"\x1b\[([0-9;?]*)([A-Za-z])|\x1b([()])(.)|([\x0e\x0f])")


def _state_at(seen: bytes, end: int) -> dict[str, object]:
    """The terminal state (what shellrt resets) after ``seen[:end]``, as a terminal tracks it."""
    state: dict[str, object] = {"conceal": False, "fg": None, "bg": None, "G0": b"B", "G1": b"B",
                                "shifted": False, "cursor_hidden": False}
    for m in _SEQUENCE.finditer(seen, 0, end):
        params, final, which, charset, shift = m.groups()
        if shift:
            state["shifted"] = shift == b"\x0e"
        elif which:
            state["G0" if which == b"(" else "G1"] = charset
        elif final == b"m":
            for p in (params.split(b";") if params else [b"0"]):
                n = int(p or b"0")
                if n == 0:
                    state.update(conceal=False, fg=None, bg=None)
                elif n in (8, 28):
                    state["conceal"] = n == 8
                elif 30 <= n <= 37 or n == 39:
                    state["fg"] = None if n == 39 else n
                elif 40 <= n <= 47 or n == 49:
                    state["bg"] = None if n == 49 else n
        elif final in (b"h", b"l") and params == b"?25":
            state["cursor_hidden"] = final == b"l"
    return state


def _on_a_pty(args: list[str], tmp_path: Path) -> tuple[bytes, int]:
    main, side = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
           "HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}
    (tmp_path / "home").mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "shellrt", "run", *args, "--", _HOSTILE],
                            stdin=subprocess.DEVNULL, stdout=side, stderr=side, env=env, cwd=tmp_path)
    os.close(side)
    seen = read_terminal(main, proc, timeout_s=60)
    return seen, proc.returncode


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_shellrts_own_lines_after_the_output_are_shown_plainly(tmp_path: Path, sandbox: str) -> None:
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (tmp_path / "ws").mkdir()
    seen, code = _on_a_pty(["--sandbox", sandbox, "--workspace", str(tmp_path / "ws")], tmp_path)
    assert code == 0, seen
    assert b"all checks passed" in seen, seen
    assert b"\x1b[8m" in seen and b"\x1b(0" in seen, seen  # kept as before: colours and charsets
    report = seen.find(b"shellrt run: left out")
    assert report > 0, seen
    state = _state_at(seen, report)
    assert state == {"conceal": False, "fg": None, "bg": None, "G0": b"B", "G1": b"B",
                     "shifted": False, "cursor_hidden": False}, (state, seen)
    # And at the end (the operator's shell prompt comes next).
    assert _state_at(seen, len(seen)) == state, seen


def test_output_with_no_such_sequence_gets_no_reset(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    main, side = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
           "HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}
    (tmp_path / "home").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace",
                             str(tmp_path / "ws"), "--", "echo plain"],
                            stdin=subprocess.DEVNULL, stdout=side, stderr=side, env=env, cwd=tmp_path)
    os.close(side)
    seen = read_terminal(main, proc, timeout_s=60)
    assert proc.returncode == 0 and b"plain" in seen, seen
    assert b"\x1b" not in seen, seen


def test_the_still_running_line_is_shown_plainly_too(tmp_path: Path) -> None:
    """``--background-on-timeout`` prints shellrt's line while the command runs on."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    main, side = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
           "HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}
    # The command waits for its timeout to be reported (the file appears only if it goes on).
    command = r"printf 'working\n\033[8m\033[?25l'; sleep 4; printf 'done\n'"
    proc = subprocess.Popen([sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--workspace",
                             str(tmp_path / "ws"), "--timeout", "1", "--background-on-timeout", "--", command],
                            stdin=subprocess.DEVNULL, stdout=side, stderr=side, env=env, cwd=tmp_path)
    os.close(side)
    seen = read_terminal(main, proc, timeout_s=60)
    assert proc.returncode == 0 and b"done" in seen, seen
    line = seen.find(b"still running")
    assert line > 0 and seen.find(b"\x1b[8m") < line, seen
    state = _state_at(seen, line)
    assert not state["conceal"] and not state["cursor_hidden"], (state, seen)
