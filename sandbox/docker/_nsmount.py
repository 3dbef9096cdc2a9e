"""Mount host directories into a running container's mount namespace, from the host (root).

A plain bind cannot cross mount namespaces: each source is cloned with ``open_tree`` before the
join and attached with ``move_mount`` after it, in a short-lived single-threaded child (a threaded
process cannot join a mount namespace; `sandbox.docker._detach.run_child`). One child serves every
mount of a step, so a container start or a reset pays one fork whatever it mounts.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.docker._detach import run_child
from sandbox.errors import BackendUnavailableError

__all__ = ["NsMount", "NsReconfigure", "mount_into", "super_options", "top_mounts"]

#: argv: the namespace, then per mount: source, target, "ro"|"rw", "replace"|"stack". Every tree
#: is cloned (and made read-only where asked) before the join; "replace" detaches the target's top
#: mount first (one that is there: a reset's previous one). "reconfigure" (source "-", the third
#: field ``key=value``) sets one option of the file system mounted at the target after the join,
#: through ``fspick`` (the mount's own flags stay as they are, which a ``MS_REMOUNT`` would reset).
_SCRIPT = """
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def fail(what):
    sys.exit(what + ": " + os.strerror(ctypes.get_errno()))
args = sys.argv[2:]
plan = []
for i in range(0, len(args), 4):
    source, target, mode, how = args[i:i + 4]
    if how == "reconfigure":
        plan.append((None, target, mode))
        continue
    tree = libc.syscall(428, -100, source.encode(), 1 | 0o2000000)  # open_tree CLONE|CLOEXEC
    if tree < 0:
        fail("open_tree " + source)
    if mode == "ro":
        attr = struct.pack("QQQQ", 1 | 2 | 4 | 8, 0, 0, 0)  # RDONLY NOSUID NODEV NOEXEC
        if libc.syscall(442, tree, b"", 0x1000, attr, len(attr)) != 0:  # mount_setattr EMPTY_PATH
            fail("mount_setattr " + source)
    plan.append((tree, target, how))
ns = os.open(sys.argv[1], os.O_RDONLY | os.O_CLOEXEC)
if libc.setns(ns, 0x00020000) != 0:  # CLONE_NEWNS
    fail("setns")
for tree, target, how in plan:
    if tree is None:
        key, _, value = how.partition("=")
        fs = libc.syscall(433, -100, target.encode(), 1)  # fspick CLOEXEC
        if fs < 0:
            fail("fspick " + target)
        if libc.syscall(431, fs, 1, key.encode(), value.encode(), 0) != 0:  # fsconfig SET_STRING
            fail("fsconfig " + key)
        if libc.syscall(431, fs, 7, None, None, 0) != 0:  # fsconfig CMD_RECONFIGURE
            fail("reconfigure " + target)
        continue
    if how == "replace" and libc.umount2(target.encode(), 2) != 0:  # MNT_DETACH
        fail("umount2 " + target)
    if libc.syscall(429, tree, b"", -100, target.encode(), 4) != 0:  # move_mount F_EMPTY_PATH
        fail("move_mount " + target)
"""


@dataclass(frozen=True, slots=True)
class NsReconfigure:
    """One option (``key``, ``value``) to set on the file system mounted at ``target``."""

    target: str
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class NsMount:
    """One host directory to show at ``target`` in the container."""

    source: str
    target: str
    read_only: bool = False
    #: Detach the mount now on top of ``target`` first (a reset's fresh cgroup over the last one).
    replace: bool = False


def mount_into(pid: int, mounts: list[NsMount | NsReconfigure], why: str) -> None:
    """Mount (or reconfigure) each of ``mounts`` in the mount namespace of ``pid``, in order;
    `BackendUnavailableError` naming ``why`` if any step fails (fail closed: the caller checks
    what is there after)."""
    if not mounts:
        return
    argv: list[str] = []
    for m in mounts:
        if isinstance(m, NsReconfigure):
            argv += ["-", m.target, f"{m.key}={m.value}", "reconfigure"]
        else:
            argv += [m.source, m.target, "ro" if m.read_only else "rw", "replace" if m.replace else "stack"]
    proc = run_child(_SCRIPT, f"/proc/{pid}/ns/mnt", *argv)
    if proc.returncode != 0:
        raise BackendUnavailableError(f"could not {why}: {proc.stderr.strip()[-300:]}")


def top_mounts(pid: int, target: str) -> list[tuple[str, bool]]:
    """The mounts at ``target`` in the mount namespace of ``pid``, oldest first: (fs type,
    read-only per mount)."""
    found: list[tuple[str, bool]] = []
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            fields = line.split()
            if fields[4:5] == [target] and " - " in line:
                found.append((line.split(" - ")[1].split()[0], "ro" in fields[5].split(",")))
    return found


def super_options(pid: int, target: str) -> list[str]:
    """The super block options of the top mount at ``target`` in the mount namespace of ``pid``."""
    found: list[str] = []
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.split()[4:5] == [target] and " - " in line:
                tail = line.split(" - ")[1].split()
                found = tail[2].split(",") if len(tail) > 2 else []
    return found
