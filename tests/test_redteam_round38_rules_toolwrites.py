"""Red team round 38 (rules): the file tools wrote a write-denied file through its other names.

``Edit(./conf/app.ini)`` is judged by the permission layer against the path the tool names. Round 36
bound a write-denied file's other mounts' names read-only *for commands* (the policy's
``write_denied``) and round 11 its hard links, but the Write and Edit tools never looked at either:
with ``ws/conf`` bind-mounted at ``ws/mnt`` (before the session), at ``ws/mnt2`` (during it), or
``ws/h`` a hard link of the file, ``Read`` then ``Write`` of ``mnt/app.ini`` (and the others) replaced
the protected file, on local and bwrap (root caller; the tools run as the caller on every backend).
They are refused now: a write lands nowhere a write-denied path, another mount's name of one (the
table as it is now) or another link of one lies.
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
async def test_the_file_tools_write_no_write_denied_file_by_another_name(sandbox: str) -> None:
    require(os.geteuid() == 0, "making a bind mount needs root")
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="rt38-toolwrites-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    for d in ("conf", "mnt", "mnt2"):
        (ws / d).mkdir(parents=True)
    ws.chmod(0o777)
    app = ws / "conf" / "app.ini"
    app.write_text("ORIGINAL\n")
    os.link(app, ws / "h")
    mounted: list[Path] = []
    try:
        subprocess.run(["mount", "--bind", str(ws / "conf"), str(ws / "mnt")], check=True)
        mounted.append(ws / "mnt")
        async with shellrt.Runtime(
            workspace=ws,
            sandbox=sandbox,
            mode="bypassPermissions",
            session_dir=base / "s",
            settings_files=(),
            deny=("Edit(./conf/app.ini)",),
        ) as rt:
            subprocess.run(["mount", "--bind", str(ws / "conf"), str(ws / "mnt2")], check=True)
            mounted.append(ws / "mnt2")
            results = []
            for name in (ws / "mnt" / "app.ini", ws / "mnt2" / "app.ini", ws / "h"):
                await one_call(rt, "Read", file_path=str(name))
                results.append(await one_call(rt, "Write", file_path=str(name), content="PWNED\n"))
                results.append(
                    await one_call(rt, "Edit", file_path=str(name), old_string="ORIGINAL", new_string="PWNED")
                )
                assert app.read_text() == "ORIGINAL\n", (name, results)
        assert all(r["is_error"] and "protects from writes" in str(r["content"]) for r in results), results
    finally:
        for point in reversed(mounted):
            subprocess.run(["umount", str(point)], check=False)
        shutil.rmtree(base, ignore_errors=True)
