"""Round 38 (lead): a host mount replaced mid-session by a plain directory stopped every later command.

Round 37 (lead) skipped a lock-view move whose host mount had gone away (ENOENT). CI102 found the
other half: the name is there again but is no longer a mount point -- the host unmounted and made
the directory again, or unlinked a masked socket and bound a new one at its name (a daemon
restarting; the round 38 review's test under /var/tmp did it to every session of the run) -- and the
init's ``MS_MOVE`` got EINVAL: "cannot start the command: mount /dev/.shellrt-lockview/h/...: Invalid
argument" for every later command. Nothing is left to keep on top there either (the mount is gone
from every namespace): skipped; any other failure still fails the command (closed).
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
def test_a_host_mount_replaced_by_a_directory_mid_session_stops_no_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    """Failed before: the commands after the pool ran dry could not start (EINVAL on the move)."""
    require_bwrap()
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided again for this init
    monkeypatch.setattr(_static_build, "_built", {})
    require(os.geteuid() == 0, "mounting on the host needs root")
    ws = tmp_path / "ws"
    ws.mkdir()
    host = Path(tempfile.mkdtemp(prefix="shellrt-lv38-", dir="/var/tmp"))
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
                (host / "dst").mkdir()  # the same name, no longer a mount point
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


def test_only_a_name_that_is_no_mount_is_skipped(tmp_path: Path) -> None:
    """The skip's guard: a mount point (still there: its move's EINVAL has another cause) is never
    taken for a name the host made again, so the move's failure still fails the command (closed)."""
    from sandbox import _zygote_main

    assert _zygote_main._not_a_mount(os.fsencode(tmp_path)) is True
    assert _zygote_main._not_a_mount(b"/proc") is False
    assert _zygote_main._not_a_mount(b"/") is False
    assert _zygote_main._not_a_mount(os.fsencode(tmp_path / "missing")) is False
    assert _zygote_main._not_a_mount(None) is False
