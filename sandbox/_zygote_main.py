"""The zygote: the one long-lived process inside a session's bubblewrap sandbox.

Runs *inside* the sandbox on the host's own interpreter (``python -I -S -B -c
<bootstrap> PROGRAM_FD SOCKET_FD CONFIG``, this module's code object arriving
marshalled through PROGRAM_FD, CONFIG a hex-encoded marshalled dict), so it
imports nothing of ``sandbox`` or ``shellrt`` -- and only C modules of the
standard library (``_socket``, ``_signal``, ``marshal``, ``select``, ``resource``) plus
``ctypes`` for the few system calls ``os`` lacks (``unshare``, ``mount``,
``prctl``, ``capset``, ``move_mount``): ``json``, ``socket`` and ``signal``
would pull in ``re`` and ``enum`` and triple the start-up time.

Why: a fresh ``bwrap`` per command rebuilds the mount, network, IPC and UTS
namespaces every time (~5 ms here, most of it ``--unshare-net`` and the mount
setup). The zygote builds them once. Per command it clones itself (this
Python is small: ``-I -S``, a few C modules) and sets the command up
in-process, with no helper program exec'd -- and does so *ahead*: fresh
namespaces with their /proc cost ~3 ms, so a warm pool (``pool`` in CONFIG,
default 1, the backend asks for 3) of inits waits ready, and the next one is cloned once an init has
ended (off the command's path; the zygote is not even told when one is used)::

    zygote --clone(NEWNS|NEWPID|NEWIPC)--> init (pid 1): PDEATHSIG=KILL; setsid; private
                 mounts; own /proc, /proc/sys & co read-only, /proc/kcore & co masked;
                 bounding set emptied; setgroups/setresgid/setresuid (root caller: the
                 sandbox uid); no capabilities; not dumpable; no_new_privs; a Landlock
                 domain of its own (abstract sockets, signals: ABI 6); seccomp;
                 rehearses receiving a request (copy-on-write faults taken ahead);
                 asks for a short scheduling slice (latency only; not passed on to
                 the command); then waits on its own socket
       host --request + stdin/stdout/stderr fds--> init: chdir; HOME, SHELL (root caller)
       init --vfork+exec--> command (pid 2): stdio only, inheriting all of the above

so every command still gets

* its own **pid namespace**: the shell is pid 2 under an init that reaps
  orphans, so ``kill $$`` works as anywhere else. When the command exits, the
  init kills everything left in the namespace -- setsid'd, nohup'd,
  double-forked alike -- reaps it, and only then writes the command's status
  line (the namespace's own teardown is off the command's path); the zygote
  and the session's other commands are invisible and unsignalable;
* its own **mount namespace** (private propagation) with a fresh /proc of that
  pid namespace whose ``sys``, ``sysrq-trigger``, ``irq``, ``bus``, ``fs`` and
  ``pressure`` are read-only and whose ``kcore``, ``keys``, ``timer_list`` & co are hidden
  (as Docker does), and its own **IPC namespace**;
* **no capabilities**, ``no_new_privs`` and the **seccomp filter** of
  ``sandbox._seccomp`` (loaded last: the set-up before needs ``unshare`` and
  ``mount``); run as root, the command runs under the sandbox's unprivileged
  uid/gid, never as host root.

Where the host could build it, each init is not a clone of this Python but of a small static C
program (``sandbox/zinit.c``, `sandbox._zinit`): the host hands the zygote a sealed memfd holding
it, the zygote starts it once as a fork server (``posix_spawn``: nothing of this Python copied),
and for each init asks it to clone one (``CLONE_PARENT``: still this zygote's child) which does
the same set-up in the same order; requests then reach the init in that program's plainer
format. Without it (no compiler, ``SHELLRT_BWRAP_INIT=python``, or a program that cannot start
here, which the zygote tells the host with ``ready python``) the inits are the Python below.

A pooled init is this zygote's alone, and a zygote serves one policy: when
masks, denied reads or hidden sockets change, the host starts a new zygote and
tells the old one to ``retire`` (its pool is killed at once); closing a zygote
ends its sandbox, pooled inits included (they are in its pid namespace).

At start, before saying ready, the zygote runs the CONFIG's ``setup`` steps
(root caller only): parents of the writable roots that the sandbox uid could
not cross (``/root``) become skeleton tmpfs holding only the way to the roots,
whose mounts are saved and put back on it. The same module, in *holder* mode
(``{"hold": True}``), runs on the host as root: it makes a private mount
namespace where the host-made idmapped trees are attached over the writable
roots, and keeps it alive for the session's bwraps (started in it with
``nsenter --mount``).

Protocol on the SOCK_SEQPACKET control socket (fd given as argv[1]):

Messages are marshalled dicts (both ends run the same interpreter):

* zygote -> host ``{"op": "netns"}``, once, before any other message, with the fd of its
  network namespace (config ``netns``: a session's first zygote) and/or its bridge's
  listener (``proxied``): the host keeps them for the session's later zygotes
  (`sandbox._bwrap_netns`).
* zygote -> host ``{"op": "pooled", "pid"}`` with two fds attached: a ready
  init's socket and the read end of its status pipe (the zygote keeps the
  write end); ``b"ready"`` once, at start, after the first ``pooled``.
* host -> pooled init (on its own socket) ``{"op": "spawn", "id", "argv", "cwd",
  "env"}`` with three fds (stdin, stdout, stderr). The zygote is not told: it
  learns that an init was used when it reaps it, and only then clones the next.
* host -> zygote ``{"op": "spawn", ...}`` with four fds (stdin, stdout, stderr,
  status) when no pooled init is ready: an init made for it now;
  ``{"op": "kill", "pid"}`` (a pooled init) or ``{"op": "kill", "id"}``
  (SIGKILL to the command's init, which takes the namespace down);
  ``{"op": "taken", "pid"}``: a pooled init serves a command that runs on (the
  host says so ~50 ms into it), so the next init is made now rather than when
  it ends; ``{"op": "retire"}`` (make no more inits).

One line arrives on a command's status fd once nothing of it runs any more:
``s <wait status>`` of the command, written by its init after emptying the
namespace, or by the zygote once a killed init is reaped. EOF without a line
means the zygote itself went away. A command that cannot start (no process
left under the session's pids limit) is told CONFIG's ``eagain`` text.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # C module without stubs
import _socket
import ctypes
import errno
import fcntl as _fcntl
import gc
import marshal
import mmap
import os
import resource
import select
import sys

#: Not ``typing.TYPE_CHECKING``: importing ``typing`` pulls in ``re``, ``enum``, ``functools`` and
#: ``collections`` (4 MB more for every clone of the zygote to copy the page tables of, and for
#: each init to fault in). Type checkers treat any name ``TYPE_CHECKING`` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: no module of Python source is imported at run time
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

#: A command that could not start: the wait status of ``exit 1``.
_FAILED = 1 << 8

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_OPEN_TREE_CLONE = 1
_OPEN_TREE_CLOEXEC = 0o2000000
_MOVE_MOUNT_F_EMPTY_PATH = 4
_SYS_OPEN_TREE = 428  # the same number on every architecture (new calls share one table)
_SYS_MOVE_MOUNT = 429
_SYS_OPENAT2 = 437
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_SCOPE_ABSTRACT = 1  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, ABI 6 (Linux 6.12)
_LANDLOCK_SCOPE_SIGNAL = 2  # LANDLOCK_SCOPE_SIGNAL, ABI 6
#: /proc entries made read-only and hidden in each command's /proc (Docker's lists, and
#: ``key-users``: a root caller's commands share the host's user namespace, where it lists every
#: host user's key count and quota use -- host activity across tenants; red team round 41, bwrap4).
#: ``pressure`` read-only too: its files are the whole host's (mode 0666), and a write makes a
#: pressure trigger the host's PSI aggregation checks every 2 s (red team round 47, sandbox7).
_PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs", "pressure")
_PROC_MASKED = (
    "kcore", "keys", "key-users", "timer_list", "sched_debug", "latency_stats", "acpi", "scsi", "asound",
)  # fmt: skip

_libc = ctypes.CDLL(None, use_errno=True)
#: The C functions called through `_libc`, looked up here, once, in the zygote: ctypes finds a
#: function on its first use (dlsym through every loaded library, a new function object) and only
#: then keeps it, so a first use in an init was repeated by every init (capset alone: ~0.2 ms of
#: each init's CPU, measured). Every ``_libc.<name>`` this module calls must be listed.
_LIBC_FUNCTIONS = ("capset", "malloc_trim", "mount", "prctl", "syscall", "umount2", "unshare")
for _name in _LIBC_FUNCTIONS:
    getattr(_libc, _name)
#: clone(2) called with the GIL held (a PyDLL function): the child resumes this very
#: thread's Python code as a plain fork does, without a second process in between.
_pysyscall = ctypes.PyDLL(None, use_errno=True).syscall
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}[os.uname().machine]


def _clone(flags: int) -> int:
    """fork(2) into new namespaces: 0 in the child, its pid in the parent, -1 on error."""
    return int(_pysyscall(_SYS_CLONE, ctypes.c_ulong(flags), 0, 0, 0, 0))


class _SchedAttr(ctypes.Structure):
    """``struct sched_attr`` (its first version, 48 bytes) for ``sched_setattr(2)``."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("policy", ctypes.c_uint32),
        ("flags", ctypes.c_uint64),
        ("nice", ctypes.c_int32),
        ("priority", ctypes.c_uint32),
        ("runtime", ctypes.c_uint64),  # SCHED_OTHER: the slice asked for (Linux 6.12+), 0: the default
        ("deadline", ctypes.c_uint64),
        ("period", ctypes.c_uint64),
    ]


_SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}[os.uname().machine]
_SCHED_FLAG_RESET_ON_FORK = 1
#: ``ioprio_get``/``ioprio_set`` (`calm_scheduling`): the real-time I/O class is not passed on.
_SYS_IOPRIO_GET, _SYS_IOPRIO_SET = {"x86_64": (252, 251), "aarch64": (31, 30)}[os.uname().machine]
_SYS_STATX = {"x86_64": 332, "aarch64": 291}[os.uname().machine]
_AT_SYMLINK_NOFOLLOW = 0x100
_IOPRIO_WHO_PROCESS = 1
_IOPRIO_CLASS_RT = 1
#: The umask of every process of a sandbox (an ordinary login's); the host's own is the caller's.
SANDBOX_UMASK = 0o022
#: `sandbox._oomscore.OOM_SCORE_ADJ` (this module imports nothing of ``sandbox``; a test pins both).
OOM_SCORE_ADJ = 1000
#: The slice an init asks for while it waits and runs its command (the kernel's minimum custom
#: slice): see `Zygote.__init__`.
_INIT_SLICE_NS = 100_000


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(*_mount_call(source, target, fstype, flags, data)), f"mount {target}")


#: statvfs's ST_* flags that a read-only remount must keep (the same values as MS_*): a
#: mount inherited into a user namespace refuses a remount that would drop a locked one.
_KEPT_FLAGS = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | 1024 | 2048 | 4096  # NOATIME, NODIRATIME, RELATIME

if TYPE_CHECKING:
    #: One mount(2) call's arguments, ready for ctypes: source, target, fstype, flags, data.
    MountCall = tuple[bytes | None, bytes, bytes | None, ctypes.c_ulong, bytes | None]


