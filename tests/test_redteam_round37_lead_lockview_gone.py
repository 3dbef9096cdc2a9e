"""Round 37 (lead): a host mount that goes away mid-session stopped every later session command.

The lock view (round 37, locks) is planned once per session: each init replays an overlay per
read-only host directory and moves every mount that was below it (host binds, the sandbox's own
masks) back on top. A host mount below such a directory that the host then unmounts and removes
(another session's socket bind, a container's layer, an automount) propagates out of the
sandbox's mount namespace too, and the init's move of it failed: "cannot start the command: mount
/dev/.shellrt-lockview/h/...: No such file or directory" for every command once the warm pool was
used up (seen in CI, where tests mount and unmount under /var/tmp side by side). A move whose
source or target is gone has nothing to keep on top: skipped; every other failure still fails
the command (closed).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _static_build, _zinit
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

pytestmark = pytest.mark.bwrap


@pytest.mark.parametrize("init", ["c", "python"])
def test_a_host_mount_unmounted_mid_session_stops_no_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    """Failed before: the commands after the pool ran dry could not start (ENOENT on the move),
    1 of 1 with the C init."""
    require_bwrap()
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided again for this init
    monkeypatch.setattr(_static_build, "_built", {})
    require(os.geteuid() == 0, "mounting on the host needs root")
    ws = tmp_path / "ws"
    ws.mkdir()
    host = Path(tempfile.mkdtemp(prefix="shellrt-lv-", dir="/var/tmp"))
    host.chmod(0o755)  # the sandbox runs as a leased uid
    (host / "src").mkdir()
    (host / "dst").mkdir()
    (host / "src" / "f").write_text("bound\n")
    subprocess.run(["mount", "--bind", str(host / "src"), str(host / "dst")], check=True)
    mounted = True
    outs: list[tuple[int, str]] = []
    try:

        async def main() -> None:
            nonlocal mounted
            backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
            async with supervised(backend, tmp_path / "s") as sup:
                first = await sup.run(f"cat {host}/dst/f", timeout_s=60)
                assert first.exit_code == 0 and "bound" in first.preview, first.preview
                subprocess.run(["umount", str(host / "dst")], check=True)
                mounted = False
                (host / "dst").rmdir()
                for _ in range(8):  # past the warm pool: inits made after the unmount
                    result = await sup.run("echo ran", timeout_s=60)
                    outs.append((result.exit_code, result.preview))
                    await anyio.sleep(0.05)

        anyio.run(main)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(host / "dst")], check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", str(host)], check=False)
    assert all(code == 0 and "ran" in text for code, text in outs), outs
