"""Red team round 13 (host side): a session directory named through a symbolic link in the
workspace is refused at start (`refuse_linked_session_dir`).

An operator's ``session_dir`` of ``ws/sess-link/s`` with ``ws/sess-link -> /data/sessions``
(outside the workspace) passes `shellrt.runtime.session_dir.ensure_private_session_dir`: the
directory itself is no link, its holder (resolved) is private. But the link lies in the
workspace, which commands write: a command ran ``rm sess-link && mkdir -p sess-link/s`` and
every later host write by path -- ``state.json``, ``tasks.json``, the output spools, the
transcript (refused only because it is opened ``O_NOFOLLOW``), ``audit.jsonl`` (opened
following links) -- went into the command's directory, which a reopened session then trusts.

Now refused when the session starts, as round 12 did for writable roots: a link at or below a
writable root on the session directory's way. A session directory inside the workspace with no
link on its way stays usable: its bind is a mount point, and renaming its parent from inside the
sandbox fails (EBUSY), as the second test shows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from tests._rt13_host import bash_text, host_base

pytestmark = pytest.mark.anyio


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from host_base(tmp_path, monkeypatch, "rt13-sesslink-")


async def test_a_session_dir_through_a_workspace_link_cannot_be_redirected(base: Path) -> None:
    ws = base / "ws"
    ws.mkdir()
    (base / "sessions").mkdir(mode=0o700)
    (ws / "sess-link").symlink_to(base / "sessions")
    made = ws / "sess-link" / "s"
    try:
        async with shellrt.Runtime(ws, "bwrap", session_dir=made, mode="bypassPermissions") as rt:
            await bash_text(rt, "rm sess-link && mkdir -p sess-link/s")
            await bash_text(rt, "echo x")
    except PermissionError as refused:
        assert "symbolic link inside the writable root" in str(refused)
        assert str(base / "sessions" / "s") in str(refused)  # the real path to name instead
        return
    written = os.listdir(ws / "sess-link" / "s") if not (ws / "sess-link").is_symlink() else "link kept"
    pytest.fail(f"a session started through a link in the workspace (the command's own directory: {written})")


async def test_a_session_dir_in_the_workspace_cannot_be_moved_away_by_a_command(base: Path) -> None:
    ws = base / "ws"
    ws.mkdir()
    made = ws / "a" / "s"
    async with shellrt.Runtime(ws, "bwrap", session_dir=made, mode="bypassPermissions") as rt:
        for command in ("mv a b; mkdir -p a/s", "echo x"):
            await bash_text(rt, command)
    assert not (ws / "b").exists()
    assert "state.json" in os.listdir(made)
