"""`benchmarks.percall_hot` runs end to end (round 36, second wave).

It reaches into the runtime's private objects (the executor's facts, the transcript, the spool
files) to replay a call's pieces hot; this keeps it working when those move. In a subprocess:
its wrappers stay on the classes of the process that runs it.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_percall_hot_prints_every_piece_in_call_and_hot() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    argv = ["--rounds", "1", "--burst", "2", "--times", "3", "--warmup", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.percall_hot", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = {line[:34].strip(): line[34:].split() for line in done.stdout.splitlines()[2:]}
    from benchmarks.percall_hot import PIECES

    assert set(rows) == {label.strip() for label, _, _ in PIECES}
    for label, values in rows.items():
        assert float(values[0]) > 0, f"{label}: not timed in the call"
    replayed = (
        "start line",
        "call line",
        "facts JSON",
        "decision (engine)",
        "its key (Bash)",
        "empty output's link",
    )
    for label in replayed:
        assert not math.isnan(float(rows[label][1])) and float(rows[label][1]) > 0, f"{label}: no hot figure"
