"""``shellrt run --deny-read`` names a path: a pattern that names no file hid nothing, silently.

``--deny-read './sub/**'`` was taken as a file named ``**`` inside ``sub``: the command read
``sub/k`` while the operator believed ``sub/`` hidden. Now refused with what to write instead; an
existing path (glob characters included) is hidden as before. Real CLI, real bubblewrap."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import require


def _run(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", *args],
        cwd=ws, env={**os.environ, "PYTHONPATH": os.getcwd()}, capture_output=True, text=True, timeout=120,
    )


def test_a_pattern_naming_nothing_is_refused_and_a_real_path_still_hidden(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "k").write_text("SECRET-DRP\n")
    (ws / "a*b").write_text("STAR-DRP\n")
    refused = _run(ws, "--deny-read", "./sub/**", "--", "cat sub/k")
    assert refused.returncode != 0 and "SECRET-DRP" not in refused.stdout, refused
    assert "Read(./secrets/**)" in refused.stderr and "names no existing path" in refused.stderr, refused.stderr
    hidden = _run(ws, "--deny-read", "./sub", "--", "cat sub/k")
    assert "SECRET-DRP" not in hidden.stdout, hidden
    star = _run(ws, "--deny-read", "./a*b", "--", "cat 'a*b'")  # an existing name with a star is a path
    assert "STAR-DRP" not in star.stdout and "names no existing path" not in star.stderr, star
