"""Round 37 (lead): sandboxed Grep/Glob refused every read-only host directory the lock view shows.

Inside a bwrap session ripgrep starts only in the directory the tool opened and judged: its cwd's
``stat -L`` device and inode had to be the host's. The lock view (round 37, locks) shows every
read-only host directory through an overlay of the command's own, whose device and inode are the
overlay's: Grep over ``/var/tmp/x`` answered "changed since it was checked" every time (CI:
`test_redteam_files.py::test_search_as_root_finds_only_what_the_sandboxs_user_reads`, 1 of 1).
There the real directory's ctime and mtime (ns), mode and owner are compared instead: a directory
swapped in (made, or renamed into place: a rename sets its ctime) still does not pass.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.tools._paths import _CWD_CHANGED, _SAME_CWD, _times
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap


def test_the_checked_directory_passes_and_a_twin_does_not(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    host = Path(tempfile.mkdtemp(prefix="shellrt-ovl-", dir="/var/tmp"))
    try:
        host.chmod(0o755)
        (host / "a").mkdir(mode=0o755)
        time.sleep(0.01)
        (host / "b").mkdir(mode=0o755)  # same mode and owner, another ctime: a swapped-in twin
        checked = os.stat(host / "a")
        outs: dict[str, tuple[int, str]] = {}

        def probe(where: str) -> str:
            identity = f"{checked.st_dev}:{checked.st_ino}"
            args = ["sh", identity, _times(checked), _CWD_CHANGED, "echo", "RAN"]
            return f"cd {shlex.quote(str(host / where))} && /bin/sh -c {shlex.quote(_SAME_CWD)} " + " ".join(
                shlex.quote(a) for a in args
            )

        async def main() -> None:
            backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
            async with supervised(backend, tmp_path / "s") as sup:
                for where in ("a", "b"):
                    result = await sup.run(probe(where) + " 2>&1", timeout_s=60)
                    outs[where] = (result.exit_code, result.preview)
                fs = await sup.run(f"stat -f -L -c %T {shlex.quote(str(host / 'a'))}", timeout_s=60)
                outs["fs"] = (fs.exit_code, fs.preview)

        anyio.run(main)
    finally:
        for name in ("a", "b"):
            (host / name).rmdir()
        host.rmdir()
    assert outs["fs"][1].strip() == "overlayfs", outs  # the case this test is about
    assert outs["a"] == (0, "RAN\n"), outs
    assert outs["b"][0] == 125 and _CWD_CHANGED in outs["b"][1], outs
