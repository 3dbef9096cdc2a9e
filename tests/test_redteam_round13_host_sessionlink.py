"""Red team round 13 (host side), found and NOT fixed here: a session directory named through a
symbolic link in the workspace.

An operator's ``session_dir`` of ``ws/sess-link/s`` with ``ws/sess-link -> /data/sessions``
(outside the workspace) passes `shellrt.runtime.session_dir.ensure_private_session_dir`: the
directory itself is no link, its holder (resolved) is private. But the link lies in the
workspace, which commands write: a command ran ``rm sess-link && mkdir -p sess-link/s`` and
every later host write by path -- ``state.json``, ``tasks.json``, the output spools, the
transcript (refused only because it is opened ``O_NOFOLLOW``), ``audit.jsonl`` (opened
following links) -- went into the command's directory, which a reopened session then trusts.

The fix needs the session's roots where the directory is checked (`Runtime` calls
``ensure_private_session_dir(self.session_dir)`` in ``shellrt/runtime/session.py``, outside this
round's files): refuse a link at or below a writable root, as round 12 did for writable roots.
Strict xfail: this test fails once the hole is closed, so the marker is then removed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from tests._governance import trust_env
from tests.conftest import require

pytestmark = pytest.mark.anyio


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    trust_env(tmp_path, monkeypatch)
    path = Path(tempfile.mkdtemp(prefix="rt13-sesslink-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.xfail(strict=True, reason="open: the session dir's path is not judged against the roots")
async def test_a_session_dir_through_a_workspace_link_cannot_be_redirected(base: Path) -> None:
    ws = base / "ws"
    ws.mkdir()
    (base / "sessions").mkdir(mode=0o700)
    (ws / "sess-link").symlink_to(base / "sessions")
    made = ws / "sess-link" / "s"
    try:
        async with shellrt.Runtime(ws, "bwrap", session_dir=made, mode="bypassPermissions") as rt:
            block = {
                "type": "tool_use",
                "id": "sl-" + secrets.token_hex(6),
                "name": "Bash",
                "input": {"command": "rm sess-link && mkdir -p sess-link/s"},
            }
            await rt.run([block])
            block = {
                "type": "tool_use",
                "id": "sl-" + secrets.token_hex(6),
                "name": "Bash",
                "input": {"command": "echo x"},
            }
            await rt.run([block])
    except PermissionError:
        return  # refused at start: closed
    # The command's own directory (now at the link's place) must hold nothing the host wrote.
    if (ws / "sess-link").is_symlink():
        return
    assert os.listdir(ws / "sess-link" / "s") == [], os.listdir(ws / "sess-link" / "s")
