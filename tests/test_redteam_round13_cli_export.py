"""Red team, round 13: ``shellrt run --export`` holds back what a later host program would obey.

The docker export learnt ``refuse=`` this round, but ``shellrt run --export DIR`` did not pass it:
a command's new git hook, ``.shellrt/settings.json`` or ``.bashrc`` in its copy came out into the
operator's directory, where the next ``git commit`` or session obeys it. Now the CLI passes
`shellrt.supervisor.protect.protected_reason`: such files are held back (unless unchanged), named
on stderr, and the run fails; the other files are exported. Real containers (FAIL, not skip,
under CI=true).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._docker_support import BUSYBOX, require_docker

pytestmark = pytest.mark.docker


def _run(ws: Path, out: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "docker", "--image", BUSYBOX, "--pull", "never",
         "--workspace", str(ws), "--export", str(out), "--", script],
        capture_output=True, text=True, timeout=180, env=env,
    )


def test_a_planted_git_hook_is_held_back_and_the_run_fails(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "out"
    done = _run(ws, out, "mkdir -p .git/hooks .shellrt && printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit"
                " && echo '{}' > .shellrt/settings.json && echo ok > fine.txt")
    assert done.returncode != 0, done
    assert "git hook" in done.stderr, done.stderr
    assert (out / "fine.txt").read_text() == "ok\n"
    assert not (out / ".git" / "hooks" / "pre-commit").exists()
    assert not (out / ".shellrt" / "settings.json").exists()


def test_an_export_of_ordinary_files_still_succeeds(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("before\n")
    out = tmp_path / "out"
    done = _run(ws, out, "echo after > a.txt && mkdir -p src && echo x > src/b.py")
    assert done.returncode == 0, done.stderr
    assert (out / "a.txt").read_text() == "after\n"
    assert (out / "src" / "b.py").read_text() == "x\n"
