"""Red team, round 28 (bwrap): a mount on the way to a place went unnoticed by the place cache.

Round 27 keeps the masks of shellrt's own places (`sandbox.bwrap._own_masks`) until inotify says a
name on their way changed. Mounts make no inotify event: a bind mount over a directory of a writable
root that brings another process's ``.cache/shellrt`` into it left the cached masks without it, and
the next bwrap (one per command, or a zygote replaced for another reason) copied the new mount table
with the old masks (round 27 "Left"). The watch now also polls ``/proc/self/mountinfo`` and compares
the mounts at or above the watched ways. Run in a private mount namespace (``unshare``): the host's
mount table is not touched. Root only (it mounts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(os.geteuid() != 0, reason="mounts (root only)")]

REPO = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, os, subprocess, sys
from pathlib import Path
from sandbox import BwrapConfig, SandboxPolicy
from sandbox import bwrap as bwrap_mod
base = Path(sys.argv[1])
ws, other, elsewhere = base / "ws", base / "other", base / "elsewhere"
calls = []
real = bwrap_mod._own_masks
def counted(roots):
    calls.append(1)
    return real(roots)
bwrap_mod._own_masks = counted
backend = bwrap_mod.BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
def masks():
    return [str(p) for p in backend._own.masks()]
out = {"first": masks(), "again": masks()}
subprocess.run(["mount", "-t", "tmpfs", "unrelated", str(elsewhere)], check=True)
out["unrelated"] = masks()
out["calls_before"] = len(calls)
subprocess.run(["mount", "--bind", str(other), str(ws / ".cache")], check=True)
out["bound"] = masks()
out["calls"] = len(calls)
print(json.dumps(out))
"""


def test_a_mount_bringing_a_place_into_a_root_is_masked_next(tmp_path: Path) -> None:
    """Failed before (1 of 1): after the bind, the masks were the cached ones, without the place."""
    require(shutil.which("unshare") is not None, "unshare (util-linux)")
    ws = tmp_path / "ws"
    (ws / ".cache").mkdir(parents=True)
    (tmp_path / "other" / "shellrt").mkdir(parents=True, mode=0o700)
    (tmp_path / "other" / "shellrt" / "zinit-note").write_text("another process's cache")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "home").mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "XDG_RUNTIME_DIR")}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    place = str(ws / ".cache" / "shellrt")
    assert place not in out["first"], out
    assert out["calls_before"] == 1, f"an unrelated mount or nothing made it look again: {out}"
    assert place in out["bound"], f"the mounted place was not masked: {out}"
    assert out["calls"] == 2, out
