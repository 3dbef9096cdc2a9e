"""``shellrt run --json`` whose reader went away (``| head -c 100``) ends like a pipeline, without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_json_report_to_a_closed_pipe_exits_141_quietly(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the report's write fails with EPIPE
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "shellrt", "run", "--json", "--sandbox", "local", "--", "true"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 141, proc.stderr[-2000:]
