"""A hook line run as the host runs it (``bash -c`` in the workspace): the premise of the hook rounds.

Each hook round first shows the host really runs the planted code (its mark in the output), then that
the record of the hook's files changed. Rounds 51 and 53 wrote the same run; it is one here.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["run_hook_on_host"]


def run_hook_on_host(ws: Path, hook: str, mark: str, what: object) -> None:
    """Run ``hook`` with only PATH and CLAUDE_PROJECT_DIR set; fail (naming ``what``) unless its
    output holds ``mark``: the planted code ran on the host."""
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert mark in done.stdout, (what, done.stdout, done.stderr)  # the premise: the host runs it
