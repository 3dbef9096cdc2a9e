"""What commands see at ``/sys/fs/cgroup``: the container's limits, none of its counters (round 39).

A recycled container keeps its cgroups, and no reset can zero a v1 counter: every command read
the previous task's peak memory (``memory.max_usage_in_bytes``), CPU time (``cpuacct.usage``),
page faults and page-ins (``memory.stat``), OOM kills, pids and block I/O there, numbers of that
task's choosing carried to the next one, which must not talk. So on a root host the container's
``/sys/fs/cgroup`` is covered, before anything of the image runs, by a read-only copy holding only
the files programs size themselves by (`LIMIT_FILES`: a JVM's heap, Go's and node's CPU and
memory limits), taken from the container's own cgroup at its start. An allow-list: a counter file
a newer kernel adds stays hidden. The commands' own memory cgroup (`sandbox.docker._cmdcg`) is
made afresh at each reset instead: within a task its counters are the task's own.

The copy is static: shellrt sets these limits before the container starts and never after.
"""

from __future__ import annotations

import os
import stat

from sandbox.docker._nsmount import NsMount, top_mounts
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["CGROUP_ROOT", "LIMIT_FILES", "build_view", "check_view", "view_mount"]

#: Where the container's cgroup file systems are (docker, cgroup v1 and v2 alike).
CGROUP_ROOT = "/sys/fs/cgroup"
#: Per controller directory, the files copied: limits and settings, never a counter.
LIMIT_FILES: dict[str, tuple[str, ...]] = {
    "memory": (
        "memory.limit_in_bytes",
        "memory.memsw.limit_in_bytes",
        "memory.soft_limit_in_bytes",
        "memory.swappiness",
        "memory.use_hierarchy",
    ),
    "cpu": ("cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.shares"),
    "cpuset": ("cpuset.cpus", "cpuset.mems", "cpuset.effective_cpus", "cpuset.effective_mems"),
    "pids": ("pids.max",),
}
_MAX_FILE = 64 * 1024


def _controllers(name: str) -> list[str]:
    """``cpu,cpuacct`` -> its controllers."""
    return [part for part in name.split(",") if part]


def _copy_limits(src_dir: str, dest_dir: str, names: list[str]) -> None:
    os.mkdir(dest_dir, 0o755)
    for controller in names:
        for file in LIMIT_FILES.get(controller, ()):
            try:
                fd = os.open(os.path.join(src_dir, file), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # not on this kernel or hierarchy
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise BackendUnavailableError(f"{src_dir}/{file} is not a cgroup file")
                data = os.read(fd, _MAX_FILE)
            finally:
                os.close(fd)
            out = os.open(os.path.join(dest_dir, file), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
            try:
                os.write(out, data)
            finally:
                os.close(out)


def build_view(pid: int, dest: str) -> None:
    """Fill the new directory ``dest`` with the limits of the container whose init is ``pid``, as
    its ``/sys/fs/cgroup`` shows them (read from the host before anything of the image runs;
    the tree is read-only there, `_devnodes.READONLY_PATHS`): directories, links between them,
    and `LIMIT_FILES`. Anything else (a file at the top, a link out) is left out."""
    src = f"/proc/{pid}/root{CGROUP_ROOT}"
    os.mkdir(dest, 0o755)
    with os.scandir(src) as entries:
        listed = sorted((e.name, e.is_symlink(), e.is_dir(follow_symlinks=False)) for e in entries)
    for name, is_link, is_dir in listed:
        if is_link:
            target = os.readlink(os.path.join(src, name))
            if "/" not in target and target not in (".", ".."):
                os.symlink(target, os.path.join(dest, name))
        elif is_dir:
            _copy_limits(os.path.join(src, name), os.path.join(dest, name), _controllers(name))
    os.chmod(dest, 0o555)


def view_mount(dest: str) -> NsMount:
    """The view's mount: read-only, over the container's cgroup tree."""
    return NsMount(source=dest, target=CGROUP_ROOT, read_only=True)


def check_view(ref: PidRef, before: int) -> None:
    """The container's ``/sys/fs/cgroup`` is the view: one mount more than the ``before`` there
    were, read-only, no cgroup file system (fail closed)."""
    stack = top_mounts(ref, CGROUP_ROOT)
    if len(stack) != before + 1 or stack[-1][0].startswith("cgroup") or not stack[-1][1]:
        raise BackendUnavailableError(f"{CGROUP_ROOT} in the container is not shellrt's read-only view ({stack})")
