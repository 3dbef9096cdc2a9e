"""Red team round 55 (iface8): a planted session must neither reach the operator's terminal raw
nor stop `shellrt sessions` from listing and removing the others.

The state directory is the caller's: any process of the same user writes there, a command on the
local backend among them (bwrap and docker mask it). `shellrt sessions show` escaped what a
transcript holds (round 16), but ``ls`` printed each session directory's name raw (an OSC 0 in
it set the terminal's title, an OSC 52 its clipboard), and ``rm`` its path; a transcript that is
not UTF-8 made ``ls`` die with a traceback, listing nothing.

Real ``shellrt sessions`` processes over a state directory made here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: An OSC 0 (set the title) in a directory name: a name any same-user process may choose.
PLANTED = "shellrt-r55-iface8-\x1b]0;owned\x07x"


def _state(tmp_path: Path) -> Path:
    sessions = tmp_path / "state" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / PLANTED).mkdir()
    (sessions / PLANTED / "state.json").write_text("{}")
    (sessions / "plain").mkdir()
    (sessions / "plain" / "transcript.jsonl").write_bytes(b'\xff\xfe{"type": "call"}\n')
    return sessions


def _sessions(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "SHELLRT_HOME": str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "sessions", *args], capture_output=True, env=env, timeout=60, cwd=ROOT
    )


def test_ls_lists_every_session_escaped(tmp_path: Path) -> None:
    _state(tmp_path)
    done = _sessions(tmp_path, "ls")
    assert done.returncode == 0, done.stderr[-600:]
    assert b"\x1b" not in done.stdout and b"\x07" not in done.stdout, done.stdout
    assert b"shellrt-r55-iface8-" in done.stdout and b"plain" in done.stdout, done.stdout


def test_rm_says_what_it_removed_escaped(tmp_path: Path) -> None:
    sessions = _state(tmp_path)
    done = _sessions(tmp_path, "rm", "--older-than", "0")
    assert done.returncode == 0, done.stderr[-600:]
    assert b"\x1b" not in done.stdout + done.stderr and b"\x07" not in done.stdout + done.stderr, done.stdout
    assert not (sessions / PLANTED).exists() and not (sessions / "plain").exists()