def _mount_call(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> MountCall:
    return (
        None if source is None else source.encode(),
        target.encode(),
        None if fstype is None else fstype.encode(),
        ctypes.c_ulong(flags),
        None if data is None else data.encode(),
    )


def _proc_mounts() -> list[MountCall]:
    """The mount calls that give an init its own /proc, with Docker's read-only and masked entries.

    Worked out once, by the zygote: each init only replays them (no Python string work, no
    stat, no statvfs per command). What they depend on is the same for every init: the
    entries /proc has (one kernel), the flags of the init's fresh /proc (set by the first
    call; a remount must keep them), and those of the zygote's /dev/null, which every init's
    mount namespace copies (a remount must keep its locked flags).
    """
    proc_flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    calls = [_mount_call("proc", "/proc", "proc", proc_flags)]
    for name in _PROC_READ_ONLY:
        path = "/proc/" + name
        if os.path.exists(path):
            calls.append(_mount_call(path, path, None, _MS_BIND | _MS_REC))
            calls.append(_mount_call(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | proc_flags))
    null_kept = os.statvfs("/dev/null").f_flag & _KEPT_FLAGS
    for name in _PROC_MASKED:  # an empty read-only tmpfs over a directory, /dev/null over anything else
        path = "/proc/" + name
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue  # not on this kernel
        if mode & 0o170000 == 0o040000:
            flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_RDONLY
            calls.append(_mount_call("tmpfs", path, "tmpfs", flags, "mode=0755,size=0"))
        else:
            calls.append(_mount_call("/dev/null", path, None, _MS_BIND))
            flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NOEXEC | null_kept
            calls.append(_mount_call(None, path, None, flags))
    return calls


#: Marks on a mount call's flags (never the kernel's: its ``MS_`` flags end at bit 31), for the
#: lock view's calls, planned at the session's start while host mounts below come and go
#: (`lock_view`; `zinit.c` reads the same): a move whose source or target is gone (ENOENT) has
#: nothing to keep on top and is skipped; an overlay the kernel refuses now (EINVAL, ENOENT: a
#: host mount made below since) is not made, and its calls up to the group's end are skipped
#: (nothing is put over the directory, so nothing is hidden). Any other failure fails the init.
#: A shared overlay (round 38: one for several directories of one mount) is an outer group
#: (``_CALL_OUTER`` on its head and end): refused, every directory of it is skipped; each
#: directory's own calls in it are an inner group. ``_CALL_UMOUNT``: ``umount2(target,
#: MNT_DETACH)`` instead of a mount (the shared overlay, taken off its assembly point).
_CALL_IF_PRESENT = 1 << 40
_CALL_GROUP_HEAD = 1 << 41
_CALL_GROUP_END = 1 << 42
_CALL_UMOUNT = 1 << 43
_CALL_OUTER = 1 << 44
#: ``_CALL_REST``: bind from the shared overlay (``source``) each entry of the directory ``target``
#: it does not cover yet (`_cover_rest`); ``data``: that directory's subdirectories at the plan, by
#: name, "/" between them (those are left as they are: mounts may lie below one).
_CALL_REST = 1 << 45
_CALL_MARKS = _CALL_IF_PRESENT | _CALL_GROUP_HEAD | _CALL_GROUP_END | _CALL_UMOUNT | _CALL_OUTER | _CALL_REST


def _cover_rest(hold: bytes, directory: bytes, known: bytes | None) -> None:
    """In an init, the shared overlay of ``directory``'s mount at ``hold``: each regular file
    directly in ``directory`` and each subdirectory made since the plan (not in ``known``: no
    mount lies below it, the zygote's namespace is private) bound from the overlay over itself,
    unless it is a mount point already (covered, or a mask). Round 38, locks: a command's lock on
    ``/container_info.json`` or on a top-level directory made after the session started was on
    the host's inode. Anchored (round 50): the directory, each entry and its copy in the overlay
    opened through no link (`_open_nofollow`), checked by those fds and bound fd to fd -- a name
    checked and then bound by path (``mount(2)`` follows links) let a name swapped for a link in
    between bind a writable root over itself without its masks. ``zinit.c`` `cover_rest` alike;
    raises `OSError` (closed) on a failure but a name gone meanwhile."""
    names = set((known or b"").split(b"/"))
    base = directory.rstrip(b"/")
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        points = {os.fsencode(_unescape(line.split(" ")[4])) for line in fh}
    dirfd = _open_nofollow(_AT_FDCWD, directory, directory=True)
    if dirfd < 0:
        return  # the mount's directory went away (or is a link now) since the plan: nothing to cover
    holdfd = _open_nofollow(_AT_FDCWD, hold, directory=True)
    try:
        if holdfd < 0:
            raise OSError(errno.EIO, f"open {os.fsdecode(hold)}: the lock view's own place is gone")
        listed = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dirfd)
        try:
            entries = os.listdir(listed)
        finally:
            os.close(listed)
        for name in map(os.fsencode, entries):
            target = base + b"/" + name
            if target not in points:
                _cover_one(dirfd, holdfd, name, name in names, any(p.startswith(target + b"/") for p in points))
    finally:
        for fd in (dirfd, holdfd):
            if fd >= 0:
                os.close(fd)


def _cover_one(dirfd: int, holdfd: int, name: bytes, known: bool, mounts_below: bool) -> None:
    """`_cover_rest`'s entry ``name``: bound from ``holdfd``'s over ``dirfd``'s, both by fd."""
    dst = _open_nofollow(dirfd, name, beneath=True)
    if dst < 0:
        return  # gone, or a link (never followed)
    try:
        mode = os.fstat(dst).st_mode & 0o170000
        is_dir = mode == 0o040000
        if (is_dir and (known or mounts_below)) or not (is_dir or mode == 0o100000):
            return  # a directory of the plan, one with a mount below (never hidden), or no file
        src = _open_nofollow(holdfd, name, beneath=True)
        if src < 0:
            return
        try:
            if os.fstat(src).st_mode & 0o170000 != mode:
                return  # not the same kind in the overlay: made since it was
            if _libc.mount(_fd_path(src), _fd_path(dst), None, ctypes.c_ulong(_MS_BIND), None) < 0:
                err = ctypes.get_errno()
                if err != errno.ENOENT:
                    raise OSError(err, f"mount {os.fsdecode(name)}: {os.strerror(err)}")
        finally:
            os.close(src)
    finally:
        os.close(dst)


def _mount_unmarked(call: MountCall) -> int:
    """``mount(2)`` (or ``umount2``) of a call, its marks taken off (the planner tries each call as it is)."""
    if call[3].value & _CALL_UMOUNT:
        return int(_libc.umount2(call[1], _MNT_DETACH))
    if call[3].value & _CALL_REST:
        _cover_rest(call[0] or b"", call[1], call[4])
        return 0
    return int(_libc.mount(call[0], call[1], call[2], ctypes.c_ulong(call[3].value & ~_CALL_MARKS), call[4]))


_STATX_ATTR_MOUNT_ROOT = 0x2000


def _not_a_mount(path: bytes | None) -> bool:
    """Whether a lock-view move's source is there but no longer a mount point (round 38, lead: the
    host unmounted it and made the name again, or unlinked a masked file and made a new one; the
    mount is gone from every namespace, nothing is left to keep on top). statx's MOUNT_ROOT
    attribute (``zinit.c`` `not_a_mount` alike); a kernel that cannot say answers False, and the
    move's EINVAL fails the command (closed)."""
    if not path:
        return False
    return _statx_not_a_mount(_AT_FDCWD, path, _AT_SYMLINK_NOFOLLOW)


_AT_EMPTY_PATH = 0x1000


def _statx_not_a_mount(dirfd: int, path: bytes, flags: int) -> bool:
    """`_not_a_mount` of ``path`` from ``dirfd`` (``b""`` with ``_AT_EMPTY_PATH``: the fd itself)."""
    buf = ctypes.create_string_buffer(256)
    if _libc.syscall(_SYS_STATX, dirfd, path, flags, 0, buf) < 0:
        return False
    attributes, mask = (
        int.from_bytes(buf.raw[8:16], sys.byteorder),
        int.from_bytes(buf.raw[56:64], sys.byteorder),
    )
    return bool(mask & _STATX_ATTR_MOUNT_ROOT) and not attributes & _STATX_ATTR_MOUNT_ROOT


def _open_nofollow(dirfd: int, path: bytes, beneath: bool = False, directory: bool = False) -> int:
    """An ``O_PATH`` fd of ``path`` (from ``dirfd``; ``beneath``: never above it; ``directory``: a
    directory only, ``ENOTDIR`` otherwise) reached through no symbolic link at all, or -1 with errno
    set (``ELOOP`` where one lies on the way)."""
    how = (ctypes.c_uint64 * 3)(
        os.O_PATH | os.O_CLOEXEC | (os.O_DIRECTORY if directory else 0),
        0,
        _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS | (_RESOLVE_BENEATH if beneath else 0),
    )
    fd = int(_libc.syscall(_SYS_OPENAT2, dirfd, path, ctypes.byref(how), ctypes.c_size_t(24)))
    if fd < 0 and ctypes.get_errno() == errno.ENOSYS:
        return _walk_nofollow(dirfd, path, directory)
    return fd


def _walk_nofollow(dirfd: int, path: bytes, directory: bool) -> int:
    """`_open_nofollow` without ``openat2`` (Linux < 5.6; round 50): one name at a time, each opened
    ``O_NOFOLLOW`` (a link on the way: ENOTDIR; the last name a link: ELOOP), ``..`` refused (never
    above where it starts). Round 49 skipped every group there: no lock view at all. ``zinit.c``
    `walk_nofollow` alike."""
    names = [name for name in path.split(b"/") if name]
    try:
        fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if path.startswith(b"/") else os.dup(dirfd)
    except OSError as exc:
        ctypes.set_errno(exc.errno or errno.EIO)
        return -1
    for at, name in enumerate(names):
        flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
        if at < len(names) - 1 or directory:
            flags |= os.O_DIRECTORY
        try:
            if name == b"..":
                raise OSError(errno.EXDEV, "a name above the start")
            step = os.open(name, flags, dir_fd=fd)
        except OSError as exc:
            ctypes.set_errno(exc.errno or errno.EIO)
            return -1
        finally:
            os.close(fd)
        fd = step
    if not directory and os.fstat(fd).st_mode & 0o170000 == 0o120000:  # the last name a link
        os.close(fd)
        ctypes.set_errno(errno.ELOOP)
        return -1
    return fd


def _fd_path(fd: int) -> bytes:
    return b"/proc/self/fd/%d" % fd


class _OwnGroup:
    """One directory's own overlay being put together (`_lock_view_calls`), anchored (red team
    round 49): the directory is opened once, at the group's head, through no symbolic link, and
    every later call of the group names it and what lies below it by that fd -- the overlay's lower
    layer, each mount moved into it, the move over it. A name the host (or another session's
    command, in a directory it can write) swapped for a symbolic link since the plan put the
    overlay over the link's target before (a writable root, its masks hidden below a read-only
    copy of it). ``zinit.c`` `struct own_group` alike."""

    def __init__(self, path: bytes, fd: int) -> None:
        self.path, self.fd, self.assembly, self.at = path, fd, -1, b""

    def close(self) -> None:
        for fd in (self.fd, self.assembly):
            if fd >= 0:
                os.close(fd)


def _own_head(call: MountCall, plan: GroupPlan | None, points: list[bytes]) -> _OwnGroup | int | None:
    """A directory's group head, from its anchor: its own overlay made at ``h``, or (a shared
    overlay's directory, ``end`` its name: the group's last move's target) its part of the shared
    overlay bound at ``s``. The group, None (not such a head: replayed as it is), or the errno that
    skips the group (gone, or a link now)."""
    data = call[4] or b""
    flags = call[3].value
    end, planned = plan or (None, ())
    if flags & _CALL_OUTER:
        return None
    if call[2] == b"overlay" and data.startswith(b"lowerdir="):
        path, _, bottom = data[len(b"lowerdir=") :].rpartition(b":")
        source, fstype, data = call[0], call[2], bottom
    elif call[2] is None and flags & _MS_BIND and end is not None and call[0]:
        path, source, fstype, data = end, call[0], None, b""
    else:
        return None
    # a directory only (red team round 50: a FIFO or a file swapped in failed every later init)
    fd = _open_nofollow(_AT_FDCWD, path, directory=True)
    if fd < 0:
        return errno.ENOENT  # gone, a link or no directory now: nothing is put over it
    group = _OwnGroup(path, fd)
    if _unplanned_below(path, points, planned) is not None:  # it would hide a mount the plan does not move
        group.close()
        return errno.ENOENT
    if fstype is None:  # the shared overlay's part, found through no link
        src = _open_nofollow(_AT_FDCWD, source or b"", directory=True)
        if src < 0:
            group.close()
            return errno.ENOENT
        done = _libc.mount(_fd_path(src), call[1], None, ctypes.c_ulong(flags & ~_CALL_MARKS), None)
        err = ctypes.get_errno()
        os.close(src)
    else:
        lower = b"lowerdir=" + _fd_path(fd) + b":" + data
        done = _libc.mount(source, call[1], fstype, ctypes.c_ulong(flags & ~_CALL_MARKS), lower)
        err = ctypes.get_errno()
    if done < 0:
        group.close()
        return err
    group.at = call[1]  # opened when a mount is moved into it (most groups have none)
    return group


