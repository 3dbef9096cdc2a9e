"""Red team round 29 (iface): nothing the CLI writes to standard error carries a raw control character.

Round 28 escaped the CLI's log lines and review commands, and left the rest: argparse echoed an
unrecognized word raw, ``--workspace DIR`` that is not a directory was named raw, and a traceback
of an uncaught exception and a ``warnings.warn`` line were printed as they were. A name with
OSC 52 (write the clipboard), ``ESC[2K`` and a carriage return (erase the line shellrt printed)
then acted on the operator's terminal. Each case runs the real CLI in a child process (the
program's own entry, so Python's last words, the traceback, go through what ``main`` set up).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: Clipboard write, erase-line, carriage return, a C1 CSI and a right-to-left override.
_EVIL = "x\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2K\r\u009b2J\u202e"

_RAISING = f"""
import sys, warnings
import shellrt.cli.classify as classify

def boom(args):
    warnings.warn("warned " + {_EVIL!r})
    raise RuntimeError("raised " + {_EVIL!r})

classify.run = boom
from shellrt.cli import main
sys.argv = ["shellrt", "classify", "ls"]
sys.exit(main())
"""


def _cli(args: list[str], cwd: Path) -> tuple[int, str]:
    """Exit status and standard error, decoded as written (no newline translation: a CR stays one)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HOME": str(cwd)}
    done = subprocess.run([sys.executable, *args], capture_output=True, cwd=cwd, env=env, timeout=120)
    return done.returncode, done.stderr.decode("utf-8", "replace")


def _raw(stderr: str) -> list[str]:
    return [raw for raw in ("\x1b", "\r", "\u009b", "\u202e", "\x07") if raw in stderr]


def test_usage_errors_tracebacks_and_warnings_are_escaped(tmp_path: Path) -> None:
    missing = tmp_path / f"ws{_EVIL}"
    # 1. A --workspace that is not a directory: named, escaped (SystemExit's message).
    status, workspace = _cli(
        ["-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(missing), "--", "true"], tmp_path
    )
    assert status != 0 and "is not a directory" in workspace, workspace
    # 2. argparse's "unrecognized arguments" echoes the word the operator (or a script) passed.
    status, usage = _cli(["-m", "shellrt", "sessions", "ls", f"--{_EVIL}"], tmp_path)
    assert status == 2 and "unrecognized arguments" in usage, usage
    # 3. An uncaught exception's traceback and a warning, from the program's own entry.
    status, crash = _cli(["-c", _RAISING], tmp_path)
    assert status == 1 and "Traceback" in crash, crash
    raw = {name: _raw(text) for name, text in (("workspace", workspace), ("usage", usage), ("crash", crash))}
    assert raw == {"workspace": [], "usage": [], "crash": []}, (raw, workspace, usage, crash)
    # Shown, as escapes, not dropped.
    assert "\\x1b]52;c;cm0g" in workspace and "\\x0d\\x9b2J\\u202e" in usage, (workspace, usage)
    assert "RuntimeError: raised x\\x1b]52" in crash and "UserWarning: warned x\\x1b]52" in crash, crash
