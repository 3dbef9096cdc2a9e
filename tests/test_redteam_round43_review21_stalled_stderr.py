"""Red team, round 43 (review21): shellrt run's own notes held it on a stalled reader.

Round 42 bounded the echo of a command's output by the timeout (`echo_until`), and then told the
operator so, and everything else after the run, with blocking ``print``\\ s to stderr. With stderr on
the stalled pipe too (``shellrt run --timeout 2 -- yes 2>&1 | (sleep 600)``, the usual way to keep
both), the first note blocked once the pipe was full: ``shellrt run`` never ended while the reader
took nothing, on every path, and in the lean local path the planted-file revert (``guard.final``)
and the marker sweep waited behind it. Once a reader stalled, shellrt's own writes to its streams
now take only the room there is (`_stdout.bound_streams`).
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
def test_a_stalled_reader_of_both_streams_does_not_hold_shellrt(tmp_path: Path, path: str, sandbox: str) -> None:
    """Failed before (3 of 3): still running 30 s after a 2 s timeout, blocked in its own note."""
    ws = tmp_path / "ws"
    ws.mkdir()
    head = ["-P", "-m", "shellrt", "run"] if path == "lean" else ["-P", "-c", _FULL]
    # Our tree first, the rest kept (as uid 65534 the installed packages come through PYTHONPATH).
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "TMPDIR": str(tmp_path)}
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, *head, "--sandbox", sandbox, "--workspace", str(ws), "--timeout", "2", "--", _COMMAND],
        stdout=subprocess.PIPE,  # never read until it ends: the stalled reader
        stderr=subprocess.STDOUT,  # ``2>&1``: shellrt's own notes go to the same stalled pipe
        env=env,
        cwd=ws,
    )
    assert proc.stdout is not None
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.stdout.read()
        proc.wait(30)
        pytest.fail("shellrt run did not end within 30 s of a 2 s timeout: its own note to stderr blocked")
    finally:
        tail = proc.stdout.read()[-4000:]
        proc.stdout.close()
    took = time.monotonic() - started
    assert code == 124, tail.decode(errors="replace")
    assert took < 20, f"took {took:.1f} s"
    ticks = (ws / "ticks").read_text().count("t")
    time.sleep(0.5)
    assert (ws / "ticks").read_text().count("t") == ticks, "the command still ran after shellrt ended"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (its own temp dirs; bwrap without the root caller's leased uid)."""
    from tests import _nonroot

    _nonroot.held_as_nobody(__file__, "test_a_stalled_reader_of_both_streams_does_not_hold_shellrt")
