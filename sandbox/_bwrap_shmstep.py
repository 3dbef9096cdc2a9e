"""``python3 -I -S _bwrap_shmstep.py DIR OPTIONS PTS PTS_OPTIONS COMMAND [ARG...]``: ``zinit shm`` without the C starter.

Before a non-root caller's one bwrap per command, on the host side (`sandbox._bwrap_shm`): a user and
mount namespace of the caller's own (its uid and gid mapped to themselves, nothing else), a tmpfs of
OPTIONS (size, nr_inodes) mounted on DIR there, then COMMAND (bwrap, which binds DIR at the sandbox's
/dev/shm). Without it, a caller with no C compiler (or ``vm.memfd_noexec`` 2) gave every command
bwrap's uncapped /dev/shm, ~3 M inodes (red team round 27 "Left"; round 28). The same steps as
``zinit.c`` ``shm_main``, run by a fresh single-threaded interpreter (``unshare`` of a user namespace
needs one); its capabilities end at the exec (a non-zero uid in the namespace). A failure is said and
nothing runs (exit 125). Standard library only: run by path, with no site and no import of ours.
"""

from __future__ import annotations

import ctypes
import os
import sys

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8


def _put(path: str, text: str) -> None:
    with open(path, "w") as out:
        out.write(text)


def _pin_audit_identity(uid: int) -> None:
    """``zinit.c`` ``pin_audit_identity``: the audit login uid set to ``uid`` where unset, before the
    namespace, so bwrap and the command inherit it (red team round 38 novel2). No file: no audit."""
    try:
        fd = os.open("/proc/self/loginuid", os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if os.pread(fd, 16, 0).strip() == b"4294967295":
            try:
                os.write(fd, str(uid).encode())
            except PermissionError:
                pass  # set after all, to a uid this namespace does not map (zinit.c; round 38 review5)
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    if len(argv) < 6:
        sys.stderr.write("usage: _bwrap_shmstep.py DIR OPTIONS PTS PTS_OPTIONS COMMAND [ARG...]\n")
        return 2
    where, options, pts, pts_options, command = argv[1], argv[2], argv[3], argv[4], argv[5:]
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    step = "/proc/self/loginuid"
    try:
        _pin_audit_identity(uid)
        step = "unshare"
        if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        step = "/proc/self/setgroups"
        _put(step, "deny")
        step = "/proc/self/uid_map"
        _put(step, f"{uid} {uid} 1\n")
        step = "/proc/self/gid_map"
        _put(step, f"{gid} {gid} 1\n")
        step = "mount"
        flags = _MS_NOSUID | _MS_NODEV
        if libc.mount(b"tmpfs", os.fsencode(where), b"tmpfs", flags, os.fsencode(options)) < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        step = "devpts"
        pts_flags = _MS_NOSUID | _MS_NOEXEC
        if libc.mount(b"devpts", os.fsencode(pts), b"devpts", pts_flags, os.fsencode(pts_options)) < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        step = command[0]
        if not os.path.isabs(command[0]):  # no PATH lookup on the host: the caller names bwrap by path
            raise OSError(2, "not an absolute path")
        os.execv(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"cannot make the command's capped /dev/shm ({step}): {exc.strerror}\n")
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv))
