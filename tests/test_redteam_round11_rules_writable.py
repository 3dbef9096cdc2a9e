"""Red team round 11 (rules in the sandbox): ``--writable`` through a symlink the repository planted.

``shellrt run --writable ./build`` resolved the path and made its target a writable root. A
repository that ships ``build -> /home/user/.ssh`` (or ``out -> ../..``) thereby chose a directory
outside the workspace for the operator to open read-write to every command: the command then
wrote ``authorized_keys`` through the sandbox. Each component of a ``--writable`` path is now
checked as it is resolved: a symbolic link inside the workspace (whatever its contents point at)
refuses the run with what to do (pass the real path, if that is what you mean). Failed before:
the run started with the link's target writable and the command wrote there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.cli import _sandbox_options
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    base = Path(tempfile.mkdtemp(prefix="rt11-writable-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, outside = base / "ws", base / "home" / ".ssh"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir(parents=True)
    (outside / "authorized_keys").write_text("operator-key\n")
    for p in (ws, ws / "sub", outside, outside.parent):
        p.chmod(0o777)
    (outside / "authorized_keys").chmod(0o666)
    os.symlink(outside, ws / "build")  # planted by the repository
    os.symlink("../build", ws / "sub" / "up")  # a relative one, on the way
    (ws / "real").mkdir(mode=0o777)
    try:
        yield ws, outside
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run(ws: Path, writable: str, command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--workspace", str(ws),
         "--writable", writable, "--", "sh", "-c", command],
        capture_output=True, text=True, timeout=120, env=env, cwd=ws,
    )  # fmt: skip


@pytest.mark.parametrize(
    "spelling", ["build", "./build", "{ws}/build", "sub/up", "{ws}/sub/../build", "build/"]
)
def test_a_writable_root_through_a_workspace_symlink_is_refused(
    places: tuple[Path, Path], spelling: str
) -> None:
    ws, outside = places
    with pytest.raises(SystemExit) as caught:
        _sandbox_options.checked_writable_root(spelling.format(ws=ws), ws, cwd=ws)
    message = str(caught.value)
    assert "symbolic link inside the workspace" in message and str(outside) in message, message


def test_real_paths_and_links_outside_the_workspace_stay_allowed(places: tuple[Path, Path]) -> None:
    ws, outside = places
    assert _sandbox_options.checked_writable_root("real", ws, cwd=ws) == ws / "real"
    assert (
        _sandbox_options.checked_writable_root(str(outside), ws, cwd=ws) == outside
    )  # the operator's own choice
    link = ws.parent / "operator-link"
    os.symlink(outside, link)
    assert _sandbox_options.checked_writable_root(str(link), ws, cwd=ws) == outside


def test_the_cli_refuses_before_any_command_runs(places: tuple[Path, Path]) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, outside = places
    done = _run(ws, "build", "echo attacker-key >> build/authorized_keys; echo ran")
    assert done.returncode != 0 and "ran" not in done.stdout, (done.stdout, done.stderr)
    assert "symbolic link inside the workspace" in done.stderr, done.stderr
    assert (outside / "authorized_keys").read_text() == "operator-key\n"
    ok = _run(ws, "real", "echo fine > real/f; echo ran")
    assert ok.returncode == 0 and "ran" in ok.stdout, (ok.stdout, ok.stderr)
