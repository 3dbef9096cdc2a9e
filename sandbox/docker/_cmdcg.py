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

A reset makes the cgroup anew (`renew_commands_cgroup`, round 39): no v1 counter can be zeroed,
and the next task on a recycled container must not read what the last one left in it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time

from sandbox.docker._detach import detach_top
from sandbox.docker._nsmount import NsMount, mount_into, top_mounts
from sandbox.docker._pidref import PidRef
from sandbox.docker._tcpmem import cap_socket_memory
from sandbox.errors import BackendUnavailableError

__all__ = [
    "CHILD",
    "COMMANDS_CGROUP",
    "check_commands_cgroup",
    "commands_mount",
    "container_memory_cgroup",
    "detach_commands_cgroup",
    "make_commands_cgroup",
    "renew_commands_cgroup",
]

#: Where the commands' cgroup directory shows in the container (``priv.c`` moves each command into
#: its ``cgroup.procs``; ``executor.sh`` reads its ``memory.oom_control``).
COMMANDS_CGROUP = "/.shellrt-cmds"
#: The child cgroup's name (``priv.c`` checks ``/proc/self/cgroup`` ends with it).
CHILD = "shellrt-cmds"
_V1_MEMORY = "/sys/fs/cgroup/memory"

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


def commands_mount(child: str, *, replace: bool = False) -> NsMount:
    """``child``'s mount at `COMMANDS_CGROUP` (``replace``: over the previous task's, at a reset)."""
    return NsMount(source=child, target=COMMANDS_CGROUP, replace=replace)


def check_commands_cgroup(ref: PidRef) -> None:
    """`COMMANDS_CGROUP` in the mount namespace of ``ref``'s process is one cgroup mount, on top (fail
    closed: a command would otherwise run outside it, or in the last task's)."""
    kinds = [kind for kind, _ro in top_mounts(ref, COMMANDS_CGROUP)]
    if not kinds or kinds[-1] != "cgroup" or kinds.count("cgroup") != 1:
        raise BackendUnavailableError(
            f"{COMMANDS_CGROUP} is not the commands' cgroup in the container ({kinds})"
        )


def detach_commands_cgroup(ref: PidRef) -> None:
    """root_can_administer, once the executor's ``priv boot-admin`` holds the cgroup (``CMDS_FD``, priv.c):
    no path in the container names it any more. A uid-0 command there holds ``CAP_DAC_OVERRIDE``,
    which ignores its files' owner (the executor's uid): through the mount it disabled the OOM
    killer of later commands, raised their limit into the executor's reserve, moved any process into
    it and made child cgroups, memory cgroups of the host's (round 54). What stays at the path is the
    empty read-only directory from before the mount. Fail closed: a cgroup mount left there stops
    the start."""
    pid = detach_top(ref, COMMANDS_CGROUP)
    kinds = [kind for kind, _ro in top_mounts(ref, COMMANDS_CGROUP)]
    if "cgroup" in kinds or ref.alive() != pid:
        raise BackendUnavailableError(
            f"{COMMANDS_CGROUP} is still the commands' cgroup in the container after detaching it ({kinds})"
        )


def renew_commands_cgroup(ref: PidRef, parent: str, limit: int, owner: int, tcp_cap: int) -> None:
    """A reset's fresh commands' cgroup (round 39): the previous task's is emptied of its cached
    pages and removed (its counters with it: none can be zeroed), a new one made as at the start
    and mounted in its place. Blocking; ``OSError`` or `BackendUnavailableError` on any doubt (the
    caller refuses the container). Only after a reset proved no command process is left."""
    old = os.path.join(parent, CHILD)
    # Best effort: the pages otherwise go to the parent.
    with contextlib.suppress(OSError), open(os.path.join(old, "memory.force_empty"), "w", encoding="ascii") as fh:
        fh.write("0")
    deadline = time.monotonic() + 1.0
    while True:
        try:
            os.rmdir(old)
            break
        except OSError as exc:
            # EBUSY while a killed process is still leaving it.
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    child = make_commands_cgroup(parent, limit, owner)
    cap_socket_memory((child,), tcp_cap)
    mount_into(ref, [commands_mount(child, replace=True)], "give the next task's commands a fresh memory cgroup")
    check_commands_cgroup(ref)
    ref.alive()
