"""Red team, round 43 (review21): output read after the timeout was never passed on.

Round 42's `echo_until` raised `EchoStalled` for any write past the deadline, room or not. A command
that printed up to its timeout (``shellrt run --timeout 1 -- yes | wc -c``, a test suite's last
lines) had what the loop read after the deadline -- the kill's drain, often the lines that say
where it hung -- dropped from the echo, the operator told "the reader of stdout took nothing more
by the timeout" of a reader that took everything, and the run's temp directory kept in /tmp (a
stalled reader's spool is kept for the operator): 3 of 3 runs by hand. Past the deadline the echo
now waits for room `_stdout._LATE_S` more, and only a reader with no room by then is stalled.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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


@pytest.mark.parametrize("path", ["lean", "full"])
def test_a_reader_that_takes_everything_gets_the_output_after_the_timeout(tmp_path: Path, path: str) -> None:
    """Failed before (2 of 2): told the reader stalled, the rest not passed on."""
    ws = tmp_path / "ws"
    ws.mkdir()
    head = ["-P", "-m", "shellrt", "run"] if path == "lean" else ["-P", "-c", _FULL]
    # Our tree first, the rest kept (as uid 65534 the installed packages come through PYTHONPATH).
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "TMPDIR": str(tmp_path)}
    with open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.run(
            [sys.executable, *head, "--sandbox", "local", "--workspace", str(ws), "--timeout", "1", "--", "yes"],
            stdout=subprocess.PIPE,  # read as fast as it comes: a reader that takes everything
            stderr=err,
            env=env,
            cwd=ws,
            timeout=60,
            check=False,
        )
    stderr = (tmp_path / "stderr").read_text(errors="replace")
    assert proc.returncode == 124, stderr[-2000:]
    assert len(proc.stdout) > 0
    assert "took nothing more" not in stderr, stderr[-2000:]


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534."""
    from tests import _nonroot

    _nonroot.held_as_nobody(__file__, "test_a_reader_that_takes_everything_gets_the_output_after_the_timeout")
