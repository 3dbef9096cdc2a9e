"""Red team round 37 (rules): the file tools and a mount the operator makes after the session started.

The file tools run on the host and refuse a read-denied path by name; round 36 added every other
mount's name of a denied path to the policy, but only for the mounts there were when the session
started. A bind mount of the workspace made mid-session gave new names: Read of
``<alias>/secret.txt`` and ``<alias>/keys/id`` printed what ``Read(./secret.txt)`` and
``Read(./keys/**)`` deny, on local and bwrap (root caller here; the tools run as the caller on every
backend). Root only: making the mount needs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import shellrt
from tests._calls import one_call
from tests.conftest import require


@pytest.mark.anyio
@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
async def test_the_file_tools_read_no_denied_file_through_a_mount_made_mid_session(sandbox: str) -> None:
    require(os.geteuid() == 0, "making a bind mount needs root")
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="rt37-latemount-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, alias = base / "ws", base / "alias"
    (ws / "keys").mkdir(parents=True)
    alias.mkdir()
    ws.chmod(0o777)
    (ws / "secret.txt").write_text("TOPSECRET\n")
    (ws / "keys" / "id").write_text("KEYDATA\n")
    mounted = False
    try:
        async with shellrt.Runtime(
            workspace=ws,
            sandbox=sandbox,
            mode="bypassPermissions",
            session_dir=base / "s",
            settings_files=(),
            deny=("Read(./secret.txt)", "Read(./keys/**)"),
        ) as rt:
            before = await one_call(rt, "Read", file_path=str(ws / "secret.txt"))
            assert before["is_error"], before
            subprocess.run(["mount", "--bind", str(ws), str(alias)], check=True)
            mounted = True
            seen = [
                await one_call(rt, "Read", file_path=str(alias / "secret.txt")),
                await one_call(rt, "Read", file_path=str(alias / "keys" / "id")),
                await one_call(rt, "Grep", pattern="SECRET|DATA", path=str(alias), output_mode="content"),
            ]
        for result in seen[:2]:
            assert result["is_error"] and "read-denied" in str(result["content"]), seen
        for result in seen:
            assert "TOPSECRET" not in str(result["content"]) and "KEYDATA" not in str(result["content"]), seen
    finally:
        if mounted:
            subprocess.run(["umount", str(alias)], check=False)
        shutil.rmtree(base, ignore_errors=True)
