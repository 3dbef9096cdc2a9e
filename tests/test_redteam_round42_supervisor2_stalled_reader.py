"""Red team, round 42 (supervisor2): a reader that never reads kept a command past its timeout.

``shellrt run`` echoes a command's output as it comes, with a blocking write. Piped into a reader
that takes nothing (``shellrt run --timeout 2 -- yes | (sleep 600)``, a stuck consumer), the write
blocked once the pipe was full, and with it the event loop (the full path) or the pump (the lean
local path): the timeout's kill never ran, and the command went on for as long as the reader
stalled (10 s of a 2 s timeout measured, on local and bwrap alike). The echo now waits for a
stalled reader only until the timeout, says so, and keeps the spool for the rest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: ``shellrt run <argv>`` through the full path (a Supervisor; what bwrap and ``--json`` use).
_FULL = """
import sys
from shellrt.cli import build_parser
from shellrt.cli.run import run_full
args = build_parser(("run",)).parse_args(["run", *sys.argv[1:]])
words = list(args.command)
if words and words[0] == "--":
    words = words[1:]
sys.exit(run_full(args, words[0] if len(words) == 1 else " ".join(words)))
"""

_COMMAND = "yes & while :; do echo t >> ticks; sleep 0.2; done"


@pytest.mark.parametrize(("path", "sandbox"), [("lean", "local"), ("full", "local"), ("full", "bwrap")])
def test_a_stalled_reader_does_not_hold_the_timeout(tmp_path: Path, path: str, sandbox: str) -> None:
    """Failed before (3 of 3): no exit within 30 s while the reader took nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    head = ["-P", "-m", "shellrt", "run"] if path == "lean" else ["-P", "-c", _FULL]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, *head, "--sandbox", sandbox, "--workspace", str(ws), "--timeout", "2", "--", _COMMAND],
        stdout=subprocess.PIPE,  # never read until it ends: the stalled reader
        stderr=open(tmp_path / "stderr", "wb"),  # noqa: SIM115 - closed with the process
        env=env,
        cwd=ws,
    )
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.terminate()  # shellrt kills the command's tree on SIGTERM, once its write returns
        assert proc.stdout is not None
        proc.stdout.read()
        proc.wait(30)
        pytest.fail("shellrt run did not end within 30 s of a 2 s timeout while its reader took nothing")
    finally:
        if proc.stdout is not None:
            proc.stdout.close()
    took = time.monotonic() - started
    stderr = (tmp_path / "stderr").read_text(errors="replace")
    assert code == 124, stderr[-2000:]
    assert took < 20, f"took {took:.1f} s"
    assert "the reader of stdout took nothing more by the timeout" in stderr
    ticks = (ws / "ticks").read_text().count("t")
    time.sleep(0.5)
    assert (ws / "ticks").read_text().count("t") == ticks, "the command still ran after shellrt ended"
    kept = stderr.split("all of it is in ", 1)[1].split(")", 1)[0]
    assert Path(kept).is_file() and Path(kept).stat().st_size > 65_536, "the rest's spool was not kept"
