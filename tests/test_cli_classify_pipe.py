"""``shellrt classify … | head`` ends quietly, like any filter whose reader left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_classify_into_a_closed_pipe_prints_no_traceback() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shellrt", "classify", "--jsonl"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(b'"ls -la"\n' * 5_000)  # fits in the pipe buffer
    proc.stdin.close()
    assert proc.stdout.readline().startswith(b"{")
    proc.stdout.close()  # the reader goes away, as `head -1` does
    code = proc.wait(120)
    err = proc.stderr.read()
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode(errors="replace")
    assert code == 141


def test_classify_answers_deep_nesting_without_an_internal_error() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "classify", "--jsonl"],
        input=deep + b'"ls"\n',
        capture_output=True,
        env=env,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and b"nested too deeply" in lines[0] and b"RecursionError" not in lines[0]
    assert b'"read_only": true' in lines[1]
