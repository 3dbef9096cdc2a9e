"""The host's verdict on a used container, from outside: may it serve another task?

`verify_pristine` reads only what commands cannot write: the executor's host
``/proc/<pid>`` entry (root, mounts, status, environ, network namespace), its
IPC namespace (joined by a host thread), and the daemon's ``docker diff``.
The checks themselves live in `sandbox.docker._reset`.

Round 42 (docker5): every read and the SysV wipe name the executor by its pidfd (`PidRef`), never
by number: the wipe *removes*, and by number it removed a host namespace's objects when the
executor's pid was reused during a reset, before the late liveness check refused the container.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import docker

from sandbox.docker._netcounters import NetCounters, counter_problems, read_counters
from sandbox.docker._pidref import PidRef
from sandbox.docker._pidrewind import rewind_pids
from sandbox.docker._reset import (
    ResetError,
    diff_problems,
    empty_dir,
    environment_problems,
    inspect_container,
    leftover_processes,
    open_sockets,
    parse_mountinfo,
    sysv_ipc_objects,
)
from sandbox.docker._root_inode import InodeState, restore_inode
from sandbox.errors import BackendUnavailableError

__all__ = [
    "EXECUTOR_CAPS",
    "EXECUTOR_ENV",
    "EXECUTOR_UID",
    "IO_ENTRIES",
    "IO_MOUNT",
    "PRIV_DIR",
    "OutsideView",
    "verify_pristine",
]

#: Where the host's I/O directory appears inside the container (read-only).
IO_MOUNT = "/.shellrt-io"
#: The executor's private tmpfs (slot locks; cwd files until round 32): mode 0711 (`_reset.PRIV_MODE`), owned by the executor, its mount point
#: on the read-only root, so no command (root or not) can rename or replace it.
PRIV_DIR = "/.shellrt-priv"
#: The executor's uid (and gid): never a command's.
EXECUTOR_UID = 2147480001
#: The executor's capabilities as a kernel bit mask: setuid, setgid, kill, sys_ptrace, setpcap,
#: dac_override, fowner, chown, sys_nice (see priv.c).
EXECUTOR_CAPS = sum(1 << bit for bit in (7, 6, 5, 19, 8, 1, 3, 0, 23))
#: The executor's whole environment.
EXECUTOR_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
#: What shellrt's I/O directory may hold between tasks.
IO_ENTRIES = frozenset({"executor.sh", "priv"})


@dataclass(frozen=True, slots=True)
class OutsideView:
    """Where the host looks at a container from: the executor's host process (by pidfd) and the daemon."""

    executor: PidRef
    executor_pid: int
    client: docker.DockerClient | None
    container_id: str | None


def verify_pristine(
    view: OutsideView,
    *,
    host_workspace: str,
    workspace_inode: InodeState,
    container_workspace: str,
    command_user: tuple[int, int],
    still_the_executor: Callable[[], object],
    isolation_word: str | None,
    net_counters: NetCounters | None,
) -> None:
    """Wait out the reaping, empty the workspace, inspect from outside; `ResetError` on any doubt.

    Blocking. ``workspace_inode`` is the workspace root's state when it was made (the reset
    returns it there). ``still_the_executor`` raises when the executor's host process
    is gone (checked last, so what was read was the container's). ``isolation_word``: the
    ``SHELLRT_ISO`` the executor announced at start (``priv exec`` sets it; None: not known, so
    any such entry is unexpected). ``net_counters``: the network namespace's counters before the
    image ran (`_netcounters`; None: not recorded, so the container is refused).
    """
    ref = view.executor
    with ExitStack() as stack:
        try:  # the executor's /proc alone: reads below fail once it ended
            proc = stack.enter_context(ref.proc_dir())
        except BackendUnavailableError as exc:
            raise ResetError(str(exc)) from exc
        problems, mountinfo = _inside_problems(
            ref,
            proc,
            view.executor_pid,
            host_workspace=host_workspace,
            workspace_inode=workspace_inode,
            container_workspace=container_workspace,
            command_user=command_user,
            isolation_word=isolation_word,
            net_counters=net_counters,
        )
    client, cid = view.client, view.container_id
    if client is None or cid is None:
        problems.append("the container is gone")
    else:
        # Docker creates the mount points (and their parents) in the writable layer; nothing else may be there.
        allowed = {"/"}
        for mount in parse_mountinfo(mountinfo):
            path = PurePosixPath(mount.mount_point)
            allowed.update(str(p) for p in (path, *path.parents))
        problems.extend(diff_problems(client.api.diff(cid) or [], allowed))
    still_the_executor()  # still the same process: what we read was the container's
    if problems:
        raise ResetError("; ".join(problems))
    # Only docker-init and the executor are left: the next task's pids start where every task's do.
    rewind_pids(ref.pid, still_the_executor)
    still_the_executor()


def _inside_problems(
    ref: PidRef,
    proc: str,
    executor_pid: int,
    *,
    host_workspace: str,
    workspace_inode: InodeState,
    container_workspace: str,
    command_user: tuple[int, int],
    isolation_word: str | None,
    net_counters: NetCounters | None,
) -> tuple[list[str], str]:
    """`verify_pristine`'s look inside, through the executor's own ``/proc`` directory ``proc``:
    every problem found, and the mountinfo read."""
    root = Path(proc) / "root"
    deadline = time.monotonic() + 2.0
    while leftover_processes(root, executor_pid) and time.monotonic() < deadline:
        time.sleep(0.005)  # docker-init reaps the killed orphans
    empty_dir(host_workspace)
    # The directory itself survives: what a task left on its inode goes too (`_root_inode`).
    kept = restore_inode(host_workspace, workspace_inode)
    with open(f"{proc}/mountinfo", encoding="utf-8", errors="replace") as fh:
        mountinfo = fh.read()
    with open(f"{proc}/status", encoding="utf-8", errors="replace") as fh:
        status = fh.read()
    problems = inspect_container(
        root,
        mountinfo=mountinfo,
        status=status,
        executor_pid=executor_pid,
        executor_uid=EXECUTOR_UID,
        executor_caps=EXECUTOR_CAPS,
        command_user=command_user,
        workspace=container_workspace.rstrip("/") or "/",
        io_mount=IO_MOUNT,
        io_entries=IO_ENTRIES,
        private_dir=PRIV_DIR,
    )
    problems.extend(f"the workspace root: {why}" for why in kept)
    ipc = sysv_ipc_objects(ref, remove=True)  # joined by pidfd: it removes (round 42)
    problems.extend(f"{n} SysV {kind} object(s) left" for kind, n in ipc.items() if n)
    sockets = open_sockets(proc)
    settle = time.monotonic() + 1.0
    while sockets and time.monotonic() < settle:
        time.sleep(0.02)  # a killed task's connections on the loopback end in microseconds
        sockets = open_sockets(proc)
    problems.extend(sockets)
    problems.extend(counter_problems(net_counters, read_counters(proc)))
    expected = (
        dict(EXECUTOR_ENV) if isolation_word is None else {**EXECUTOR_ENV, "SHELLRT_ISO": isolation_word}
    )
    problems.extend(environment_problems(proc, expected))
    return problems, mountinfo