def _own_move(group: _OwnGroup, call: MountCall) -> int:
    """A mount below the group's directory moved to the same place in its overlay, both found
    below their anchors through no link; 0, or -1 with errno set (ENOENT: gone or not there)."""
    source = call[0] or b""
    if not source.startswith(group.path + b"/"):
        ctypes.set_errno(errno.EINVAL)
        return -1
    rel = source[len(group.path) + 1 :]
    if group.assembly < 0:
        group.assembly = _open_nofollow(_AT_FDCWD, group.at)
        if group.assembly < 0:
            ctypes.set_errno(errno.EIO)  # our own place: the init fails (closed)
            return -1
    src = _open_nofollow(group.fd, rel, beneath=True)
    if src < 0:
        ctypes.set_errno(errno.ENOENT)
        return -1
    try:
        dst = _open_nofollow(group.assembly, rel, beneath=True)
        if dst < 0:
            ctypes.set_errno(errno.ENOENT)
            return -1
        try:
            if _libc.mount(_fd_path(src), _fd_path(dst), None, ctypes.c_ulong(_MS_MOVE), None) >= 0:
                return 0
            err = ctypes.get_errno()
            if err == errno.EINVAL and _statx_not_a_mount(src, b"", _AT_EMPTY_PATH):
                err = errno.ENOENT  # no longer a mount: nothing is left to keep on top
            ctypes.set_errno(err)
            return -1
        finally:
            os.close(dst)
    finally:
        os.close(src)


#: A group head's plan (`_group_plans`): its end's target (the directory a shared overlay's part
#: goes over), and the mounts below its directory that the group moves in (their sources).
GroupPlan = tuple[bytes | None, tuple[bytes, ...]]


def _group_plans(calls: list[MountCall]) -> list[GroupPlan | None]:
    """For each call, a group head's plan (else None): the target of the first inner group end
    after it, and the sources of the moves before that end. Worked out once, with the plan (the
    zygote's `Zygote.__init__`; `zinit.c` `read_config` alike), not by every init: each scanned
    forward from every head, quadratic in the plan's size (round 50, a cost item)."""
    plans: list[GroupPlan | None] = [None] * len(calls)
    end: bytes | None = None
    sources: list[bytes] = []
    for at in range(len(calls) - 1, -1, -1):
        flags = calls[at][3].value
        if flags & _CALL_GROUP_END and not flags & _CALL_OUTER:
            end, sources = calls[at][1], []
        elif flags & _CALL_IF_PRESENT and calls[at][0]:
            sources.append(calls[at][0] or b"")
        if flags & _CALL_GROUP_HEAD:
            plans[at] = (end, tuple(sources))
    return plans


def _mount_points() -> list[bytes]:
    """This namespace's mount points as they are named now (a rename since shows the new name)."""
    with open("/proc/self/mountinfo", "rb") as fh:
        return [os.fsencode(_unescape(os.fsdecode(line.split(b" ")[4]))) for line in fh]


def _unplanned_below(directory: bytes, points: list[bytes], planned: Iterable[bytes]) -> bytes | None:
    """A mount below ``directory`` that none of ``planned`` is or holds (None when there is none):
    an overlay over the directory would hide it -- a mask renamed since the plan, readable at its
    new name below the overlay (round 50). At a group's end ``planned`` are the names it moved a
    mount from (`_replay`'s ``moved``): what is left at such a name is a lower layer of a stack
    whose top was moved (a path names its top mount only; red team round 53), and what is below it
    is mounted in that lower layer (round 54: a host mount inside a stacked one failed every
    command); the moved top covers both in the overlay, as it does on the host. `zinit.c`'s
    ``unplanned_below`` alike."""
    prefix = directory.rstrip(b"/") + b"/"
    known = tuple(planned)
    return next(
        (
            p
            for p in points
            if p.startswith(prefix) and not any(p == s or p.startswith(s + b"/") for s in known)
        ),
        None,
    )


def _shown(name: bytes) -> str:
    """A host's mount point as a refusal says it: no control character (`zinit.c` alike)."""
    return "".join("?" if ord(c) < 0x20 or c == "\x7f" else c for c in name.decode("utf-8", "replace")[:150])


def _replay(calls: list[MountCall], plans: list[GroupPlan | None] | None = None) -> None:
    """The plan's calls, in order (``plans``: `_group_plans` of them, worked out once by the caller)."""
    if plans is None:
        plans = _group_plans(calls)
    points: list[bytes] | None = None  # read at the first group head
    missed = False  # a planned move of the current group found nothing at its name
    moved: set[bytes] = set()  # the names the current group moved a mount from
    skipping = 0  # 1: an inner group's calls, 2: an outer group's (`zinit.c` `set_up` alike)
    own: _OwnGroup | None = None
    try:
        for at, call in enumerate(calls):
            marks = call[3].value & _CALL_MARKS
            if skipping:
                if marks & _CALL_GROUP_END and (skipping == 2) == bool(marks & _CALL_OUTER):
                    skipping = 0
                continue
            if marks & _CALL_GROUP_HEAD:
                if points is None:
                    points = _mount_points()
                head = _own_head(call, plans[at], points)
                if isinstance(head, _OwnGroup):
                    own = head
                    moved = set()
                    continue
                if isinstance(head, int):
                    if head in (errno.EINVAL, errno.ENOENT):
                        skipping = 1
                        continue
                    raise OSError(head, f"mount {call[1].decode()}: {os.strerror(head)}")
            onto, named = -1, call[1]
            if own is not None and marks & _CALL_GROUP_END:
                # over the anchor itself (the plan's own calls name it); any other name through no link
                onto = own.fd if call[1] == own.path else _open_nofollow(_AT_FDCWD, call[1])
                call = (call[0], _fd_path(onto), call[2], call[3], call[4])
            if own is not None and marks & _CALL_GROUP_END and missed:
                missed = False
                # a mount renamed below the directory since the head's check: closed (the next
                # init's check skips the group)
                found = _unplanned_below(os.readlink(_fd_path(own.fd)), _mount_points(), moved)
                if found is not None:
                    raise OSError(
                        errno.EBUSY, f"a mount below {named.decode()} moved since the plan ({_shown(found)})"
                    )
            if own is not None and marks & _CALL_IF_PRESENT:
                done = _own_move(own, call)
                missed = missed or (done < 0 and ctypes.get_errno() in (errno.ENOENT, errno.EINVAL))
                if done == 0 and call[0]:
                    moved.add(call[0])
            elif own is not None and marks & _CALL_GROUP_END and onto < 0:
                ctypes.set_errno(errno.ENOENT)  # gone, or a link now
                done = -1
            else:
                done = _mount_unmarked(call) if marks else _libc.mount(*call)
            if own is not None and onto >= 0 and onto != own.fd:
                kept = ctypes.get_errno()
                os.close(onto)
                ctypes.set_errno(kept)
            if own is not None and marks & _CALL_GROUP_END:
                own.close()
                own = None
            if done < 0:
                err = ctypes.get_errno()
                if marks & _CALL_GROUP_HEAD and err in (errno.EINVAL, errno.ENOENT):
                    skipping = 2 if marks & _CALL_OUTER else 1
                    continue
                if marks & _CALL_IF_PRESENT and (
                    err == errno.ENOENT or (err == errno.EINVAL and _not_a_mount(call[0]))
                ):
                    continue
                if _gone_at_group_end(call, marks, err):
                    continue
                raise OSError(err, f"mount {named.decode()}: {os.strerror(err)}")
    finally:
        if own is not None:
            own.close()


def _gone_at_group_end(call: MountCall, marks: int, err: int) -> bool:
    """Whether a directory's group failed only because the directory went away after its head
    (the host removed it meanwhile: its overlay was made, the move over it finds no name). The
    group's assembly (``h`` or ``s``, with what was moved into it) is detached so the next group
    finds it empty: nothing is left to cover at that name. ``zinit.c`` `gone_at_group_end` alike."""
    if not (marks & _CALL_GROUP_END and not marks & _CALL_OUTER and err == errno.ENOENT and call[0]):
        return False
    return bool(_libc.umount2(call[0], _MNT_DETACH) == 0)


def _open_tree(path: str) -> int:
    """A detached copy of the mount tree at ``path`` (to be put back with `_move_mount`)."""
    flags = _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE
    return _check(_libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, path.encode(), flags), f"open_tree {path}")


def _move_mount(fd: int, path: str) -> None:
    _check(
        _libc.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, path.encode(), _MOVE_MOUNT_F_EMPTY_PATH),
        f"move_mount onto {path}",
    )
    os.close(fd)


def _close_all_but(keep: tuple[int, ...]) -> None:
    low = 3
    for fd in sorted(set(keep)):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)


def setup(steps: list[tuple[Any, ...]]) -> None:
    """The start-up mount steps (see the module docstring), in order."""
    saved: dict[str, int] = {}
    for step in steps:
        kind = step[0]
        if kind == "save":
            saved[step[1]] = _open_tree(step[1])
        elif kind == "attach":
            _move_mount(step[1], step[2])
        elif kind == "restore":
            _move_mount(saved.pop(step[1]), step[1])
        elif kind == "copy":  # a second view of the mount tree at step[1], at step[2]
            _move_mount(_open_tree(step[1]), step[2])
        elif kind == "skeleton":  # a directory the sandbox uid cannot cross: only the way through
            _mount("tmpfs", step[1], "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0711")
            for sub in step[2]:
                os.makedirs(sub, mode=0o711, exist_ok=True)
        else:
            raise ValueError(f"unknown set-up step {kind!r}")


def _in_passwd(uid: int) -> bool:
    """Whether /etc/passwd names ``uid`` (read directly: ``pwd`` would load NSS modules into the zygote)."""
    try:
        with open("/etc/passwd", "rb") as f:
            return any(line.split(b":")[2:3] == [str(uid).encode()] for line in f)
    except OSError:
        return False


def _has_children() -> bool:
    """Whether any child is left, running or not reaped yet (without reaping it)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _report(status: int, wait_status: int) -> None:
    """Send a command's final status line on its status fd, and close it."""
    try:
        _write_all(status, f"s {wait_status}\n".encode())
    except OSError:
        pass
    os.close(status)


#: Why a cwd that a symlink (or a file) now stands on the way to is refused (as zinit.c says it).
_SWAPPED = (
    "a symbolic link or a file is on its way (name it by its physical path, `pwd -P`; "
    "or it changed after it was checked); the command was not run: run it again, or cd elsewhere first"
)
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def _enter_physical(path: str) -> None:
    """``chdir(path)`` one component at a time from ``/``, never through a symbolic link, then
    ``fchdir``: the command starts in exactly the directory at the path the host judged, or not at
    all (zinit.c's `enter_physical`; red team round 25, second wave). Raises `OSError`."""
    if not path.startswith("/"):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in path.split("/"):
            if part in (".", ".."):
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            if part:
                nxt = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nxt
        os.fchdir(fd)
    finally:
        os.close(fd)


def _say(fd: int, message: str) -> None:
    try:
        _write_all(fd, f"shellrt: {message}\n".encode("utf-8", "surrogateescape"))
    except OSError:
        pass


def _refuse(stderr: int, status: int, message: str) -> None:
    """A command that could not start: say why on its stderr, report ``exit 1``."""
    _say(stderr, message)
    _report(status, _FAILED)


