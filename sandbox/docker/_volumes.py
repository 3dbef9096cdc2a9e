"""Image volumes, made read-only inside a running container.

An image's ``VOLUME`` makes docker mount a fresh anonymous volume there, filled
with the image's files: a writable directory on the otherwise read-only root,
and docker refuses a read-only anonymous volume. A root command (per call, or
``user: "0:0"``) could then rewrite root-owned image files there, e.g. the
``/etc/passwd`` the executor resolves per-call users from when an image
declares ``VOLUME /etc``; anyone could write a world-writable one. So before the
session takes its first command the host joins the container's mount namespace
(a short-lived child: a multi-threaded process cannot) and sets each volume's
mount read-only (``mount_setattr(MOUNT_ATTR_RDONLY)``), then checks the
container's mountinfo (fail closed). Not with ``root_can_administer``, whose
root is writable by design.

``/dev`` and ``/sys/fs/cgroup`` (`TOP_ONLY`) are frozen the same way, their own
mounts only (``/dev/shm``, ``/dev/mqueue``, ``/dev/pts`` stay writable, the
cgroup controllers are read-only already): docker makes both tmpfs owned by uid
0, so a root command without any capability could unlink ``/dev/null`` and
plant a file or a symlink there, which the executor's redirections then follow
as its own identity, or ``chmod`` ``/sys/fs/cgroup`` and plant the
``memory.events`` the executor reads its OOM count from (a forged or hidden
``oom_killed``). Red team round 16. A device node on a read-only mount still
reads and writes.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Mapping

from sandbox.errors import BackendUnavailableError

__all__ = ["TOP_ONLY", "image_volume_targets", "make_read_only"]

#: Mounts made read-only without their submounts, in every container (a root host).
TOP_ONLY = ("/dev", "/sys/fs/cgroup")

_CHILD = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("set", "clr", "propagation", "userns_fd")]
mnt = os.open(sys.argv[1], os.O_RDONLY | os.O_CLOEXEC)
if libc.setns(mnt, 0x00020000) != 0:  # CLONE_NEWNS: root and cwd become the container's
    sys.exit("setns: " + os.strerror(ctypes.get_errno()))
attr = Attr(0x00000001, 0, 0, 0)  # MOUNT_ATTR_RDONLY
for arg in sys.argv[2:]:
    # mount_setattr(AT_FDCWD, target, AT_SYMLINK_NOFOLLOW [| AT_RECURSIVE], &attr, size); "1:" top only
    top, target = arg[0] == "1", arg[2:]
    flags = 0x100 if top else 0x100 | 0x8000
    if libc.syscall(442, -100, target.encode(), flags, ctypes.byref(attr), ctypes.sizeof(attr)) != 0:
        sys.exit("mount_setattr " + target + ": " + os.strerror(ctypes.get_errno()))
"""


def image_volume_targets(mounts: Iterable[Mapping[str, object]]) -> list[str]:
    """The container paths of its volume mounts (``docker inspect``'s ``Mounts``): the image's
    VOLUMEs (shellrt itself mounts no volume)."""
    return sorted(str(m["Destination"]) for m in mounts if m.get("Type") == "volume")


def make_read_only(pid: int, targets: list[str], top_only: Iterable[str] = ()) -> None:
    """Make each mount at ``targets`` (with its submounts) and at ``top_only`` (its own mount alone)
    read-only in the mount namespace of ``pid``, then check it."""
    tops = list(top_only)
    if not targets and not tops:
        return
    args = [f"0:{t}" for t in targets] + [f"1:{t}" for t in tops]
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _CHILD, f"/proc/{pid}/ns/mnt", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if proc.returncode != 0:
        raise BackendUnavailableError(
            f"could not make the image's VOLUME mounts or /dev read-only ({proc.stderr.strip()[-300:]}); "
            "use an image without VOLUME instructions"
        )
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as fh:
        options = {f[4]: f[5].split(",") for f in (line.split() for line in fh) if len(f) > 5}
    writable = [t for t in [*targets, *tops] if "ro" not in options.get(t, [])]  # not found: not judged ro
    if writable:
        raise BackendUnavailableError(f"the container's mounts {writable} (VOLUMEs, /dev) are still writable")
