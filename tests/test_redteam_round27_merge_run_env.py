"""Red team round 27 (merge): ``shellrt run`` with a bad output-size variable.

``SHELLRT_OUTPUT_LIMIT=abc shellrt run --sandbox local -- echo hi`` ended in a traceback after the
command had started (the quick path read the limit as it set up the spool; the full path inside
its task group). ``shellrt serve`` checks its variables at start since round 27 wave 2
(`cli/_serve_env.py`); ``run`` now checks the output sizes before anything starts: a usage error
(exit 2) naming the variable, nothing run. Real CLI processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("extra", [[], ["--cwd", "."]], ids=["quick-path", "full-path"])
@pytest.mark.parametrize("name", ["SHELLRT_OUTPUT_LIMIT", "SHELLRT_SESSION_OUTPUT_LIMIT", "SHELLRT_OUTPUT_RESERVE"])
def test_a_bad_size_is_a_usage_error_and_nothing_runs(tmp_path: Path, name: str, extra: list[str]) -> None:
    marker = tmp_path / "ran"
    env = {**os.environ, name: "abc"}
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", *extra, "--", f"touch {marker}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert name in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert not marker.exists()
