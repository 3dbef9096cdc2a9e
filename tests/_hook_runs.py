"""Running a hook line the way the host does, for tests that check what it loaded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def run_hook_line(ws: Path, hook: str) -> subprocess.CompletedProcess[str]:
    """``hook`` run by bash in ``ws`` with the host hook runner's variables (`PYTHONSAFEPATH` set,
    `CLAUDE_PROJECT_DIR` the workspace) and only the caller's `PATH` besides."""
    return subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
