"""Commands in a memory cgroup of their own, below their container's (red team round 25).

Round 24 put every command at ``oom_score_adj`` 1000 so the OOM killer takes a command, not the
executor; but a command may lower its own score back to the container's (lowering below it needs
``CAP_SYS_RESOURCE``, which no process in the container holds, the daemon here neither). A command
at the executor's score that spawned a thousand small processes (each smaller than the executor,
a dash) made the executor the victim and the container was replaced.

So on a root host with a cgroup v1 memory hierarchy the host makes ``shellrt-cmds`` in the
container's memory cgroup, limited to the ceiling minus the executor's reserve, owned by the
executor's uid (a root command, uid 0 without capabilities, is then not its owner and cannot
raise its limit), and mounts it in the container at `COMMANDS_CGROUP`. ``priv drop`` moves every
command there before it drops its identity: a command's memory, whatever it holds (heap, tmpfs,
pipes, inodes), is charged there, and an OOM there chooses among commands only. The executor, its
runners and helpers stay in the container's own cgroup, which the commands can no longer fill.
Elsewhere (a non-root host, cgroup v2, whose "no internal processes" rule forbids a child next to
the executor) the round 24 scores and sizes remain the defence.
"""

from __future__ import annotations

import os

from sandbox.docker._detach import run_child
from sandbox.errors import BackendUnavailableError

__all__ = [
    "CHILD",
    "COMMANDS_CGROUP",
    "container_memory_cgroup",
    "make_commands_cgroup",
    "mount_commands_cgroup",
]

#: Where the commands' cgroup directory shows in the container (``priv.c`` moves each command into
#: its ``cgroup.procs``; ``executor.sh`` reads its ``memory.oom_control``).
COMMANDS_CGROUP = "/.shellrt-cmds"
#: The child cgroup's name (``priv.c`` checks ``/proc/self/cgroup`` ends with it).
CHILD = "shellrt-cmds"
_V1_MEMORY = "/sys/fs/cgroup/memory"

#: Joins ``/proc/<pid>/ns/mnt`` and mounts there a clone of a host directory (open_tree before
#: the join, move_mount after it: a plain bind cannot cross mount namespaces). In a child
#: (`sandbox.docker._detach.run_child`): a threaded process cannot join a mount namespace.
_CHILD_SCRIPT = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
tree = libc.syscall(428, -100, sys.argv[2].encode(), 1 | 0o2000000)  # open_tree CLONE|CLOEXEC
if tree < 0:
    sys.exit("open_tree: " + os.strerror(ctypes.get_errno()))
ns = os.open(sys.argv[1], os.O_RDONLY | os.O_CLOEXEC)
if libc.setns(ns, 0x00020000) != 0:  # CLONE_NEWNS
    sys.exit("setns: " + os.strerror(ctypes.get_errno()))
if libc.syscall(429, tree, b"", -100, sys.argv[3].encode(), 4) != 0:  # move_mount F_EMPTY_PATH
    sys.exit("move_mount: " + os.strerror(ctypes.get_errno()))
"""


def container_memory_cgroup(pid: int) -> str | None:
    """The v1 memory cgroup directory of the container whose init is ``pid`` (host view), or None
    where there is none to use: cgroup v2, no memory hierarchy mounted here, not root."""
    if os.geteuid() != 0 or not os.path.isfile(os.path.join(_V1_MEMORY, "memory.limit_in_bytes")):
        return None
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(",") and path.startswith("/") and ".." not in path.split("/"):
            found = os.path.join(_V1_MEMORY, path.lstrip("/"))
            return found if os.path.isfile(os.path.join(found, "memory.limit_in_bytes")) else None
    return None


def make_commands_cgroup(parent: str, limit: int, owner: int) -> str:
    """``parent``/`CHILD`, limited to ``limit`` bytes (memory and, where swap is counted, memory
    plus swap), its directory and files owned by ``owner``; its path."""
    child = os.path.join(parent, CHILD)
    os.makedirs(child, exist_ok=True)
    for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
        path = os.path.join(child, name)
        if name == "memory.limit_in_bytes" or os.path.exists(path):
            with open(path, "w", encoding="ascii") as fh:
                fh.write(str(limit))
    os.chown(child, owner, owner)
    for name in os.listdir(child):
        os.chown(os.path.join(child, name), owner, owner, follow_symlinks=False)
    return child


def mount_commands_cgroup(pid: int, child: str) -> None:
    """Mount ``child`` at `COMMANDS_CGROUP` in the mount namespace of ``pid``, then check it is
    there (fail closed: a command would otherwise run outside it)."""
    proc = run_child(_CHILD_SCRIPT, f"/proc/{pid}/ns/mnt", child, COMMANDS_CGROUP)
    if proc.returncode != 0:
        raise BackendUnavailableError(
            f"could not give the container's commands a memory cgroup of their own: {proc.stderr.strip()[-300:]}"
        )
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as fh:
        kinds = [line.split(" - ")[1].split()[0] for line in fh if line.split()[4:5] == [COMMANDS_CGROUP]]
    if not kinds or kinds[-1] != "cgroup":
        raise BackendUnavailableError(
            f"{COMMANDS_CGROUP} is not the commands' cgroup in the container ({kinds})"
        )
