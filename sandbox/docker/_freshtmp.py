"""A fresh tmpfs for each of a recycled container's tmpfs mounts (round 41, docker4).

A reset empties ``/tmp``, ``/dev/shm``, the ``TMPDIR`` slots and the executor's private tmpfs,
but a tmpfs numbers its inodes from a counter of its superblock that no wipe rewinds: a task that
made 1,234 files in ``/tmp`` left the next task's first file inode 1,237 instead of 3, and every
command's slot lock (``/.shellrt-priv/slot.<k>``, which its command may ``stat``) counted the
commands every earlier task ran. So after the reset's verdict the host replaces each of them with a
new tmpfs of the options the container was created with (detach, then mount, in the container's
mount namespace by pidfd), and checks that a tmpfs is on top and no mount was added or lost. Nothing of a task runs
during a reset, and the executor names these places by path, never by a descriptor it keeps.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.docker._detach import run_child
from sandbox.docker._mountscript import mount_script
from sandbox.docker._nsmount import top_mounts
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["renew_tmpfs"]

#: docker's ``tmpfs`` option words that are mount flags (the rest is the file system's data).
_FLAGS = {"rw": 0, "ro": 1, "nosuid": 2, "nodev": 4, "noexec": 8, "exec": 0}

#: argv: the pidfd's number, the number of binds, per bind: source, target; then per tmpfs: target,
#: flags, data. Each bind's tree is cloned (read-only, programs may run) before the join and replaces
#: the target's top mount after it (`_freshio`'s new I/O directory: one child serves both steps).
_SCRIPT = mount_script("""
nbinds = int(sys.argv[2])
binds = sys.argv[3:3 + 2 * nbinds]
args = sys.argv[3 + 2 * nbinds:]
trees = [(clone(binds[i], exec_ok=True), binds[i + 1]) for i in range(0, len(binds), 2)]
join(int(sys.argv[1]))
for i in range(0, len(args), 3):
    target, flags, data = args[i:i + 3]
    if libc.umount2(target.encode(), 2) != 0:  # MNT_DETACH: the task's superblock goes
        fail("umount2 " + target)
    if libc.mount(b"tmpfs", target.encode(), b"tmpfs", int(flags), data.encode()) != 0:
        fail("mount " + target)
for tree, target in trees:
    if libc.umount2(target.encode(), 2) != 0:  # MNT_DETACH: the last task's directory goes
        fail("umount2 " + target)
    attach(tree, target)
""")


def _split(options: str) -> tuple[int, str]:
    """docker's option string as mount flags and data."""
    words = [w for w in options.split(",") if w]
    flags = sum(_FLAGS[w] for w in words if w in _FLAGS)
    return flags, ",".join(w for w in words if w not in _FLAGS)


def renew_tmpfs(ref: PidRef, mounts: dict[str, str], binds: Sequence[tuple[str, str]] = ()) -> None:
    """Replace each tmpfs at ``mounts``' targets (target -> docker's option string) in the mount
    namespace of ``ref``'s process with a new one of those options, then check (fail closed:
    `BackendUnavailableError`). ``binds`` (host source, target): read-only binds, programs
    allowed, each replacing its target's top mount in the same child (the caller checks them)."""
    if not mounts and not binds:
        return
    argv: list[str] = [str(len(binds))]
    for source, target in binds:
        argv += [source, target]
    for target, options in mounts.items():
        flags, data = _split(options)
        argv += [target, str(flags), data]
    before = {target: len(top_mounts(ref, target)) for target in mounts}  # /dev/shm: docker's shm below
    ref.alive()
    proc = run_child(_SCRIPT, str(ref.pidfd), *argv, pass_fds=(ref.pidfd,))
    if proc.returncode != 0:
        raise BackendUnavailableError(f"could not give the next task fresh tmpfs mounts: {proc.stderr.strip()[-300:]}")
    for target, options in mounts.items():
        stack = top_mounts(ref, target)
        if len(stack) != before[target] or stack[-1] != ("tmpfs", "ro" in options.split(",")):
            raise BackendUnavailableError(f"{target} in the container is not one fresh tmpfs ({stack})")
