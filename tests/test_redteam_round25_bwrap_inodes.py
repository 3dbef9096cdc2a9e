"""Red team, round 25 (bwrap): a sandbox's writable tmpfs had no inode cap.

The session's /tmp (a root caller's: a tmpfs of ``tmp_bytes``) and /dev/shm (64 MiB) were sized in
bytes only. Empty files take no blocks, so the tmpfs default of half the host's RAM in pages held
the inode count (3,085,458 here): 300,000 empty files took 300 MB of the host's kernel memory in
under a second, about 3 GB per tmpfs, memory no process owns and the OOM killer cannot free, kept
for the whole session (/tmp and the session's /dev/shm outlive the command). Now each has
``nr_inodes`` in proportion to its size (`sandbox._tmpcap.inode_cap`): past it, a create fails
with ENOSPC, as past the size.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._tmpcap import inode_cap
from sandbox.bwrap import SHM_BYTES, BwrapBackend
from sandbox.policy import ResourceLimits
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

_TMP_BYTES = 16 << 20
#: Files the probe tries to make in each place: past either cap, and quick (~0.1 s).
_TRIES = inode_cap(SHM_BYTES) + 200
_PROBE = f"""
import errno, os
for place in ("/tmp", "/dev/shm"):
    made, why = 0, "none"
    try:
        for i in range({_TRIES}):
            os.close(os.open(f"{{place}}/f{{i}}", os.O_CREAT | os.O_WRONLY, 0o600))
            made += 1
    except OSError as exc:
        why = errno.errorcode.get(exc.errno, "?")
    for i in range(made):
        os.unlink(f"{{place}}/f{{i}}")
    print(place, os.statvfs(place).f_files, made, why, flush=True)
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_writable_tmpfs_has_an_inode_cap(tmp_path: Path, persistent: bool) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    command = f"echo {base64.b64encode(_PROBE.encode()).decode()} | base64 -d | python3 -"
    root = os.geteuid() == 0  # a non-root caller's /tmp is a host directory (`NONROOT_TMP_REASON`)
    limits = ResourceLimits(tmp_bytes=_TMP_BYTES) if root else ResourceLimits()
    policy = SandboxPolicy(workspace=ws, limits=limits)

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
        async with supervised(backend, tmp_path / "s") as sup:
            return (await sup.run(command, timeout_s=60)).preview

    out = anyio.run(main)
    seen = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("/")}
    # Before: /tmp and /dev/shm 3085458 inodes each, all the probe's files made ("none").
    expected = {"/tmp": inode_cap(_TMP_BYTES)} if root else {}
    if persistent:  # one bwrap per command: bubblewrap's own --tmpfs takes no nr_inodes (docs: left)
        expected["/dev/shm"] = inode_cap(SHM_BYTES)
    for place, cap in expected.items():
        total, made, why = seen[place]
        assert int(total) <= cap and int(made) < cap and why == "ENOSPC", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The session's /dev/shm of a non-root caller (its zygote remounts it in its own namespace)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    name = "test_writable_tmpfs_has_an_inode_cap[session]"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)
