"""Red team, round 27 (bwrap): a non-root caller's one bwrap per command had an uncapped /dev/shm.

bubblewrap 0.8's ``--tmpfs`` takes no ``nr_inodes``: a command's /dev/shm held the tmpfs default
(~3 M inodes, ~3 GB of kernel memory while it ran; round 26 "Left"). A root caller's commands bind
a directory of a capped pool (round 26); a non-root caller's now get a tmpfs of 64 MiB and 16,384
inodes that the sealed starter mounts in a user and mount namespace of the caller's own before
bwrap (`sandbox._bwrap_shm`), bound at /dev/shm. FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_shm
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require
from tests.test_redteam_round26_bwrap_shm import CAP, FILL  # makes files until ENOSPC or CAP+100

pytestmark = pytest.mark.bwrap

#: The next command's view: what is left there, whether POSIX shared memory still works, and
#: that the starter's namespace gave it nothing (fds 0-2, no capability, bwrap's init none either).
AFTER = (
    "echo MODE $(stat -c %a /dev/shm); echo LEFT $(ls -A /dev/shm | wc -l); echo FDS $(ls /proc/self/fd | tr '\\n' ' '); "
    "grep -h '^CapBnd' /proc/self/status /proc/1/status | tr -s '\\t\\n' '  '; echo; "
    "python3 -c 'from multiprocessing import shared_memory as s; m = s.SharedMemory(create=True, size=64);"
    ' m.close(); m.unlink(); print("POSIX ok")\''
)


def test_a_commands_dev_shm_is_capped_and_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As uid 65534 failed before (1 of 1): 16,484 of 16,484 files made, 3,085,474 inodes."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    _commands_run_with_the_temp_dir_under_dev_shm(tmp_path, monkeypatch)

    async def main() -> tuple[str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            filled = (await sup.run(FILL, timeout_s=120)).preview
            return filled, (await sup.run(AFTER, timeout_s=60)).preview

    filled, after = anyio.run(main)
    assert "MADE" in filled, filled
    made, files = int(filled.split("MADE", 1)[1].split()[0]), int(filled.split("FILES", 1)[1].split()[0])
    assert made <= CAP and files <= CAP, f"/dev/shm took {made} files, has {files} inodes (cap {CAP})"
    assert "MODE 1777" in after and "LEFT 0" in after and "POSIX ok" in after, after
    assert "FDS 0 1 2 3\n" in after, after  # 3: ls's own listing
    assert after.count("CapBnd: 0000000000000000") == 2, after


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    name = "test_a_commands_dev_shm_is_capped_and_its_own"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)


def _commands_run_with_the_temp_dir_under_dev_shm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's temp directory under the host's /dev/shm (a VM's, CI61): the capped tmpfs was
    mounted over /dev/shm itself and hid the session's /tmp from bwrap ("Can't find source path"),
    so every command failed (1 of 1 as 65534 before the mount point moved to the backend's own
    empty directory). Non-root only: a root caller's leased uid cannot pass this 0700 directory."""
    if os.geteuid() == 0 or not os.path.isdir("/dev/shm"):
        return
    under_shm = tempfile.mkdtemp(prefix="rt27shm-", dir="/dev/shm")
    try:
        with monkeypatch.context() as patched:
            patched.setattr(tempfile, "tempdir", under_shm)  # the backend's OwnedDir lands there

            async def main() -> str:
                backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=tmp_path / "ws"))
                async with supervised(backend, tmp_path / "s-shm") as sup:
                    return (await sup.run("echo RAN; touch /tmp/x && echo TMP", timeout_s=60)).preview

            out = anyio.run(main)
    finally:
        shutil.rmtree(under_shm, ignore_errors=True)
    assert "RAN" in out and "TMP" in out, out


def test_a_refused_namespace_leaves_commands_uncapped_not_failing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """Where the kernel refuses the starter its namespace or mount (an AppArmor userns restriction),
    the one try before the first command says so and commands start as before, uncapped."""
    monkeypatch.setattr(_bwrap_shm.os, "geteuid", lambda: 1000)  # as a non-root caller would decide
    fd = os.open("/dev/null", os.O_RDONLY)
    try:
        cap = _bwrap_shm.ShmCap(64 << 20)
        refusing = ["/bin/sh", "-c", "echo 'unshare: Operation not permitted' >&2; exit 125", "sh"]
        with caplog.at_level("WARNING", logger="sandbox._bwrap_shm"):
            cap.decide(fd, str(tmp_path), str(tmp_path), refusing, ["/bin/true"])
        assert cap.decided and cap.argv(fd, str(tmp_path), str(tmp_path)) == []
        assert "uncapped /dev/shm" in caplog.text and "Operation not permitted" in caplog.text
        works = _bwrap_shm.ShmCap(64 << 20)
        works.decide(fd, str(tmp_path), str(tmp_path), ["/bin/sh", "-c", "exit 0", "sh"], ["/bin/true"])
        assert works.argv(fd, str(tmp_path), str(tmp_path))[1:3] == ["shm", str(tmp_path)]
    finally:
        os.close(fd)
