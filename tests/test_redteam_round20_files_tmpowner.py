"""Red team, round 20 (files): in bwrap's private /tmp the file tools act as the sandbox's user.

Run as root, bwrap runs commands under an unprivileged sandbox uid; the workspace is idmapped and
the tools act as its owner there (round 16). The session's private ``/tmp`` is bound as it is, and
the view had it as a plain writable mount: Write and Edit acted as root there. ``Write
/tmp/made/x.txt`` made a root-owned 0755 directory and a root-owned 0644 file that the session's
own commands could then neither change (``echo >>``: Permission denied) nor add to -- files owned
by root in a sandbox where nothing is root. The view now gives that mount the sandbox's user as
its owner: files and directories the tools make there are that user's, and what it may not read
or write there the tools may not either.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import shellrt
from tests._calls import block_text as _text
from tests._calls import one_call as _one
from tests.conftest import require

pytestmark = pytest.mark.anyio


async def test_tools_in_private_tmp_leave_files_commands_own(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root caller's commands run under another uid")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(
        workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        uid = _text(await _one(rt, "Bash", command="id -u")).strip()
        assert uid.isdigit() and uid != "0", uid
        assert not (await _one(rt, "Write", file_path="/tmp/made/x.txt", content="model\n"))["is_error"]
        assert not (await _one(rt, "Read", file_path="/tmp/made/x.txt"))["is_error"]
        assert not (
            await _one(rt, "Edit", file_path="/tmp/made/x.txt", old_string="model", new_string="edited")
        )["is_error"]
        probe = await _one(
            rt,
            "Bash",
            command="stat -c '%u %n' /tmp/made /tmp/made/x.txt; echo more >> /tmp/made/x.txt && touch /tmp/made/y"
            " && echo CHANGED",
        )
        out = _text(probe)
        assert f"{uid} /tmp/made\n" in out and f"{uid} /tmp/made/x.txt\n" in out, out
        assert "CHANGED" in out, out
