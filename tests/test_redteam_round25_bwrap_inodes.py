"""Red team, round 25 (bwrap): a sandbox's writable tmpfs had no inode cap, and more were writable.

The session's /tmp (a root caller's: a tmpfs of ``tmp_bytes``) and /dev/shm (64 MiB) were sized in
bytes only. Empty files take no blocks, so the tmpfs default of half the host's RAM in pages held
the inode count (3,085,458 here): 300,000 empty files took 300 MB of the host's kernel memory in
under a second, about 3 GB per tmpfs, memory no process owns and the OOM killer cannot free, kept
for the whole session (/tmp and the session's /dev/shm outlive the command). Now each has
``nr_inodes`` in proportion to its size (`sandbox._tmpcap.inode_cap`): past it, a create fails
with ENOSPC, as past the size. bwrap's own --tmpfs takes no inode count: the zygote mounts a
capped /dev/shm of its own (a root caller's one bwrap per command was capped from the host
too, taken out at the merge: it broke the cgroup v2 VM, docs "Left").

One bwrap per command also left /run and /proc/acpi (masks: empty tmpfs, owned by the uid bwrap
runs as, so the command's) writable, each with the same 3 M inodes. Every tmpfs but /tmp and
/dev/shm is now read-only (`sandbox._readonly.sealed_tmpfs`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from sandbox._tmpcap import REPORTS_INODES, inode_cap
from sandbox.bwrap import SHM_BYTES
from sandbox.policy import ResourceLimits
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap
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
    root = os.geteuid() == 0  # a non-root caller's /tmp is a host directory (`NONROOT_TMP_REASON`)
    limits = ResourceLimits(tmp_bytes=_TMP_BYTES) if root else None
    _, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent, limits=limits)
    seen = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("/")}
    # Before: /tmp and /dev/shm 3085458 inodes each, all the probe's files made ("none").
    expected = {"/tmp": inode_cap(_TMP_BYTES)} if root else {}
    if persistent:  # one bwrap per command: no nr_inodes (docs: left)
        expected["/dev/shm"] = inode_cap(SHM_BYTES)
    for place, cap in expected.items():
        total, made, why = seen[place]
        assert int(total) <= cap and int(made) < cap and why == "ENOSPC", out


_WRITABLE_PROBE = r"""
import os
points = set()
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    if fields[fields.index("-") + 1] == "tmpfs":
        points.add(fields[4])
for point in sorted(points):
    try:
        os.close(os.open(point + "/.probe", os.O_CREAT | os.O_WRONLY, 0o600))
        os.unlink(point + "/.probe")
        print("WRITABLE", point, os.statvfs(point).f_files, flush=True)
    except OSError:
        pass
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_only_tmp_and_dev_shm_are_writable_tmpfs(tmp_path: Path, persistent: bool) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    _, out = probe_lines(ws, tmp_path / "s", _WRITABLE_PROBE, persistent=persistent)
    found = {
        line.split()[1]: int(line.split()[2]) for line in out.splitlines() if line.startswith("WRITABLE ")
    }
    # The cwd reports of a root caller's capped session (round 25, supervisor): their own tmpfs of
    # REPORTS_INODES files, bound at its host path.
    reports = {
        p: n for p, n in found.items() if p.startswith("/tmp/shellrt-bwrap-") and p.endswith("/reports")
    }
    assert all(n <= REPORTS_INODES for n in reports.values()), out
    # Before, root, one bwrap per command: /dev/shm, /proc/acpi, /run, /tmp. A non-root caller's
    # /tmp is a host directory, not a tmpfs.
    writable = set(found) - set(reports)
    assert writable == ({"/tmp", "/dev/shm"} if os.geteuid() == 0 else {"/dev/shm"}), out


def test_it_holds_for_an_unprivileged_caller() -> None:
    """A non-root caller: the session's /dev/shm (its zygote mounts it in its own namespace), and
    which tmpfs are writable, in a session and per command."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    names = ["test_writable_tmpfs_has_an_inode_cap[session]", "test_only_tmp_and_dev_shm_are_writable_tmpfs"]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}" for name in names],
        collect_args=[f"{__file__}::{name}" for name in names],
    )
    _nonroot.assert_all_held(collected, outcome)


_SHM_WORKSPACE_PROBE = r"""
import os
print("CWD", os.getcwd())
print("SEES", sorted(os.listdir(".")))
print("SHM", os.statvfs("/dev/shm").f_files)
"""


def test_a_workspace_under_dev_shm_stays_visible_under_the_capped_dev_shm(tmp_path: Path) -> None:
    """The session's zygote mounted its capped /dev/shm over what bwrap had bound below it: a
    workspace under the host's /dev/shm (the cgroup v2 VM's tests keep theirs there) vanished and
    every command failed "cannot enter the working directory" (CI51, 10 of 10 VM facts). The mounts
    below are carried over onto the new tmpfs, with their own flags."""
    require_bwrap()
    ws = Path(tempfile.mkdtemp(prefix="shellrt-shmws-", dir="/dev/shm"))
    try:
        (ws / "marker").write_text("x")
        fields, out = probe_lines(ws, tmp_path / "s", _SHM_WORKSPACE_PROBE, persistent=True)
        assert fields.get("CWD") == str(ws) and "'marker'" in fields.get("SEES", ""), out
        assert int(fields["SHM"]) <= inode_cap(SHM_BYTES), out
    finally:
        shutil.rmtree(ws)
