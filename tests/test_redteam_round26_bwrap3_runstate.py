"""Red team, round 26 (wave 3, bwrap-3): ``shellrt run`` over the caller's home showed shellrt's
own state to the command.

A `Session` masks shellrt's per-user directories (`shellrt.runtime.session_mask`: the sessions'
transcripts and results, the in-flight records a later session restores protected files from,
the caches). ``shellrt run`` masked only the configuration directory (`record_dir_masks`), so with
``--workspace ~`` a command listed every earlier session and wrote an in-flight record of its own
into ``~/.local/state/shellrt/inflight`` on the host. Now ``shellrt run`` masks the same places.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.bwrap


def test_shellrt_run_over_the_home_hides_shellrt_state(tmp_path: Path) -> None:
    """Failed before (1 of 1): the command listed ``sessions`` and wrote ``inflight/forged.json``."""
    require_bwrap()
    home = tmp_path / "home"
    state = home / ".local" / "state" / "shellrt"
    (state / "sessions" / "old").mkdir(parents=True, mode=0o700)
    (state / "sessions" / "old" / "transcript.jsonl").write_text("earlier session\n")
    (state / "inflight").mkdir(mode=0o700)
    command = (
        f"ls {state}/sessions; cat {state}/sessions/old/transcript.jsonl; "
        f"echo '{{}}' > {state}/inflight/forged.json && echo WROTE"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    argv = f"{sys.executable} -m shellrt run --sandbox bwrap --workspace {home} -- sh -c".split()
    result = subprocess.run([*argv, command], cwd=home, env=env, capture_output=True, text=True, timeout=120)
    said = result.stdout + result.stderr
    assert "unavailable" not in said, said
    assert "WROTE" not in said and "earlier session" not in said and "old" not in result.stdout, said
    assert not (state / "inflight" / "forged.json").exists(), said
