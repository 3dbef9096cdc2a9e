"""Red team round 26, wave 3 (trusted-2): ``shellrt sessions rm`` removed a session in use.

Nothing told a live session from an old one: ``rm ID`` (or ``--older-than``) deleted the directory
of a running session (its transcript, spools, persisted results, the MCP servers' stderr) under it.
A `Runtime` now holds a shared lock on ``<session>/.in-use`` from its start to its close (released
by the kernel when its process dies); ``rm`` takes the lock exclusively before removing and skips
(and names) a session it cannot take, or cannot tell, unless ``--force``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.runtime import Runtime
from tests.test_cli_sessions import cli


async def _live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Runtime]:
    home = tmp_path / "shellrt-home"
    monkeypatch.setenv("SHELLRT_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ws").mkdir()
    rt = Runtime(tmp_path / "ws", "local", session_id="live-1")
    await rt.start()
    call = {"type": "tool_use", "id": "g1", "name": "Glob", "input": {"pattern": "*.py"}}
    await rt.run({"role": "assistant", "content": [call]})
    return home, rt


@pytest.mark.anyio
@pytest.mark.parametrize("how", [("rm", "live-1"), ("rm", "--older-than", "0")], ids=["by-id", "older-than"])
async def test_rm_skips_a_live_session_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: tuple[str, ...]
) -> None:
    """Failed 2 of 2 before: the live session's directory was removed under it."""
    home, rt = await _live(tmp_path, monkeypatch)
    directory = home / "sessions" / "live-1"
    try:
        done = cli(home, *how)
        assert directory.is_dir(), done
        assert done.returncode == 1 and "live-1" in done.stderr and "in use" in done.stderr, done
        assert "--force" in done.stderr, done
    finally:
        await rt.close()
    done = cli(home, *how)  # closed: removable
    assert done.returncode == 0 and not directory.exists(), done


@pytest.mark.anyio
async def test_rm_force_removes_a_live_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's way out: --force removes it anyway (failed before: no such option)."""
    home, rt = await _live(tmp_path, monkeypatch)
    try:
        done = cli(home, "rm", "live-1", "--force")
        assert done.returncode == 0 and not (home / "sessions" / "live-1").exists(), done
    finally:
        await rt.close()


@pytest.mark.anyio
async def test_rm_skips_a_session_whose_lock_is_not_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails closed: a lock that is a FIFO (or a link) cannot tell; the session is kept, and named."""
    home, rt = await _live(tmp_path, monkeypatch)
    await rt.close()
    lock = home / "sessions" / "live-1" / ".in-use"
    lock.unlink()
    os.mkfifo(lock)
    done = cli(home, "rm", "live-1")
    assert done.returncode == 1 and "cannot tell" in done.stderr and lock.parent.is_dir(), done