class Zygote:
    """Spawns commands on request and reports each one's end on its status fd.

    A warm pool of `pool_size` inits is made ahead (`_prepare`); each one's
    socket and status pipe go to the host (``pooled``), which hands it a command
    directly; the zygote, keeping a copy of the status fd, reaps it when it ends
    and only then clones the next. Every pooled init belongs to this zygote and
    so to the policy it was started for; the host replaces the zygote (and
    closes its sockets to the ready inits) when the policy changes.
    """

    def __init__(
        self, config: dict[str, Any], sock: _socket.socket, view: list[MountCall] | None = None
    ) -> None:
        self.sock = sock
        #: Network ``proxied``: the fds that stop its bridge (`stop_bridge`), once it is retired.
        self.bridge: tuple[int, int] | None = None
        self.uid: int | None = config.get("uid")
        self.gid: int | None = config.get("gid")
        self.pool_size: int = config.get("pool", 1)
        #: A non-root caller's commands' ``RLIMIT_NOFILE`` (`sandbox._bwrap_uidshare.nofile_share`), set
        #: on each init (and the C inits' fork server), never on this zygote: the kernel checks each
        #: ``SCM_RIGHTS`` send against the uid's count in flight, which the commands may raise to
        #: their limit plus 253; the zygote's own sends (a command's ends to its init, an init's to
        #: the host) need a limit above that (red team round 48, sandbox8). None: unchanged (root).
        self.nofile: int | None = config.get("nofile")
        #: Said instead of "Resource temporarily unavailable" when no process can be made.
        self.eagain: str = config.get("eagain") or "no process can be created (EAGAIN)"
        #: ``$SHELL`` for commands that come without one, when the sandbox uid has no entry in
        #: /etc/passwd: bash would look the uid up through every NSS source for it (libnss_systemd
        #: dlopen'd, ~1.5 ms of each command's start, measured) and then assume this very value.
        self.shell_fallback = "/bin/sh" if self.uid is not None and not _in_passwd(self.uid) else ""
        program: bytes = config["seccomp"]
        if not program or len(program) % 8:
            raise ValueError("no seccomp program: refusing to run commands without one")
        self._filter = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.cast(self._filter, ctypes.c_char_p))
        #: init pid -> (command id, status fd, read end of the init's report pipe), for inits
        #: made on request (``spawn``)
        self.running: dict[int, tuple[int, int, int]] = {}
        self.by_id: dict[int, int] = {}  # command id -> init pid
        #: Pooled inits, waiting or handed a command by the host (the zygote is not told which)
        #: -> (read end of their report pipe, the zygote's copy of their status fd).
        self.pool: dict[int, tuple[int, int]] = {}
        #: Pooled inits the host said serve a (long) command: no longer ready.
        self.taken: set[int] = set()
        #: Pooled inits that said b"r" (their command is over) and are now tearing their
        #: namespaces down: no longer ready, not yet reaped (`spent`).
        self.spent: set[int] = set()
        #: The main loop's poller (`_requests`) and the pooled inits' report pipes it watches -> pid.
        self.poller: Any = None
        self._reports: dict[int, int] = {}
        # The bounding set: down to the zygote's own capabilities once, here; those are
        # then all a command must drop from it.
        keep = set(config.get("caps", ()))
        for cap in range(64):
            if cap not in keep and _libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) == 1:
                _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), "prctl(CAPBSET_DROP)")
        self._bounding = [cap for cap in range(64) if _libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) == 1]
        # What every init does is worked out here, once: an init is a copy of this process, and
        # each Python object it makes or touches costs it a page copied from the zygote.
        # ``view``: each init's own overlays over the host's read-only directories (`lock_view`).
        self._proc_mounts = _proc_mounts() + (view or [])
        self._group_plans = _group_plans(self._proc_mounts)
        #: Signals with a Python handler (SIGINT's, the zygote's SIGCHLD), back to default in an init.
        handled = {sig for sig in _signal.valid_signals() if callable(_signal.getsignal(sig))}
        self._handled = sorted(handled | {_signal.SIGCHLD})
        self._no_caps = ctypes.byref((ctypes.c_uint32 * 6)())  # effective, permitted, inheritable x 2
        self._cap_header = ctypes.byref(_CapHeader(_LINUX_CAPABILITY_VERSION_3, 0))
        self._seccomp_prog = ctypes.byref(self._fprog)
        #: The Landlock scopes of each command's domain (`_own_domain`): signals, and abstract unix
        #: sockets unless the session has the host's network (which promises the host's); 0: the
        #: kernel has no Landlock ABI 6 (docs/security.md, round 29).
        self._scopes = 0
        if landlock_abi() >= 6:
            abstract = _LANDLOCK_SCOPE_ABSTRACT if config.get("scope_abstract", True) else 0
            self._scopes = _LANDLOCK_SCOPE_SIGNAL | abstract
        #: ``struct landlock_ruleset_attr`` (handled fs, handled net, scoped) of that domain.
        self._scope = ctypes.byref((ctypes.c_uint64 * 3)(0, 0, self._scopes))
        # Latency, not share: an init asks for a short slice (`_INIT_SLICE_NS`) once it is
        # ready, so that on a busy machine it runs as soon as its command arrives and as soon as
        # the command ends (an earlier deadline: it preempts the running task instead of waiting
        # out its ~1.4 ms slice; measured, docs/performance.md). Its weight -- its share of the
        # CPU -- is unchanged, and so is its nice. The command must not keep the short slice:
        # SCHED_RESET_ON_FORK gives it the default one from its fork on. That flag would also
        # reset a negative nice to 0, so an init at a negative nice would do without it and
        # reset the command's slice right after its exec instead (a process the command starts
        # before that keeps the short slice: latency only, never more CPU); since round 36 the
        # zygote never runs at one (`calm_scheduling`), so that path is a fallback only.
        # Not resetting its own slice around the spawn: the init, its deadline pushed back,
        # then waited as long as before (measured). Only for SCHED_OTHER: SCHED_BATCH and
        # SCHED_IDLE (the only others `calm_scheduling` keeps) stay untouched. No privilege
        # needed; a kernel without custom slices (< 6.12) ignores the value.
        self._short_slice: Any = None
        #: The command's slice, reset after its exec (a negative nice: no SCHED_RESET_ON_FORK).
        self._command_slice: Any = None
        if os.sched_getscheduler(0) == os.SCHED_OTHER:
            nice = os.getpriority(os.PRIO_PROCESS, 0)
            flags = _SCHED_FLAG_RESET_ON_FORK if nice >= 0 else 0
            self._short_slice = ctypes.byref(_SchedAttr(48, os.SCHED_OTHER, flags, nice, 0, _INIT_SLICE_NS))
            if nice < 0:
                self._command_slice = ctypes.byref(_SchedAttr(48, os.SCHED_OTHER, 0, nice, 0, 0))
        #: The C init (`sandbox._zinit`): the socket to its fork server, or None: the Python init below.
        self._zinit: _socket.socket | None = None
        self._zinit_fds = (-1, -1)
        #: Why the C init the host gave could not start ("": it did, or none was given).
        self.c_init_failure = ""
        if config.get("zinit") is not None:
            try:
                program_fd = _fcntl.fcntl(config["zinit"], _fcntl.F_DUPFD_CLOEXEC, 5)  # not where 3, 4 go
                os.close(config["zinit"])
                #: The program and its configuration, kept to start the server again should it die.
                self._zinit_fds = (program_fd, self._c_config(program))
                self._zinit = _start_c_server(*self._zinit_fds, self.nofile)
            except OSError as exc:  # e.g. no exec from a memfd here: the Python init, and the host is told
                self.c_init_failure = f"the C init cannot start: {exc}"
        #: What an init rehearses receiving (`_rehearse`): a request of the usual shape.
        self._sample: dict[str, Any] = {
            "op": "spawn",
            "id": 0,
            "argv": ["bash", "-c", "true"],
            "cwd": "/",
            "env": {"PATH": "/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8", "SHELLRT": "1"},
        }

    def _c_config(self, program: bytes) -> int:
        """The C init's configuration (the format `zinit.c`'s ``read_config`` parses), in a memfd."""
        slice_mode, nice = 0, 0
        if self._short_slice is not None:
            nice = os.getpriority(os.PRIO_PROCESS, 0)
            slice_mode = 2 if self._command_slice is not None else 1
        fields: list[bytes | str] = [
            str(-1 if self.uid is None else self.uid),
            str(-1 if self.gid is None else self.gid),
            str(slice_mode),
            str(nice),
            str(_INIT_SLICE_NS),
            self.shell_fallback,
            self.eagain,
            str(self._scopes),
            str(len(self._bounding)),
            *(str(cap) for cap in self._bounding),
            str(len(self._proc_mounts)),
        ]
        for source, target, fstype, flags, data in self._proc_mounts:
            fields += [source or b"", target, fstype or b"", str(flags.value), data or b""]
        fields.append(program.hex())
        text = b"".join((f.encode() if isinstance(f, str) else f) + b"\0" for f in fields)
        fd = os.memfd_create("shellrt-init-config", os.MFD_CLOEXEC)
        _write_all(fd, text)
        return fd

    def _prepare(self, status: int = -1) -> tuple[int, _socket.socket, int] | int:
        if self._zinit is None:
            return self._prepare_python(status)
        prepared = self._prepare_c(self._zinit, status)
        if prepared in (errno.EPIPE, errno.ECONNRESET):  # the server is gone (killed): a new one, once
            self._zinit.close()
            try:
                self._zinit = _start_c_server(*self._zinit_fds, self.nofile)
            except OSError as exc:
                return exc.errno or errno.EIO
            prepared = self._prepare_c(self._zinit, status)
        return prepared

    def _prepare_c(self, server: _socket.socket, status: int) -> tuple[int, _socket.socket, int] | int:
        """`_prepare` with the C init: its fork server (`zinit.c`) clones one, as this zygote's
        child, and says its pid."""
        ctl, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        try:
            pid = _c_clone(server, [theirs.fileno(), report_w, *((status,) if status >= 0 else ())])
        finally:
            theirs.close()
            os.close(report_w)
        if pid < 0:
            ctl.close()
            os.close(report_r)
            return -pid
        return pid, ctl, report_r

    def _prepare_python(self, status: int = -1) -> tuple[int, _socket.socket, int] | int:
        """Clone one init into fresh pid, mount and IPC namespaces: (pid, its socket, report pipe),
        or the errno when that fails. ``status``: the init's own status fd (a pooled one), or -1:
        it comes with the command."""
        ctl, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        report_r, report_w = os.pipe2(os.O_CLOEXEC)  # the init says b"r" once it reported itself
        pid = _clone(_CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC | _signal.SIGCHLD)
        if pid == 0:
            code = 1
            try:
                code = self._init(theirs, report_w, status)
            finally:
                os._exit(code)
        err = ctypes.get_errno()
        theirs.close()
        os.close(report_w)
        if pid < 0:
            ctl.close()
            os.close(report_r)
            return err
        return pid, ctl, report_r

    def refill(self) -> None:
        """Top the pool up, each new init's socket and the read end of its status pipe sent to
        the host (a failure, e.g. the pids limit reached, is retried when an init ends).

        The zygote keeps a copy of each pooled init's status fd from the start, so it can
        report an init that dies without reporting (killed) without being told that the host
        handed it a command: nothing crosses to the zygote on a command's path.
        """
        while len(self.pool) - len(self.taken | self.spent) < self.pool_size:
            status_r, status_w = os.pipe2(os.O_CLOEXEC)
            prepared = self._prepare(status_w)
            if isinstance(prepared, int):
                os.close(status_r)
                os.close(status_w)
                return
            pid, ctl, report = prepared
            self.pool[pid] = (report, status_w)
            if self.poller is not None:
                self.poller.register(report, select.POLLIN)
                self._reports[report] = pid
            try:
                _send_fds(self.sock, {"op": "pooled", "pid": pid}, [ctl.fileno(), status_r])
            except OSError:
                return  # the host is gone: the main loop ends on its EOF
            finally:
                ctl.close()
                os.close(status_r)

    def spent_init(self, report: int) -> None:
        """A pooled init's report pipe became readable: its command is over (b"r") or it died.
        The next init is made now, not once this one is reaped: an init's exit tears its mount
        namespace down first (its lock view's overlays: superblocks freed, an RCU grace period),
        ~0.3-1 ms the next init's clone and set-up would otherwise wait out (round 38, locks)."""
        pid = self._reports.pop(report, None)
        if pid is None:
            return
        self.poller.unregister(report)
        if pid in self.pool:
            self.spent.add(pid)
            self.refill()

    def take(self, pid: int) -> None:
        """The host handed pooled init ``pid`` a command that runs on: make the next one now."""
        if pid in self.pool:
            self.taken.add(pid)
            self.refill()

    def retire(self) -> None:
        """This zygote makes no more inits (the host replaced it). The host closed its sockets to
        the ready ones, which end on that EOF; the ones it handed a command run to the end. The
        answer follows every ``pooled`` message sent before it: the host lets those go too."""
        self.pool_size = 0
        if self.bridge is not None:  # before the answer: the next zygote's bridge takes over
            stop_bridge(*self.bridge)
            self.bridge = None
        try:
            _send_fds(self.sock, {"op": "retired"}, [])
        except OSError:
            pass  # the host is gone: the main loop ends on its EOF

    def spawn(self, req: dict[str, Any], fds: list[int]) -> None:
        """A command for which the host had no pooled init: an init made for it now."""
        stdin, stdout, stderr, status = fds
        prepared = self._prepare()
        if isinstance(prepared, int):
            for fd in (stdin, stdout):
                os.close(fd)
            why = self.eagain if prepared == errno.EAGAIN else os.strerror(prepared)
            _refuse(stderr, status, f"cannot start the command's namespace: {why}")
            os.close(stderr)
            return
        pid, ctl, report = prepared
        try:
            if self._zinit is not None:
                _send_raw(ctl, req["raw"], fds)
            else:
                _send_fds(ctl, req, fds)
        except OSError as exc:  # the init is gone (killed): never run the command elsewhere
            _refuse(stderr, status, f"cannot start the command: {exc.strerror}")
            status = -1
        finally:
            ctl.close()
            for fd in (stdin, stdout, stderr):
                os.close(fd)
        if status < 0:
            self.running[pid] = (req["id"], -1, report)  # reaped with nothing to report
            return
        self.running[pid] = (req["id"], status, report)
        self.by_id[req["id"]] = pid

    def _init(self, ctl: _socket.socket, report: int, status: int) -> int:
        """pid 1 of a command's namespace: set up ahead, then waits for its command on ``ctl``.

        Mounts its /proc and gives everything up (`_lower`) before the command is
        known; a set-up failure is said on the command's stderr once it arrives
        (the command never runs). Starts it, reaps, and once the command has
        ended kills what is left of the namespace, reaps that too, and only then
        reports: the status line arrives when nothing of the command runs any more.
        """
        gc.disable()  # short-lived: a collection would only copy pages shared with the zygote
        _signal.set_wakeup_fd(-1)
        # No Python handler (SIGINT's KeyboardInterrupt, the zygote's SIGCHLD): the kernel drops a
        # signal sent to a namespace's pid 1 from inside unless pid 1 handles it, so the command
        # can neither end its init (`kill -INT 1`) nor have it report in its stead.
        for sig in self._handled:  # SIGCHLD among them: waitpid needs it at default, never SIG_IGN
            _signal.signal(sig, _signal.SIG_DFL)
        _check(_libc.prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
        # Nothing of the zygote's: not its socket, not another command's status pipe or pooled
        # init's socket (whose reader would wait for this copy to close too).
        _close_all_but((ctl.fileno(), report, status))
        failure: BaseException | None = None
        try:
            os.setsid()
            # its own /proc, Docker's entries read-only and masked; the lock view
            _replay(self._proc_mounts, self._group_plans)
            self._lower()
        except Exception as exc:  # reported to the command that would have run here
            failure = exc
        else:
            self._rehearse()
        if self._short_slice is not None:  # ready: from now on, latency (best effort)
            _libc.syscall(_SYS_SCHED_SETATTR, 0, self._short_slice, 0)
        try:
            msg, fds = _receive(ctl)
        except OSError:
            return 1
        ctl.close()
        if status >= 0 and len(fds) == 3:  # pooled: its status fd is its own from the start
            fds.append(status)
        elif status >= 0:
            os.close(status)
        if not msg or len(fds) != 4:
            return 0  # discarded: the host closed the pool
        stdin, stdout, stderr, status = fds
        if failure is not None:
            _refuse(stderr, status, f"cannot start the command: {failure}")
            return 1
        code, wait_status = self._run(marshal.loads(msg), stdin, stdout, stderr)
        # Whatever the command left (background, setsid'd, double-forked): killed and reaped.
        # Every process of the namespace is this init's descendant and orphans become its
        # children, so no child left means nothing left (kill(-1) walks every host process).
        while _has_children():
            try:
                os.kill(-1, _signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
        _report(status, wait_status)
        # The output pipes end only now (this init held a copy): the host, reading the output
        # until its end, finds the status there already and wakes once for both.
        for fd in (stdout, stderr):
            os.close(fd)
        _write_all(report, b"r")  # reported: the zygote need not
        return code

    def _run(self, req: dict[str, Any], stdin: int, stdout: int, stderr: int) -> tuple[int, int]:
        """Start the command and wait for it: (init exit code, the command's wait status).

        Closes ``stdin`` once the command has it (a command closing its stdin early must
        not leave a writer blocked on this copy); the caller closes ``stdout`` and ``stderr``.
        """
        env = self._command_env(req["env"])
        try:  # as the command's user: a root caller's workspace is the sandbox uid's (idmapped)
            _enter_physical(req["cwd"])
        except OSError as exc:
            why = _SWAPPED if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
            _say(stderr, f"cannot enter the working directory {req['cwd']}: {why}")
            os.close(stdin)
            return 1, _FAILED
        argv = req["argv"]
        try:  # vfork+exec: no copy of this Python; Python's ignored SIGPIPE/SIGXFSZ back to default
            command = os.posix_spawnp(
                argv[0],
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin, 0),
                    (os.POSIX_SPAWN_DUP2, stdout, 1),
                    (os.POSIX_SPAWN_DUP2, stderr, 2),
                ],
                setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ),
            )
        except OSError as exc:  # as a shell says it: 127 not found, 126 not executable
            why = self.eagain if exc.errno == errno.EAGAIN else exc.strerror
            _say(stderr, f"{argv[0]}: {why}")
            code = 127 if exc.errno == errno.ENOENT else 126
            return code, code << 8
        finally:
            os.close(stdin)
        if self._command_slice is not None:  # no SCHED_RESET_ON_FORK (a negative nice): reset now
            _libc.syscall(_SYS_SCHED_SETATTR, command, self._command_slice, 0)
        while True:
            try:
                pid, wait_status = os.waitpid(-1, 0)
            except ChildProcessError:
                return 1, _FAILED
            except InterruptedError:
                continue
            if pid == command:
                if os.WIFSIGNALED(wait_status):
                    return 128 + os.WTERMSIG(wait_status), wait_status
                return os.waitstatus_to_exitcode(wait_status), wait_status

    def _command_env(self, env: dict[str, str]) -> dict[str, str]:
        """The command's environment: a root caller's HOME and SHELL made the sandbox user's."""
        if self.uid is not None:
            home = env.get("HOME")
            if home and not os.access(home, os.X_OK):
                env = {**env, "HOME": "/tmp"}  # root's home is not the sandbox user's
            if self.shell_fallback and "SHELL" not in env:
                env = {**env, "SHELL": self.shell_fallback}
        return env

    def _rehearse(self) -> None:
        """Receive and decode a sample request once, before the command is known (a warm-up only:
        nothing of it is kept, and a failure changes nothing).

        An init is a copy-on-write clone of the zygote: the first write to each page it still
        shares (a reference count, a frame, the receive buffer) copies that page. Receiving,
        decoding and preparing a command wrote ~50 of them (~0.1 ms here, measured), on the
        command's path; rehearsed, they are copied while the init waits.
        """
        try:
            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        except OSError:
            return
        try:
            _send_fds(ours, self._sample, [theirs.fileno()] * 3)
            msg, fds = _receive(theirs)
            for fd in fds:
                os.close(fd)
            self._command_env(marshal.loads(msg)["env"])
        except OSError:
            pass
        finally:
            ours.close()
            theirs.close()

    def _lower(self) -> None:
        """The init gives up everything before it is handed its command, which inherits that.

        Core dumps (hard limit 0), bounding set, uid/gid (root caller), capabilities,
        no_new_privs, the seccomp filter; not dumpable, so the command cannot open the init's fds or memory.
        """
        _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(DUMPABLE)")
        # No core dumps: a crashing command must not feed the host's core_pattern (a pipe to a
        # handler that runs as host root). 1, not 0: the kernel runs a pipe handler at any limit
        # but 1; the seccomp filter keeps the command from changing it (sandbox._seccomp.CORE_LIMIT).
        resource.setrlimit(resource.RLIMIT_CORE, (1, 1))
        if self.nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))
        for cap in self._bounding:  # while CAP_SETPCAP is still held
            _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), "prctl(CAPBSET_DROP)")
        if self.uid is not None and self.gid is not None:
            os.setgroups([])
            os.setresgid(self.gid, self.gid, self.gid)
            os.setresuid(self.uid, self.uid, self.uid)
            _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(DUMPABLE)")
        _check(_libc.capset(self._cap_header, self._no_caps), "capset")  # all empty
        _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(AMBIENT)")
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        self._own_domain()
        _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, self._seccomp_prog, 0, 0), "seccomp")

    def _own_domain(self) -> None:
        """The init, and so its command, in a Landlock domain of its own scoped for abstract unix
        sockets and signals (red team round 29, bwrapabs): the session's commands share its network
        namespace, so one command's abstract socket answered a later command's connect. Nothing
        outside the domain (another command, the zygote's bridge) is reachable that way or
        signalled; the zygote, outside every domain, still kills the init. After no_new_privs (which
        Landlock needs), before seccomp. Fails closed (the command never runs) once the kernel has
        the scopes."""
        if not self._scopes:
            return
        ruleset = _check(
            _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, self._scope, 24, 0), "landlock_create_ruleset"
        )
        try:
            _check(_libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
        finally:
            os.close(ruleset)

    def kill(self, req: dict[str, Any]) -> None:
        """SIGKILL a command's init (``pid``: a pooled one; ``id``: one made on request): the
        kernel kills the rest of its namespace.

        The init's exit is reported only once the namespace is empty, so the status
        line still comes after the namespace is gone.
        """
        pid = req.get("pid") or self.by_id.get(req.get("id", 0))
        if pid in self.running or pid in self.pool:  # only an init of this zygote's
            try:
                os.kill(pid, _signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:  # never end the whole session over one kill: the host escalates
                pass

    def reap(self) -> None:
        """Reap ended inits (reporting the ones that could not), then make the next ones.

        The pool is topped up here, once an init has ended, not when the host takes
        one: the next init's clone and set-up are then off the running command's way.
        """
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            entry = self.running.pop(pid, None)
            if entry is not None:
                command_id, status, report = entry
                self.by_id.pop(command_id, None)
            elif (pooled := self.pool.pop(pid, None)) is not None:
                report, status = pooled
                self.taken.discard(pid)
                self.spent.discard(pid)
                if self._reports.pop(report, None) is not None:
                    self.poller.unregister(report)
            else:
                continue  # the bridge
            if status < 0:  # its command was refused already
                os.close(report)
                continue
            if _said(report):  # the init reported the command's status itself
                os.close(status)
            else:  # killed first (or never handed a command): its namespace is gone now
                _report(status, wait_status)
        self.refill()


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 (none, or disabled at boot)."""
    return max(0, int(_libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)))


def _said(report: int) -> int:
    """Whether an init wrote b"r" (it reported its command itself); closes the pipe."""
    try:
        said = os.read(report, 8) == b"r"
    except OSError:
        said = False
    os.close(report)
    return int(said)


def _start_c_server(program: int, config: int, nofile: int | None = None) -> _socket.socket:
    """Start the C init's fork server (`zinit.c`) from ``program`` (an fd: a sealed memfd) with
    its configuration ``config`` at fd 3 and its socket at fd 4 (vfork+exec: nothing of this
    Python is copied). Its socket, to ask it for inits (`_c_clone`). ``nofile``: its
    ``RLIMIT_NOFILE``, soft and hard, set before it is asked for any init (every init and command
    inherits it; `Zygote.nofile`)."""
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
    given = (config, theirs.fileno())
    base = max(program, *given) + 1  # first above every fd named, then down to 3 and 4: none overwritten
    actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_DUP2, fd, base + i) for i, fd in enumerate(given)]
    for i in range(len(given)):
        actions += [(os.POSIX_SPAWN_DUP2, base + i, 3 + i), (os.POSIX_SPAWN_CLOSE, base + i)]
    try:
        pid = os.posix_spawn(
            f"/proc/self/fd/{program}",
            ["shellrt-init", "server", str(os.getpid())],
            os.environ,  # its inits look commands up in the zygote's PATH, as the Python init did
            file_actions=actions,
            setsigmask=(),
            setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ),
        )
    finally:
        theirs.close()
    if nofile is not None:
        try:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (nofile, nofile))
        except OSError:
            ours.close()  # it ends on this EOF: no init is made above the share (closed)
            raise
    return ours


def _c_clone(server: _socket.socket, fds: list[int]) -> int:
    """A new C init's pid (its socket, report pipe and, pooled, status fd given), or -errno."""
    try:
        _send_raw(server, b"p" if len(fds) == 3 else b"n", fds)
        said = server.recv(_INT)
    except OSError as exc:
        return -(exc.errno or errno.EIO)
    return int.from_bytes(said, sys.byteorder, signed=True) if len(said) == _INT else -errno.EPIPE


def _send_raw(sock: _socket.socket, data: bytes, fds: list[int]) -> None:
    if len(data) > _SMALL_MESSAGE:
        fit_message(sock, len(data))
    sock.sendmsg(
        [data],
        [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, b"".join(fd.to_bytes(_INT, sys.byteorder) for fd in fds))],
    )


#: Messages up to this size fit a socket's default send buffer (``net.core.wmem_default``).
_SMALL_MESSAGE = 150_000


def fit_message(sock: _socket.socket, size: int) -> None:
    """Let ``sock`` send one message of ``size`` bytes (a long command line and its environment):
    a seqpacket message must fit the sender's buffer. Root may exceed ``net.core.wmem_max``; others
    get up to it (the send then fails with EMSGSIZE, reported as too large)."""
    for option in (_SO_SNDBUFFORCE, _socket.SO_SNDBUF):
        try:
            sock.setsockopt(_socket.SOL_SOCKET, option, size + 65536)
            return
        except OSError:
            continue


_SO_SNDBUFFORCE = 32


def _send_fds(sock: _socket.socket, message: dict[str, Any], fds: list[int]) -> None:
    _send_raw(sock, marshal.dumps(message), fds)


#: Where messages are received: made once, not per message (a fresh 1 MiB buffer is an mmap,
#: an mremap and a munmap each time, ~7% of a zygote's and an init's CPU, measured); an
#: anonymous mapping, not a bytearray (zero-filled, so 256 resident pages that every clone of
#: the zygote copies the page table entries of): only the pages a message fills are resident.
#: Private (``mmap``'s default is MAP_SHARED): every init is a clone of the zygote, and a shared
#: buffer let an init read the message the zygote or another init received at the same moment
#: (one command's argv and env run on another's stdio).
_INBOX = mmap.mmap(-1, 1 << 22, flags=mmap.MAP_PRIVATE)


#: Size of a C int, an fd in SCM_RIGHTS (fds are packed by hand: ``array`` imports
#: ``collections.abc``, Python source the zygote's clones would copy for nothing).
_INT = 4


def _receive(sock: _socket.socket) -> tuple[bytes, list[int]]:
    fds: list[int] = []
    # CLOEXEC: the command must not inherit the status fd (it could forge its own exit status).
    size, ancdata, _flags, _addr = sock.recvmsg_into(
        [_INBOX], _socket.CMSG_SPACE(16 * _INT), _socket.MSG_CMSG_CLOEXEC
    )
    for level, kind, data in ancdata:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += memoryview(data[: len(data) - (len(data) % _INT)]).cast("i").tolist()
    return bytes(memoryview(_INBOX)[:size]), fds


def hold(sock: _socket.socket, steps: list[tuple[Any, ...]]) -> None:
    """Holder mode (run as root, on the host): a private mount namespace for the session's bwraps.

    Runs the set-up steps in a fresh mount namespace, says ready, and keeps the
    namespace alive until the host closes the socket; bwrap is started inside it
    (``nsenter --mount``), so the host's own mount table never changes.
    """
    _check(_libc.unshare(_CLONE_NEWNS), "unshare")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    setup(steps)
    sock.send(b"ready")
    while True:
        try:
            if not sock.recv(16):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    os._exit(0)


class Spawner:
    """Spawner mode (root caller, one bwrap per command): starts each command's bwrap, reports its end.

    Started by the host in the holder's mount namespace (``nsenter --mount``), as
    root, it turns itself into the sandbox uid at once: no supplementary groups,
    that uid and gid, so no capability; core dumps off (hard limit 0, inherited by
    every bwrap and command it starts); not dumpable; killed with the host. Then
    each ``{"op": "exec", "id", "argv", "env"}`` with stdin, stdout, stderr, a
    status fd and bwrap's own fds (its seccomp program, its json status) becomes
    one ``posix_spawn`` (a vfork: nothing of this Python is copied) of bwrap in a
    new session, those fds at 0, 1, 2, 3, 4... -- what ``prlimit -- nsenter
    --setuid --setgid -- bwrap`` did with two more programs exec'd per command.
    bwrap then runs exactly as it did (``--unshare-user``, ``--die-with-parent``:
    its sandbox dies with this process). Its wait status is written on the
    status fd once it is reaped; ``{"op": "kill", "id"}`` SIGKILLs it.
    """

    def __init__(self, sock: _socket.socket, uid: int, gid: int) -> None:
        self.sock = sock
        _check(_libc.prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
        resource.setrlimit(resource.RLIMIT_CORE, (1, 1))  # 1: no core file, no pipe handler either
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(DUMPABLE)")
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
            raise OSError(errno.EPERM, "the spawner could not switch to the sandbox uid")
        # fds 0-4 taken (stdio, then /dev/null): received fds land above them, so no dup2 onto
        # 0-4 in `_exec` can overwrite an fd that a later dup2 of the same spawn reads.
        while (fd := os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)) < 5:
            pass
        os.close(fd)
        self.eagain = ""  # what a command is told when no process is left (the pids cap)
        #: bwrap pid -> (command id, status fd)
        self.running: dict[int, tuple[int, int]] = {}
        self.by_id: dict[int, int] = {}

    def exec(self, req: dict[str, Any], fds: list[int]) -> None:
        stdin, stdout, stderr, status, *extra = fds
        actions = [
            (os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate((stdin, stdout, stderr, *extra))
        ]
        argv: list[str] = req["argv"]
        try:
            pid = os.posix_spawn(
                argv[0],
                argv,
                req["env"],
                file_actions=actions,
                setsid=True,
                setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ, _signal.SIGCHLD),
            )
        except OSError as exc:
            why = self.eagain if exc.errno == errno.EAGAIN else exc.strerror
            _refuse(stderr, status, f"cannot start {argv[0]}: {why}")
            return
        finally:
            for fd in (stdin, stdout, stderr, *extra):
                os.close(fd)
        self.running[pid] = (req["id"], status)
        self.by_id[req["id"]] = pid

    def kill(self, command_id: int) -> None:
        pid = self.by_id.get(command_id)
        if pid is not None:
            try:
                os.kill(pid, _signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reap(self) -> None:
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            entry = self.running.pop(pid, None)
            if entry is not None:
                self.by_id.pop(entry[0], None)
                _report(entry[1], wait_status)


def _requests(
    sock: _socket.socket,
    wake_r: int,
    reap: Callable[[], None],
    poller: Any = None,
    other: Callable[[int], None] | None = None,
) -> Iterator[tuple[dict[str, Any], list[int]]]:
    """The host's requests on ``sock`` (with the fds each carries), reaping children whenever
    SIGCHLD writes to ``wake_r``. The host's EOF or a broken socket ends this process: the
    session is over (no interpreter teardown; what it started dies with it).

    poll, not select: the socket's fd number is inherited from the host, where it may be
    >= FD_SETSIZE (1024) in a long-running server with many sessions. ``other``: called with
    each other readable fd the caller registered in ``poller`` (after any reap).
    """
    poller = poller if poller is not None else select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        try:
            readable = [fd for fd, _ in poller.poll()]
        except InterruptedError:
            continue
        if wake_r in readable:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
            reap()
        if other is not None:
            for fd in readable:
                if fd != wake_r and fd != sock.fileno():
                    other(fd)
        if sock.fileno() not in readable:
            continue
        try:
            msg, fds = _receive(sock)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                continue
            os._exit(0)
        if not msg:
            os._exit(0)
        yield marshal.loads(msg), fds


def spawn_bwraps(sock: _socket.socket, config: dict[str, Any]) -> None:
    """Spawner mode's loop (see `Spawner`): ends, and with it every bwrap it started, on the host's EOF."""
    spawner = Spawner(sock, config["uid"], config["gid"])
    spawner.eagain = config.get("eagain") or "Resource temporarily unavailable"
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    _signal.set_wakeup_fd(wake_w)
    _signal.signal(_signal.SIGCHLD, lambda _sig, _frame: None)
    os.chdir("/")
    sock.send(b"ready")
    for req, fds in _requests(sock, wake_r, spawner.reap):
        if req["op"] == "exec" and len(fds) >= 4:
            spawner.exec(req, fds)
            continue
        for fd in fds:
            os.close(fd)
        if req["op"] == "kill":
            spawner.kill(req["id"])


def _relay(src: _socket.socket, dst: _socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``."""
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(_socket.SHUT_WR)
    except OSError:
        pass


#: Connections one bridge relays at once; a further one waits to be accepted (a command
#: opening thousands cannot make the bridge spawn thousands of threads in the session).
_BRIDGE_MAX_CONNECTIONS = 256


def _bridge_serve(listener: _socket.socket, path: str, stop: int, ack: int) -> None:
    """The bridge's accept loop: each connection relayed to the proxy's unix socket by two threads.

    ``_thread`` and a pipe of tokens (C only, like the rest of this module: nothing
    to import while the session's first command starts). A byte on ``stop`` (its zygote was
    retired, `stop_bridge`): it accepts no more, says so on ``ack`` and relays what it has until
    the zygote ends. The listener may be shared with the session's next zygote's bridge: each
    waits in ``select`` on a non-blocking listener, and the one that lost a connection to the
    other goes back to waiting (a blocking accept would hang there, deaf to ``stop``).
    """
    import _thread  # only in the bridge process: the zygote itself starts no thread

    tokens_r, tokens_w = os.pipe()
    os.write(tokens_w, b"t" * _BRIDGE_MAX_CONNECTIONS)

    def relay(client: _socket.socket) -> None:
        try:
            upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                upstream.connect(path)
            except OSError:
                upstream.close()
                return
            done = _thread.allocate_lock()
            done.acquire()

            def back() -> None:
                try:
                    _relay(upstream, client)
                finally:
                    done.release()

            _thread.start_new_thread(back, ())
            _relay(client, upstream)
            done.acquire()
            upstream.close()
        finally:
            client.close()
            os.write(tokens_w, b"t")

    listener.setblocking(False)
    while True:
        os.read(tokens_r, 1)  # blocks while _BRIDGE_MAX_CONNECTIONS are being relayed
        ready = select.select([stop, listener.fileno()], [], [])[0]
        if stop in ready:
            listener.close()
            os.write(ack, b"s")
            while True:  # its relays go on until the zygote, whose commands they serve, ends
                select.select([], [], [])
        try:
            fd, _addr = listener._accept()  # type: ignore[attr-defined]  # _socket's raw accept
        except OSError:  # BlockingIOError: another bridge took it
            os.write(tokens_w, b"t")
            continue
        _thread.start_new_thread(relay, (_socket.socket(fileno=fd),))


def stop_bridge(stop: int, ack: int) -> None:
    """Have the bridge accept no more (its zygote is retired: every connection from now on is a
    later zygote's commands', which would be cut when this zygote ends), waiting a moment for it
    to say so. Closes both fds."""
    try:
        os.write(stop, b"s")
        select.select([ack], [], [], _BRIDGE_STOP_S)
    except OSError:
        pass  # the bridge is gone
    finally:
        os.close(stop)
        os.close(ack)


#: How long `stop_bridge` waits for the bridge (the host waits 2 s for the zygote's answer).
_BRIDGE_STOP_S = 1.0


def start_bridge(port: int, path: str, fd: int | None = None) -> tuple[_socket.socket, int, int]:
    """Network mode ``proxied``: listen on 127.0.0.1:``port`` of the sandbox's own network
    namespace and forward each connection to the host proxy's unix socket at ``path``.

    A process of its own (forked before the zygote sets its signal handling), dying
    with the zygote, with no capabilities and ``no_new_privs``, relaying at most
    `_BRIDGE_MAX_CONNECTIONS` connections at once; commands reach it only
    through TCP (the proxy decides what they may reach). Bound here, before ``ready``:
    a port that cannot be taken fails the session's start, never silently.
    ``fd``: the listener an earlier zygote of the session bound in this same network namespace
    (the host kept it, `sandbox._bwrap_netns`), served instead of binding the port again (its
    bridge may still serve it too, until it is stopped). Returns the listener, for the host to
    keep (the caller closes it), and the fds that stop the bridge (`stop_bridge`).
    """
    if fd is None:
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
    else:
        listener = _socket.socket(fileno=fd)
        os.set_inheritable(fd, False)
    stop_r, stop_w = os.pipe2(os.O_CLOEXEC)  # written to, never closed: the inits' clones copy it
    ack_r, ack_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid:
        os.close(stop_r)
        os.close(ack_w)
        return listener, stop_w, ack_r
    try:
        _check(_libc.prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
        _close_all_but((0, 1, 2, listener.fileno(), stop_r, ack_w))
        os.setsid()
        _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(DUMPABLE)")
        for cap in range(64):
            if _libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0) == 1:
                _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), "prctl(CAPBSET_DROP)")
        caps = (ctypes.c_uint32 * 6)()
        _check(_libc.capset(ctypes.byref(_CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)), caps), "capset")
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _bridge_serve(listener, path, stop_r, ack_w)
    finally:
        os._exit(1)


def sized_tmpfs(mounts: dict[str, tuple[int, int]]) -> None:
    """A fresh tmpfs (1777, nosuid, nodev) at each path -> (bytes, inodes) of the session, over what
    bubblewrap put there: its ``--tmpfs`` takes a size but no inode count (``nr_inodes``), and
    empty files take no blocks (red team, round 25). bwrap's mount may belong to a user namespace
    above the zygote's (a non-root caller's), which refuses a remount from here; a new mount in the
    zygote's own mount namespace does not. Raises `OSError` (no zygote: fail closed)."""
    for path, (size, inodes) in mounts.items():
        # What bubblewrap bound below ``path`` (a workspace or root under the host's /dev/shm) would
        # vanish under the new mount: each top mount is copied aside with its own subtree and
        # flags, and put back at the same place on the new tmpfs (CI51: "cannot enter the working
        # directory /dev/shm/…").
        below = [(point, _open_tree(point)) for point in _top_mounts_below(path)]
        _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={size},nr_inodes={inodes}")
        if os.statvfs(path).f_files > inodes:
            raise OSError(errno.EPERM, f"{path} has more than {inodes} inodes after its mount")
        for point, tree in below:
            os.makedirs(os.path.dirname(point), mode=0o755, exist_ok=True)
            if os.fstat(tree).st_mode & 0o170000 == 0o040000:
                os.mkdir(point, 0o755)
            else:
                os.close(os.open(point, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            _move_mount(tree, point)


def capped_devpts(options: str | None) -> None:
    """A devpts instance of the session's own at /dev/pts, over bubblewrap's: its ``--dev`` mounts
    one with no ``max=``, and the kernel's pty pool is host-wide (red team round 33: one command
    held every pty other sandboxes and containers could get). ``options`` (`sandbox._devtree`'s
    ``PTY_OPTIONS``) None: none asked for. Raises `OSError` (no zygote: fail closed)."""
    if options is None:
        return
    _mount("devpts", "/dev/pts", "devpts", _MS_NOSUID | _MS_NOEXEC, options)


def _unescape(field: str) -> str:
    """A mountinfo path: the kernel writes space, tab, newline and backslash as ``\\ooo`` (octal
    digits only, as `zinit.c` `unescaped`)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field) - i >= 4 and all(c in "01234567" for c in field[i + 1 : i + 4]):
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _top_mounts_below(path: str) -> list[str]:
    """Mount points strictly below ``path``, outermost only (each carries its own subtree)."""
    prefix = path.rstrip("/") + "/"
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        points = sorted(
            {_unescape(line.split(" ")[4]) for line in fh if line.split(" ")[4].startswith(prefix)}
        )
    return [p for p in points if not any(p.startswith(q.rstrip("/") + "/") for q in points if q != p)]


#: Where each init's lock view (`lock_view`) is assembled: bwrap makes the directory (``--dir``),
#: the zygote mounts a small read-only tmpfs there holding ``e`` (the empty bottom layer an
#: overlay without an upper layer needs) and ``h`` (where an overlay is put together before it is
#: moved over its directory). Commands see two empty read-only directories.
LOCK_VIEW_DIR = "/dev/.shellrt-lockview"
_MS_MOVE = 8192
_MNT_DETACH = 2
#: Not walked from /: the sandbox's own (its /proc, /sys, /dev, /tmp, /run are not host files).
_LOCK_VIEW_SKIP = frozenset(("proc", "sys", "dev", "tmp", "run"))
#: File systems that hold no host file a host program locks (or cannot be an overlay's layer).
_LOCK_VIEW_NOT_HOST = frozenset((
    "proc", "sysfs", "tmpfs", "devtmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "ramfs", "nsfs",
    "securityfs", "debugfs", "tracefs", "bpf", "fusectl", "configfs", "pstore", "hugetlbfs",
    "binfmt_misc", "autofs", "efivarfs",
))  # fmt: skip
#: Bounds on the walk (a zygote's start) and on each init's mount calls (`zinit.c`'s MAX_MOUNTS).
_LOCK_VIEW_DEPTH = 4
_LOCK_VIEW_TRIES = 96
_LOCK_VIEW_CALLS = 400


def _mount_table() -> dict[str, tuple[str, bool]]:
    """Mount point -> (file system type, writable) of the mount seen there (the last one listed)."""
    table: dict[str, tuple[str, bool]] = {}
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            fields = line.split(" ")
            sep = fields.index("-")
            table[_unescape(fields[4])] = (fields[sep + 1], fields[5].split(",")[0] == "rw")
    return table


def _lock_view_calls(path: str, points: list[str]) -> list[MountCall]:
    """The mount calls that put an overlay of its own over the directory ``path``: the overlay is
    made at ``h`` (``path`` over the empty ``e``: no upper layer, read-only), every mount that was below
    ``path`` (``points``, outermost only, each with its subtree) is moved to the same place in it,
    and then the whole is moved over ``path``."""
    hold = LOCK_VIEW_DIR + "/h"
    flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    # ``path`` on top: the overlay's root takes its owner and mode from the top layer (``e`` on top
    # showed a 0700 /root as ``e``'s 0755 to every uid).
    # Planned once a session while host mounts below ``path`` come and go: see `_replay`'s marks.
    head = flags | _CALL_GROUP_HEAD
    calls = [_mount_call("overlay", hold, "overlay", head, f"lowerdir={path}:{LOCK_VIEW_DIR}/e")]
    calls += [
        _mount_call(point, hold + point[len(path) :], None, _MS_MOVE | _CALL_IF_PRESENT) for point in points
    ]
    calls.append(_mount_call(hold, path, None, _MS_MOVE | _CALL_GROUP_END))
    return calls


def _shared_view_calls(mount: str, paths: list[str], known: list[str]) -> list[MountCall]:
    """One overlay of ``mount`` (the mount point the directories ``paths`` all lie on, none of
    them a mount point itself) for all of them (round 38): made at ``h``; each directory's part
    of it bound at ``s``, the mounts below the directory moved into that, and the whole moved
    over the directory; then the overlay taken off ``h`` (never left where a command could reach
    the mount's whole tree). One overlay's superblock is set up and torn down instead of one a
    directory: each one's teardown waited out an expedited RCU grace period
    (``ovl_free_fs`` -> ``kern_unmount_array``, measured with perf, docs/performance.md).
    Then what no overlay of a directory covers, in each init as it finds it (`_cover_rest`): the
    regular files directly in ``mount``'s own directory (``/container_info.json``) and its
    subdirectories made after the plan (not in ``known``, its subdirectories at the plan)."""
    hold, stage = LOCK_VIEW_DIR + "/h", LOCK_VIEW_DIR + "/s"
    flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    outer = _CALL_GROUP_HEAD | _CALL_OUTER
    calls = [_mount_call("overlay", hold, "overlay", flags | outer, f"lowerdir={mount}:{LOCK_VIEW_DIR}/e")]
    base = len(mount.rstrip("/"))
    for path in paths:
        # A bind keeps the overlay mount's read-only, nosuid, nodev.
        calls.append(_mount_call(hold + path[base:], stage, None, _MS_BIND | _CALL_GROUP_HEAD))
        calls += [
            _mount_call(point, stage + point[len(path) :], None, _MS_MOVE | _CALL_IF_PRESENT)
            for point in _top_mounts_below(path)
        ]
        calls.append(_mount_call(stage, path, None, _MS_MOVE | _CALL_GROUP_END))
    if len(rest := "/".join(known)) < 65536:  # else none: as before round 38
        calls.append(_mount_call(hold, mount, None, _CALL_REST, rest))
    calls.append(_mount_call(None, hold, None, _CALL_UMOUNT | _CALL_GROUP_END | _CALL_OUTER))
    return calls


def _subdirectories(directory: str) -> list[str]:
    """The names of ``directory``'s subdirectories now (not through a symbolic link)."""
    try:
        return sorted(e.name for e in os.scandir(directory) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _mount_of(path: str, points: Iterable[str]) -> str:
    """The mount point ``path`` lies on: the longest of ``points`` that is it or above it."""
    return max((p for p in points if p == "/" or path == p or path.startswith(p + "/")), key=len)


def _plan_lock_view(report: int) -> None:
    """In a throwaway child (its own mount namespace): cover every read-only host directory it
    can, walking down from / where a directory cannot be covered whole (a host mount below it:
    the kernel refuses an overlay layer that would uncover a locked mount), and write the covered
    directories to ``report``, one a line."""
    _check(_libc.unshare(_CLONE_NEWNS), "unshare")
    table = _mount_table()
    done: list[str] = []
    tries = 0
    calls = 0
    # Breadth first: a deep tree of host mounts (a container engine's) spends the bounds last.
    queue: list[tuple[str, int]] = [("/", 1)]
    while queue:
        path, depth = queue.pop(0)
        try:
            entries = sorted(e.name for e in os.scandir(path) if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for name in entries:
            if path == "/" and name in _LOCK_VIEW_SKIP:
                continue
            full = path.rstrip("/") + "/" + name
            fstype, writable = table.get(full, ("", False))
            if writable or fstype in _LOCK_VIEW_NOT_HOST or any(c in full for c in ",:\\=\n"):
                continue  # a writable root, the sandbox's own, or a name an option string cannot carry
            if tries >= _LOCK_VIEW_TRIES:
                break
            tries += 1
            planned = _lock_view_calls(full, _top_mounts_below(full))
            if calls + len(planned) > _LOCK_VIEW_CALLS:
                continue
            first, *rest = planned
            if _mount_unmarked(first) < 0:
                if ctypes.get_errno() == errno.EINVAL and depth < _LOCK_VIEW_DEPTH:
                    queue.append((full, depth + 1))  # a host mount below: each directory of it on its own
                continue
            if all(_mount_unmarked(call) >= 0 for call in rest):
                done.append(full)
                calls += len(planned)
            else:  # not seen here; undone so the next one finds ``h`` empty
                _libc.umount2(LOCK_VIEW_DIR.encode() + b"/h", _MNT_DETACH)
    # Mounts that can carry one overlay for all of their covered directories (`_shared_view_calls`):
    # tried here too (refused where a host mount below is locked: a non-root caller's /).
    shared = []
    for mount in sorted({_mount_of(p, table) for p in done}):
        if sum(1 for p in done if _mount_of(p, table) == mount) < 2 or mount in done:
            continue
        first = _mount_call("overlay", LOCK_VIEW_DIR + "/h", "overlay", _MS_RDONLY | _MS_NOSUID | _MS_NODEV,
                            f"lowerdir={mount}:{LOCK_VIEW_DIR}/e")  # fmt: skip
        if _mount_unmarked(first) >= 0:
            _libc.umount2(LOCK_VIEW_DIR.encode() + b"/h", _MNT_DETACH)
            shared.append(mount)
    lines = [p + "\n" for p in done] + ["+" + m + "\n" for m in shared]
    _write_all(report, "".join(lines).encode("utf-8", "surrogateescape"))


def lock_view(enabled: bool) -> list[MountCall]:
    """The mount calls that give each init an overlay of its own over every read-only host
    directory the session shows (red team round 37, locks). Locks live on the inode: through a
    bind mount a command that could read a host file could ``flock`` it, or take a POSIX or
    open-file-description read lock, and a host program locking it (apt's debconf database, a
    package cache, an sqlite database) waited or failed. An open through an overlay gives the
    overlay's inode, so the command's locks (and inotify watches) stay on it. One overlay per
    init (made ahead, in the pool), not one per session: an overlay caches what it looked up,
    and the host's later changes below it would not show; a command sees them as of its start.
    Worked out here once, in a child that tries it (`_plan_lock_view`); empty when not ``enabled``.
    Raises `OSError` (no zygote: fail closed) when the place it needs cannot be made."""
    if not enabled:
        return []
    opts = "mode=0755,size=4k,nr_inodes=8"
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    _mount("tmpfs", LOCK_VIEW_DIR, "tmpfs", flags, opts)
    os.mkdir(LOCK_VIEW_DIR + "/e", 0o755)
    os.mkdir(LOCK_VIEW_DIR + "/h", 0o755)
    os.mkdir(LOCK_VIEW_DIR + "/s", 0o755)
    _mount(None, LOCK_VIEW_DIR, None, _MS_REMOUNT | _MS_RDONLY | flags, opts)
    read, write = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            _plan_lock_view(write)
            os._exit(0)
        finally:
            os._exit(1)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _pid, status = os.waitpid(pid, 0)
    if status != 0:
        raise OSError(errno.EIO, "the lock view could not be planned")
    lines = bytes(b"".join(chunks)).decode("utf-8", "surrogateescape").splitlines()
    covered = [line for line in lines if not line.startswith("+")]
    shared = {line[1:] for line in lines if line.startswith("+")}
    table = _mount_table()
    own = {path: _lock_view_calls(path, _top_mounts_below(path)) for path in covered}
    total = sum(map(len, own.values()))
    calls: list[MountCall] = []
    done: set[str] = set()
    for path in covered:
        mount = _mount_of(path, table)
        group = [p for p in covered if _mount_of(p, table) == mount]
        if mount in shared and total + 3 <= _LOCK_VIEW_CALLS:  # 3 calls more than one overlay each
            if mount not in done:
                done.add(mount)
                total += 3
                calls += _shared_view_calls(mount, group, _subdirectories(mount))
            continue
        calls += own[path]
    return calls


def lower_ceilings(sysctls: dict[str, int], rlimits: list[tuple[int, int]]) -> None:
    """A non-root caller's session: ceilings of its own on the caller's per-uid kernel budgets.

    Its commands run as the caller's uid, and the kernel charges what they hold (inotify and
    fanotify instances and marks, message queue bytes, queued signals) to that uid on the host
    too, where the caller's other programs draw on the same budget. The session's user namespace
    gets its own ``/proc/sys/user`` limits (written from a child in a fresh pid and mount
    namespace with its own /proc: the zygote's /proc/sys is read-only), and the zygote's rlimits,
    soft and hard, which every command inherits and cannot raise, are lowered. Raises `OSError`
    when a ceiling cannot be set: no zygote then (fail closed), the host says why.
    """
    for res, value in rlimits:
        resource.setrlimit(res, (value, value))
    if not sysctls:
        return
    pid = _clone(_CLONE_NEWNS | _CLONE_NEWPID | _signal.SIGCHLD)
    if pid == 0:
        code = 0
        try:
            _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
            _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
            for name, value in sysctls.items():
                out = os.open("/proc/sys/user/" + name, os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(out, str(value).encode())
                finally:
                    os.close(out)
        except OSError as exc:
            code = exc.errno or errno.EIO
        finally:
            os._exit(code)
    _check(pid, "clone")
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code:
        why = os.strerror(code) if code > 0 else f"signal {-code}"
        raise OSError(code, f"cannot set the session's ceilings in /proc/sys/user ({why})")


def calm_scheduling() -> None:
    """Give up the caller's scheduling priority before anything of a command can inherit it
    (`sandbox._bwrap_sched`, red team round 36): SCHED_OTHER unless OTHER, BATCH or IDLE already,
    a nice of 0 or more, no real-time I/O class, ``RLIMIT_RTPRIO`` and ``RLIMIT_NICE`` 0:0 (no command raises either
    again), and the highest OOM score (`raise_oom_score`). A real-time command's busy loop took up
    to 95% of a CPU from the host's processes, past any cgroup CPU limit. Each step needs no
    privilege; a failure stops the start."""
    for limit in (resource.RLIMIT_RTPRIO, resource.RLIMIT_NICE):
        resource.setrlimit(limit, (0, 0))
    ioprio = _libc.syscall(_SYS_IOPRIO_GET, _IOPRIO_WHO_PROCESS, 0)
    if ioprio < 0 or ioprio >> 13 == _IOPRIO_CLASS_RT:  # real-time I/O: back to "none" (from its nice)
        _check(_libc.syscall(_SYS_IOPRIO_SET, _IOPRIO_WHO_PROCESS, 0, 0), "ioprio_set")
    if os.sched_getscheduler(0) not in (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    if os.getpriority(os.PRIO_PROCESS, 0) < 0:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    raise_oom_score()


def raise_oom_score() -> None:
    """Run at `OOM_SCORE_ADJ` (`sandbox._oomscore`, red team round 36 bwrap2): every command is the
    first process the kernel's OOM killer picks, never its caller's equal. The host starts this
    process under ``choom`` already; this holds where a start missed it. Raising needs no privilege."""
    fd = os.open("/proc/self/oom_score_adj", os.O_RDWR | os.O_CLOEXEC)
    try:
        if int(os.pread(fd, 16, 0) or b"-1000") < OOM_SCORE_ADJ:
            os.write(fd, str(OOM_SCORE_ADJ).encode())
    finally:
        os.close(fd)


#: ``/proc/self/loginuid`` of a process no login set it for (a daemon's, CI's, a container's).
_AUDIT_UNSET = b"4294967295"


def pin_audit_identity(uid: int) -> None:
    """Set this process's audit login uid to ``uid`` where no login set it (red team round 38):
    every init, bwrap and command inherits it, and none can change it (that needs
    CAP_AUDIT_CONTROL). Unset, a command could set it once, without a capability, to any uid its
    namespace maps: a root caller's session command wrote 0 and the host's audit log showed its
    actions as host root's login. No file (a kernel without audit): nothing a command could set
    either. A failed write stops the start."""
    try:
        fd = os.open("/proc/self/loginuid", os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if os.pread(fd, 16, 0).strip() == _AUDIT_UNSET:
            os.write(fd, str(uid).encode())
    finally:
        os.close(fd)


def clean_signals() -> None:
    """No signal blocked, none ignored that the caller ignored (``nohup``: SIGHUP; a shell's ``&``:
    SIGINT and SIGQUIT): both survive exec, so every command inherited them (red team round 36
    bwrap2). Python's own SIGPIPE and SIGXFSZ stay ignored here: every spawn resets those two."""
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
    for sig in range(1, 32):
        if sig in (_signal.SIGKILL, _signal.SIGSTOP, _signal.SIGPIPE, _signal.SIGXFSZ):
            continue
        if _signal.getsignal(sig) == _signal.SIG_IGN:
            _signal.signal(sig, _signal.SIG_DFL)


def main() -> None:
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # inherited from bwrap; no command may ever hold it
    sock = _socket.socket(fileno=fd)
    config = marshal.loads(bytes.fromhex(sys.argv[2]))
    calm_scheduling()  # the holder, the root spawner and the zygote alike: first, single-threaded
    # Modes made here (the holder's skeleton, 0711) and every session command's files: never the
    # caller's umask (a hardened root's 027 left the sandbox uid no way to its roots; round 36 bwrap2).
    os.umask(SANDBOX_UMASK)
    clean_signals()
    if config.get("hold"):
        hold(sock, config["setup"])
    uid = config.get("uid")
    pin_audit_identity(os.getuid() if uid is None else uid)  # the spawner's and the zygote's
    if config.get("spawner"):
        spawn_bwraps(sock, config)
    # A mount namespace of the zygote's own, private once: every command's copy inherits
    # that (bwrap's own namespace refuses propagation changes to an unprivileged caller).
    _check(_libc.unshare(_CLONE_NEWNS), "unshare")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    setup(config["setup"])
    sized_tmpfs(config.get("tmpfs") or {})
    capped_devpts(config.get("devpts"))
    view = lock_view(bool(config.get("lockview")))
    lower_ceilings(config.get("sysctls") or {}, config.get("rlimits") or [])
    held: list[int] = []  # what the host keeps of this sandbox's network (`sandbox._bwrap_netns`)
    if config.get("netns"):
        held.append(os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC))
    bridge = config.get("bridge")
    stops: tuple[int, int] | None = None
    if bridge is not None:  # network "proxied"
        listener, *stop = start_bridge(bridge["port"], bridge["socket"], bridge.get("fd"))
        held.append(listener.detach())
        stops = (stop[0], stop[1])
    if held:  # before any init is made: none ever holds them
        try:
            _send_fds(sock, {"op": "netns"}, held)
        finally:
            for fd in held:
                os.close(fd)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    _signal.set_wakeup_fd(wake_w)
    _signal.signal(_signal.SIGCHLD, lambda _sig, _frame: None)
    zygote = Zygote(config, sock, view)  # after the handlers: it notes which ones its inits reset
    zygote.bridge = stops
    os.chdir("/")
    # Every init is a clone of this process: what it owns now is shared copy-on-write with each
    # one. Objects made so far never move to a collected generation again (a collection would
    # write to all of them, copying their pages), and free heap memory goes back to the system
    # (fewer pages for each clone to map).
    gc.collect()
    gc.freeze()
    _libc.malloc_trim(0)
    zygote.poller = select.poll()  # before the first init: each pooled one's report pipe in it
    zygote.refill()  # the first command's init waits ready too
    # "ready python": the host's C init could not start, so requests must come in the Python init's format.
    sock.send(b"ready python " + zygote.c_init_failure.encode() if zygote.c_init_failure else b"ready")
    for req, fds in _requests(sock, wake_r, zygote.reap, zygote.poller, zygote.spent_init):
        if req["op"] == "spawn" and len(fds) == 4:
            zygote.spawn(req, fds)
        else:
            for fd in fds:
                os.close(fd)
            if req["op"] == "taken":
                zygote.take(req["pid"])
            elif req["op"] == "kill":
                zygote.kill(req)
            elif req["op"] == "retire":
                zygote.retire()


if __name__ == "__main__":
    main()
