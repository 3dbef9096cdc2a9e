"""Red team round 26, wave 3 (trusted-2): ``shellrt run`` left shellrt's state directory to a command.

``~/.local/state/shellrt`` (``$XDG_STATE_HOME/shellrt``, ``$SHELLRT_HOME``) holds every session's
transcript and results and the in-flight records a later session restores protected files from.
A `Runtime` masked it below a writable root; ``shellrt run`` masked only the configuration
directory (round 26 trusted), so ``--writable ~`` (or the state home) let a bwrap command read
other sessions' transcripts and forge in-flight records; a root that *is* the state directory (or
lies inside it) was left writable by both. Now the state directory is masked for every sandbox
whose writable root holds it, and a root that is it or lies inside it is refused.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from tests._bwrap_session import require_bwrap
from tests._governance import isolated_workspace
from tests.test_redteam_round25_trusted_unrecorded import _shellrt

SECRET = "transcript-secret-4711"


def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> tuple[Path, Path, Path]:
    """(workspace, the writable root holding the state directory, the state directory) with a
    session's transcript in it."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    if where == "home":  # the default place: ~/.local/state/shellrt
        monkeypatch.delenv("XDG_STATE_HOME")
        holder = tmp_path / "home"
        state = holder / ".local" / "state" / "shellrt"
    else:
        holder = tmp_path / "state"
        state = holder / "shellrt"
    (state / "sessions" / "s1").mkdir(parents=True)
    (state / "sessions" / "s1" / "transcript.jsonl").write_text(json.dumps({"secret": SECRET}) + "\n")
    (state / "inflight").mkdir()
    return ws, holder, state


def _probe(state: Path) -> str:
    s = shlex.quote(str(state))
    return f"cat {s}/sessions/s1/transcript.jsonl; echo forged > {s}/inflight/forged && echo wrote-record; echo done"


@pytest.mark.parametrize("where", ["home", "xdg"])
def test_a_run_given_a_root_holding_the_state_dir_cannot_reach_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Failed 2 of 2 before: the command printed the transcript and wrote an in-flight record."""
    require_bwrap()
    ws, holder, state = _state(tmp_path, monkeypatch, where)
    done = _shellrt("run", "--sandbox", "bwrap", "--workspace", str(ws), "--writable", str(holder), "--", _probe(state))
    assert "done" in done.stdout, done
    assert SECRET not in done.stdout and "wrote-record" not in done.stdout, done
    assert not (state / "inflight" / "forged").exists()


@pytest.mark.parametrize("which", ["itself", "inside"])
def test_a_run_refuses_the_state_dir_as_a_writable_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """Failed 2 of 2 before: the root was the command's to write (records forged)."""
    ws, _, state = _state(tmp_path, monkeypatch, "xdg")
    root = state if which == "itself" else state / "inflight"
    done = _shellrt("run", "--sandbox", "bwrap", "--workspace", str(ws), "--writable", str(root), "--", _probe(state))
    assert done.returncode != 0 and "shellrt's own state directory" in done.stderr, done
    assert "done" not in done.stdout and not (state / "inflight" / "forged").exists()


def test_a_runtime_refuses_the_state_dir_as_a_writable_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed 1 of 1 before: a bwrap session whose root was the state directory wrote a record."""
    from shellrt.runtime import Runtime

    require_bwrap()
    ws, _, state = _state(tmp_path, monkeypatch, "xdg")
    policy = SandboxPolicy(workspace=ws, writable_roots=(state,))

    async def main() -> str:
        async with Runtime(ws, "bwrap", policy=policy, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": _probe(state)}}
            return json.dumps((await rt.run({"role": "assistant", "content": [block]}))["content"])

    with pytest.raises(ValueError, match="shellrt's own state directory"):
        anyio.run(main)
    assert not (state / "inflight" / "forged").exists()
    assert os.path.isdir(state / "sessions" / "s1")
