"""Round 36, issue 22 item 2: no protected-files scan before a command when nothing could be seen.

When nothing of the session ran since the last check (the check after the previous command,
with nothing left running) and inotify reported nothing, the scan before a command could only
accept changes it cannot see; the check after the command now judges those (and reverts them).
These pin the cut and what it must keep:

- a quiet tree costs one scan a command, not two (counted: robust at any load);
- the operator's ordinary edit between commands (inotify reports it) is still accepted;
- a change inotify does not report (a write through a shared mapping, as a process the session
  left behind could make) is reverted after the next command instead of being accepted before it;
- a hook a command plants is reverted, and one planted while a background task runs too.
"""

from __future__ import annotations

import mmap
import os
import subprocess
from pathlib import Path

import pytest

from shellrt.supervisor import protect
from shellrt.supervisor._inotify import Inotify, InotifyEvents
from shellrt.supervisor.protect import CommandGuard, WorkspaceGuard

pytestmark = pytest.mark.anyio


def _repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(protect, "INLINE_SCAN_S", 60.0)  # inline whatever the load
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws, session


def _count_scans(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    scans: list[bool] = []
    plain = WorkspaceGuard.scan

    def counted(self: WorkspaceGuard, **kwargs: bool) -> list[str]:
        scans.append(kwargs.get("revert", False))
        return plain(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(WorkspaceGuard, "scan", counted)
    return scans


async def test_a_quiet_tree_is_scanned_once_a_command_and_an_operator_edit_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, session = _repo(tmp_path, monkeypatch)
    guard = CommandGuard(WorkspaceGuard(ws, session))
    try:
        await guard.before(False)
        assert await guard.after(False) == ()  # the baseline
        scans = _count_scans(monkeypatch)
        for _ in range(3):
            await guard.before(False)
            assert await guard.after(False) == ()
        assert scans == [True, True, True], scans  # the after-checks only ([False, True] x3 before)

        # The operator's own hook between commands: inotify reports it, so it is looked at and kept.
        hook = ws / ".git" / "hooks" / "pre-push"
        hook.write_text("#!/bin/sh\necho operator\n")
        hook.chmod(0o755)
        scans.clear()
        await guard.before(False)
        assert await guard.after(False) == ()
        assert scans == [False, True], scans
        assert hook.read_text() == "#!/bin/sh\necho operator\n"
    finally:
        await guard.final()


async def test_an_unreported_change_between_commands_is_reverted_after_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, session = _repo(tmp_path, monkeypatch)
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho fine\n")
    hook.chmod(0o755)
    # A process that holds the hook mapped shared (opened before the baseline: closing a written
    # file is an event, writing through the mapping is none), as one left behind could.
    fd = os.open(hook, os.O_RDWR)
    mapped = mmap.mmap(fd, 0)
    guard = CommandGuard(WorkspaceGuard(ws, session))
    try:
        await guard.before(False)
        assert await guard.after(False) == ()  # the operator's hook is the baseline
        witness = Inotify.open()
        assert witness is not None and witness.add(str(hook.parent))
        mapped[-5:] = b"evil\n"
        mapped.flush()
        assert hook.read_text() == "#!/bin/sh\necho evil\n"
        assert witness.drain() == InotifyEvents()  # inotify saw nothing
        witness.close()
        await guard.before(False)
        notes = await guard.after(False)
        # Before round 36 the check before the command accepted it as the operator's edit.
        assert any("pre-commit" in note for note in notes), notes
        assert not hook.exists() or hook.read_text() == "#!/bin/sh\necho fine\n"

        # A command's plant is reverted as ever.
        await guard.before(False)
        planted = ws / ".git" / "hooks" / "post-checkout"
        planted.write_text("#!/bin/sh\necho planted\n")
        planted.chmod(0o755)
        notes = await guard.after(False)
        assert not planted.exists()
        assert any("post-checkout" in note for note in notes), notes

        # A plant while a background task runs (busy) is reverted by the next command's check before.
        await guard.before(False, background=True)
        assert await guard.after(True) == ()
        late = ws / ".git" / "hooks" / "pre-rebase"
        late.write_text("#!/bin/sh\necho late\n")
        late.chmod(0o755)
        await guard.before(True)
        notes = await guard.after(False)
        assert not late.exists()
        assert any("pre-rebase" in note for note in notes), notes
    finally:
        mapped.close()
        os.close(fd)
        await guard.final()
