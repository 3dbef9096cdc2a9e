"""Root caller, one bwrap per command: the session's /dev, made once in the holder's mount namespace.

Run as a script (``python -I -S _devtree.py TARGET [UNMOUNT...]``) as root inside the
holder's namespace (``nsenter --mount``); imports nothing of shellrt, so it runs on any
interpreter path the holder's namespace shows.

bubblewrap's ``--dev /dev`` builds a /dev for every sandbox: a tmpfs, six device
nodes each bound from the host (one mount plus one read and parse of the whole
mount table each, in bubblewrap 0.8), a devpts instance and a few symlinks. Per
command, that was the largest part of a bwrap start. Here the same tree is made
once per session at TARGET: a tmpfs holding ``null zero full random urandom tty``
(character devices made with the host's numbers and modes: two mounts in all, as
every bwrap copies each mount of the namespace it starts in), ``pts`` (a devpts instance of its own, not the
host's, of at most `PTY_MAX` ptys), ``shm`` (an empty mount point: each command gets a fresh tmpfs there),
and the ``ptmx fd stdin stdout stderr core`` symlinks; then the tmpfs is made
read-only, so no command can leave anything in it for the next. Each bwrap binds
it with ``--dev-bind`` (one bind). The commands of a session share its pty
instance, as they share its /tmp.

First, the UNMOUNT paths are taken off (deepest first, a path twice for two stacked
mounts): mounts below /dev and /proc that every bwrap covers anyway
(`sandbox._covered_mounts`). Exit status 0 when the tree is ready; 2 (and a
message on stderr) when it is not, with nothing left mounted at TARGET.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

#: Device nodes bubblewrap's ``--dev`` binds from the host.
NODES = ("null", "zero", "full", "random", "urandom", "tty")
#: Symlinks bubblewrap's ``--dev`` makes (name -> target).
LINKS = {
    "ptmx": "pts/ptmx",
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
    "core": "/proc/kcore",
}

#: ptys one devpts instance gives out at once (its ``max=``). The kernel's pool is host-wide:
#: ``kernel.pty.max`` (4096) less ``kernel.pty.reserve`` (1024, the host's own devpts) for every other
#: instance together -- each sandbox's, each container's. Without it one command held all 3071 and
#: every other sandbox on the host got "out of pty devices" (red team round 33).
PTY_MAX = 64
#: bubblewrap's ``--dev`` devpts options, with the cap: the sandbox's own instance.
PTY_OPTIONS = f"newinstance,ptmxmode=0666,mode=620,max={PTY_MAX}"

_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    if _libc.mount(enc[0], enc[1], enc[2], flags, enc[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def build(target: str) -> None:
    """The /dev tree at ``target`` (an existing directory), read-only once made."""
    _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NOEXEC, "mode=0755,size=64k")
    for name in NODES:
        try:
            host = os.stat(f"/dev/{name}")
        except OSError:
            continue
        if stat.S_ISCHR(host.st_mode):  # made here, not bound: a bind is one more mount per bwrap
            node = os.path.join(target, name)
            os.mknod(node, stat.S_IFCHR | 0o600, host.st_rdev)
            os.chmod(node, stat.S_IMODE(host.st_mode))  # the host's mode, whatever the umask
    for name in ("pts", "shm"):
        os.mkdir(os.path.join(target, name), 0o755)
    _mount(
        "devpts",
        os.path.join(target, "pts"),
        "devpts",
        _MS_NOSUID | _MS_NOEXEC,
        PTY_OPTIONS,
    )
    for name, link in LINKS.items():
        os.symlink(link, os.path.join(target, name))
    _mount(None, target, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NOEXEC, "mode=0755,size=64k")


def main(argv: list[str]) -> int:
    target, unmount = argv[0], argv[1:]
    for point in unmount:
        _libc.umount2(point.encode(), 0)  # best effort: a mount that stays only costs
    try:
        os.makedirs(target, mode=0o711, exist_ok=True)
        build(target)
    except OSError as exc:
        _libc.umount2(target.encode(), _MNT_DETACH)
        print(f"cannot make the session's /dev at {target}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
