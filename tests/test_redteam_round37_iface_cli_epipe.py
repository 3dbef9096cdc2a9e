"""Red team round 37 (iface): a CLI command whose reader went away ends quietly (status 141).

``shellrt tools | head -1`` or ``shellrt sessions show ID | less`` quit early: every sub-command
without its own handling (``run`` and ``classify`` had one) ended with a ``BrokenPipeError``
traceback (status 1), or Python's "Exception ignored" line at exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._mcp_support import ROOT, isolated_env

_SESSION = "0123456789ab"


def _state(home: Path) -> dict[str, str]:
    env = {**os.environ, **isolated_env(home)}
    session = Path(env["SHELLRT_HOME"]) / "sessions" / _SESSION
    session.mkdir(parents=True)
    line = json.dumps({"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "echo hi"}})
    (session / "transcript.jsonl").write_text((line + "\n") * 2000)
    return env


@pytest.mark.parametrize("args", [["tools"], ["sessions", "ls"], ["sessions", "show", _SESSION]])
def test_a_reader_gone_ends_the_command_quietly(tmp_path: Path, args: list[str]) -> None:
    """Failed before: status 1 and a BrokenPipeError traceback on stderr (3 of 3)."""
    env = _state(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "shellrt", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(ROOT),
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, (done.returncode, done.stderr[-400:])
    assert done.stderr == b"", done.stderr[-400:]


def test_output_read_to_the_end_is_unchanged(tmp_path: Path) -> None:
    env = _state(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "sessions", "show", _SESSION],
        capture_output=True,
        env=env,
        cwd=str(ROOT),
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.count(b"\n") == 2000, done.stderr[-400:]
