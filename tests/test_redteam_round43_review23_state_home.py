"""Red team, round 43 (review23): shellrt's own state follows the one home, not ``$HOME`` as given.

Round 42 (perms5) gave rules, masks, the user settings and the trust store one home
(`permissions.caller_home`). The in-flight records (`supervisor._inflight.state_dir`) and the
unmarked-writes note (`supervisor._tree_note.note_path`, "beside the trust store") still took
``$HOME`` as given: ``HOME=~`` made ``shellrt run`` die with a traceback, and a relative HOME put
both below the current directory -- inside the workspace its command writes, where that command
forges or removes what a later guarded start trusts; ``HOME=`` put the note at ``/.config``, away
from the trust store it is read beside.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import shellrt
from shellrt.permissions.caller_home import caller_home
from shellrt.permissions.trust_paths import trust_store_path
from shellrt.supervisor._inflight import state_dir
from shellrt.supervisor._tree_note import note_path

HOMES = ["~", "", "rel", "~/x"]


@pytest.mark.parametrize("home", HOMES)
def test_the_state_and_the_note_are_under_the_one_home(monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    for name in ("SHELLRT_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "SHELLRT_TRUST_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", home)
    assert state_dir() == caller_home() / ".local" / "state" / "shellrt"
    assert note_path().parent == trust_store_path().parent


@pytest.mark.parametrize("home", ["~", "rel"])
def test_shellrt_run_writes_no_state_below_the_workspace(tmp_path: Path, home: str) -> None:
    state = tmp_path / "state"  # the run's own state, out of the caller's real home
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": home,
        "XDG_STATE_HOME": str(state),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(Path(shellrt.__file__).parent.parent),
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    env.pop("XDG_STATE_HOME") if home == "rel" else None
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--", "echo", "ran"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr[-2000:]
    assert not [p for p in ws.rglob("*")], list(ws.rglob("*"))
