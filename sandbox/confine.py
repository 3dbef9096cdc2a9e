"""The one confinement module: where a path is, and reaching it without leaving the allowed places.

Every layer that asks "is this path inside these roots?" (permission rules and
engine, the Bash tool's check, the CLI, the supervisor's cwd tracking, docker
path mapping, the file tools) asks it here, with one semantics:

**Lexical containment** (`normalize`, `is_within`, `within_any`,
`relative_to`, `contained`): paths are absolute POSIX paths, normalised
lexically (``os.path.normpath``: ``.``/``..``/``//`` folded, ``..`` never
followed through a symlink). This is the *pre-check* used for permission
matching; `contained(..., resolve=True)` additionally resolves host symlinks
(``realpath``) for callers that judge host paths. It never opens anything, so
it is only advice: a path can change between the check and the use.

**Anchored resolution** (`View.resolve`, `open_file`, `open_directory`,
`write_file`): the boundary itself. A `View` is the sandbox's filesystem as
commands see it — a table of `Mount` s (sandbox path -> host directory that
backs it, writable or not) plus masked (read-denied) paths. A path is resolved
component by component from the host directory fd of its mount, every
component opened ``O_PATH|O_NOFOLLOW``; a symlink is read and resolved *in the
sandbox's view* (an absolute target goes through the mount table again, so
``/tmp`` on bwrap is the session's private /tmp and ``/etc`` on docker is
unreachable); ``openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS)``
is the fast path when the kernel has it (Linux >= 5.6; falls back silently
under seccomp). The result is a directory fd plus a name and the *canonical*
sandbox path: containment in a writable mount and masks are decided on that
canonical path, and the file is then opened/created relative to the fd with
``O_NOFOLLOW`` — so what was checked is what is opened. Symlinks that stay
inside the view stay usable. Atomic writes create their temp file in the
anchored parent fd and ``renameat`` (``renameat2(RENAME_EXCHANGE)`` over a file that was read)
within it; nothing is left on a refusal.

This module imports nothing of ``shellrt`` (``sandbox/`` is the lowest layer).
"""

from __future__ import annotations

import ctypes
import errno
import os
import posixpath
import secrets
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from sandbox._maskaliases import denied_inodes, mount_aliases
from sandbox._namefold import fold_path
from sandbox._reach import NO_ACL, Acl, acl_of, bits_for
from sandbox._realpath import settled_realpath as _realpath
from sandbox.errors import SandboxExecError

__all__ = [
    "ConfinementError",
    "Identity",
    "Mount",
    "Resolved",
    "SpecialFileError",
    "Stamp",
    "View",
    "WriteOutcome",
    "contained",
    "file_kind",
    "identity",
    "is_within",
    "normalize",
    "open_beneath",
    "open_dir_beneath",
    "open_directory",
    "open_file",
    "openat2_available",
    "reader_may",
    "relative_to",
    "stamp",
    "within_any",
    "write_file",
]

_MAX_HOPS = 40


class SpecialFileError(OSError):
    """Raised by `open_file` for an entry that is not a regular file (FIFO, device, socket): it is
    refused before it is opened, since opening one has effects (a FIFO's writer wakes, a device acts).
    ``kind`` names what it is."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{path} is {kind}, not a regular file", path)
        self.kind = kind


def file_kind(mode: int) -> str:
    """What an entry is, in words, for messages."""
    if stat.S_ISFIFO(mode):
        return "a FIFO / named pipe"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a special file" if not stat.S_ISREG(mode) else "a regular file"


class ConfinementError(OSError):
    """Raised when a path leaves the places it may reach: outside every mount, outside the
    writable mounts (for a write), under a masked path, a symlink loop, or a component that
    changed while it was being opened. The message says where it went and what to do."""


# --- lexical containment -------------------------------------------------------------------


def normalize(path: str) -> str:
    """Lexically normalised absolute POSIX path (``..`` folded without following symlinks)."""
    if not path.startswith("/"):
        raise ValueError(f"not an absolute path: {path!r}")
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("//") else out


def relative_to(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` ("" when equal), or None when it is not ``root`` or below it."""
    p, r = normalize(str(path)), normalize(str(root))
    if r == "/":
        return p.lstrip("/")
    if p == r:
        return ""
    if p.startswith(r + "/"):
        return p[len(r) + 1 :]
    return None


def is_within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it (lexically)."""
    return relative_to(path, root) is not None


def within_any(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or below one (lexically)."""
    return any(is_within(path, r) for r in roots)


def contained(paths: Iterable[str], roots: Iterable[object], *, resolve: bool) -> bool:
    """The permission pre-check: every path inside one of the roots.

    Roots count in both their lexical and resolved forms (a workspace given
    through a symlink). ``resolve``: judge each path by its ``realpath`` (host
    paths: a symlink inside pointing outside is outside); otherwise lexically
    (sandbox paths the host cannot resolve, or paths already canonical).
    """
    forms: list[str] = []
    for root in roots:
        text = normalize(str(root))
        forms.append(text)
        real = _realpath(text)
        if real is not None and real != text:
            forms.append(real)
    for path in paths:
        text = normalize(str(path))
        judged = _realpath(text) if resolve else text
        # A path that cannot be resolved (it changed while being resolved) is not contained: fail closed.
        if judged is None or not within_any(judged, forms):
            return False
    return True


# --- openat2 ----------------------------------------------------------------------------------

_SYS_OPENAT2 = 437  # the same number on every architecture (the generic syscall table, Linux 5.6)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class _Openat2:
    """``openat2`` through ctypes (Python 3.11 has no wrapper); disabled after ENOSYS/EPERM."""

    def __init__(self) -> None:
        self.usable = True
        try:
            self._libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
            self._syscall = self._libc.syscall
            self._syscall.restype = ctypes.c_long
        except (OSError, AttributeError):
            self._libc, self.usable = None, False

    def __call__(self, dir_fd: int, path: str, flags: int, resolve: int) -> int | None:
        """An fd, or None when openat2 is unavailable; raises OSError for a real failure."""
        if not self.usable:
            return None
        how = _OpenHow(flags | os.O_CLOEXEC, 0, resolve)
        fd = int(
            self._syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_int(dir_fd),
                ctypes.c_char_p(os.fsencode(path)),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG):
            self.usable = False
            return None
        raise OSError(err, os.strerror(err), path)


_openat2 = _Openat2()


def openat2_available() -> bool:
    """Whether the fast path is in use (tests assert the fallback gives the same answers)."""
    return _openat2.usable


# --- renameat2 ------------------------------------------------------------------------------

_RENAME_EXCHANGE = 2
#: renameat2's number for a libc without the wrapper (glibc < 2.28); elsewhere ENOSYS (check, then rename).
_SYS_RENAMEAT2 = {"x86_64": 316, "i386": 353, "i686": 353, "aarch64": 276, "riscv64": 276, "armv7l": 382}
#: What a filesystem (NFS, FUSE, ...) or a seccomp filter answers when it cannot exchange; EPERM as
#: well, where a rename (an immutable file's) says why (`_refuse_locked_file`).
_NO_EXCHANGE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM})


class _Renameat2:
    """``renameat2`` through ctypes (Python 3.11 has no wrapper): libc's, else the raw syscall."""

    def __init__(self) -> None:
        self._call: Callable[..., int] | None = None
        self._nr: int | None = None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            return
        fn = getattr(libc, "renameat2", None)
        if fn is not None:
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            self._call = fn
        elif os.uname().machine in _SYS_RENAMEAT2:
            self._call = libc.syscall
            self._call.restype = ctypes.c_long
            self._nr = _SYS_RENAMEAT2[os.uname().machine]

    def __call__(self, parent: int, old: bytes, new: bytes, flags: int) -> None:
        """Rename ``old`` to ``new`` in directory fd ``parent``; OSError (ENOSYS when unavailable)."""
        if self._call is None:
            raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
        args = (ctypes.c_int(parent), ctypes.c_char_p(old), ctypes.c_int(parent), ctypes.c_char_p(new))
        if self._nr is None:
            rc = int(self._call(*args, ctypes.c_uint(flags)))
        else:
            rc = int(self._call(ctypes.c_long(self._nr), *args, ctypes.c_uint(flags)))
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))


_renameat2 = _Renameat2()


def _exchange(parent: int, a: bytes, b: bytes) -> None:
    """Exchange entries ``a`` and ``b`` of directory fd ``parent`` atomically (RENAME_EXCHANGE)."""
    _renameat2(parent, a, b, _RENAME_EXCHANGE)


# --- the view -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """A sandbox path and the host directory that backs it."""

    path: str
    host: str
    writable: bool = False
    #: The host path permission rules know this place by (docker: the original workspace,
    #: not its private copy); None: the sandbox path itself.
    logical: str | None = None
    #: ``(uid, gid)`` new files and directories get (docker's copy belongs to the container's
    #: user: a file the tools create must stay writable by commands); None: the caller's.
    owner: tuple[int, int] | None = None
    #: Read as the caller, not as `View.reader` (shellrt's own session directory: results the
    #: model is pointed at, which the sandbox's user cannot read).
    caller_reads: bool = False
    #: The sandbox sees this root through an idmapped mount (bwrap run as root): its ``owner``
    #: appears as `View.reader`, every other owner as nobody.
    idmapped: bool = False


@dataclass
class Resolved:
    """The outcome of `View.resolve`; owns ``dir_fd`` (use as a context manager).

    - the target exists below ``dir_fd``: ``name`` is its (non-symlink) entry;
    - the target is ``dir_fd`` itself (a mount root, ``/``): ``name`` and ``missing`` empty;
    - the target does not exist: ``missing`` are the components below ``dir_fd``.
    """

    path: str
    dir_fd: int
    name: str | None = None
    missing: tuple[str, ...] = ()

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Resolved:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _refuse_unencodable(path: str) -> None:
    """A path no file can have (a NUL byte, a lone surrogate) is a refusal, not a ValueError escaping."""
    try:
        encoded = os.fsencode(path)
    except UnicodeError:
        raise ConfinementError(
            errno.EINVAL, f"{path!r} cannot name a file (it is not encodable as a file name); check the path"
        ) from None
    if b"\x00" in encoded:
        raise ConfinementError(
            errno.EINVAL, f"{path!r} cannot name a file (it holds a NUL byte); check the path"
        )


def _close(fd: int | None) -> None:
    if fd is not None and fd >= 0:
        os.close(fd)


@dataclass
class View:
    """The sandbox's filesystem as its commands see it: mounts and masked paths (sandbox paths)."""

    mounts: Sequence[Mount]
    masked: Sequence[str] = ()
    #: ``(uid, gid)`` the sandbox's commands run as when that is not the caller (bwrap run as
    #: root): outside the writable mounts the tools reach only what that identity may (the
    #: permission bits of every directory on the way and of the entry itself), never what the
    #: caller's own power (root) reaches. None: the caller's identity is the commands'.
    reader: tuple[int, int] | None = None
    #: Places the sandbox fills with its own content (bwrap: its /proc, its /dev, the emptied /run):
    #: the host's are not what commands see there, so the tools reach nothing below them.
    private: Sequence[str] = ()
    #: Write-denied paths (``Edit``/``Write`` deny rules, sandbox paths): no write lands at another
    #: name of one (another mount's, a hard link); the permission layer judges the name itself.
    unwritable: Sequence[str] = ()
    _by_path: dict[str, Mount] = field(init=False, repr=False)
    #: `unwritable_by`'s other names and inodes, made at its first use (a view lives for one call).
    _unwritable_names: tuple[tuple[str, ...], dict[tuple[int, int], str]] | None = field(
        default=None, init=False, repr=False
    )
    #: `mounted_aliases`' table, made at its first use.
    _mounted: tuple[str, ...] | None = field(default=None, init=False, repr=False)
    #: `alias_of`'s table, made at its first use (a view lives for one call).
    _denied_inodes: dict[tuple[int, int], str] | None = field(default=None, init=False, repr=False)
    #: ``(folded mask, mask)`` pairs for `masked_by`: all of them, and those the fold changes
    #: (made at its first miss).
    _folded_masks: tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self) -> None:
        by_path: dict[str, Mount] = {}
        for m in self.mounts:
            key = normalize(m.path)
            prior = by_path.get(key)
            # A place listed twice keeps the most permissive entry (a writable root over "/").
            if prior is None or (m.writable and not prior.writable):
                by_path[key] = Mount(key, m.host, m.writable, m.logical, m.owner, m.caller_reads, m.idmapped)
        self._by_path = by_path
        self.mounts = sorted(by_path.values(), key=lambda m: -len(m.path))
        masked: list[str] = []
        for p in self.masked:
            text = normalize(p)
            real = _realpath(text)  # a mask named through a symlink covers its target too
            masked += [text] if real is None or real == text else [text, real]
        self.masked = tuple(dict.fromkeys(masked))
        self.private = tuple(dict.fromkeys(normalize(p) for p in self.private))
        self.unwritable = tuple(dict.fromkeys(normalize(p) for p in self.unwritable))

    # --- lexical questions -------------------------------------------------------------------
    def mount_of(self, path: str) -> Mount | None:
        """The deepest mount holding ``path`` (lexically), or None."""
        for m in self.mounts:
            if is_within(path, m.path):
                return m
        return None

    def writable(self, path: str) -> bool:
        m = self.mount_of(path)
        return m is not None and m.writable

    def writable_roots(self) -> tuple[str, ...]:
        return tuple(m.path for m in self.mounts if m.writable)

    def masked_by(self, path: str) -> str | None:
        """The masked path covering ``path``, if any: as spelt, or as a filesystem that folds case
        and ignores zero-width characters reads it (``SECRETS/key`` is ``secrets/key`` there;
        red team round 27, `sandbox._namefold`)."""
        hit = next((m for m in self.masked if is_within(path, m)), None)
        if hit is not None or not self.masked:
            return hit
        hit = next((a for a in self.mounted_aliases() if is_within(path, a)), None)
        if hit is not None:
            return hit
        if self._folded_masks is None:
            pairs = tuple((fold_path(m), m) for m in self.masked)
            self._folded_masks = (pairs, tuple(p for p in pairs if p[0] != p[1]))
        folded = fold_path(path)
        # A path and mask that fold to themselves were compared above: only the rest again.
        pairs = self._folded_masks[0] if folded != path else self._folded_masks[1]
        return next((m for f, m in pairs if is_within(folded, f)), None)

    def mounted_aliases(self) -> tuple[str, ...]:
        """Other names of the masks shown at a host path (local, bwrap): through another mount of
        their file system or an overlay's layer, per the mount table now, worked out once per view:
        a mount the operator made after the session started is not in the policy (round 37)."""
        if self._mounted is None:
            same = [Path(m) for m in self.masked if self.to_host(m) == m]
            found = mount_aliases(same) if same else []
            roots = self.writable_roots()  # a name holding one is not refused (`derive_policy` skips it)
            self._mounted = tuple(
                a for a in map(os.fspath, found) if a not in self.masked and not any(is_within(r, a) for r in roots)
            )
        return self._mounted

    def unwritable_by(self, path: str, st: os.stat_result | None) -> str | None:
        """The write-denied path whose file ``path`` names by another name (``st``: the existing
        entry's ``lstat``, None when missing): below one as named, below another mount's name of
        one per the mount table now (a bind mount made before or during the session), or a hard
        link of a write-denied file (one below a write-denied directory in the roots too). The
        sandbox binds those read-only for commands; the file tools wrote through them (round 38)."""
        if not self.unwritable:
            return None
        hit = next((u for u in self.unwritable if is_within(path, u)), None)
        if hit is not None:
            return hit
        if self._unwritable_names is None:
            pairs = [(u, host) for u in self.unwritable if (host := self.to_host(u)) is not None]
            same = [Path(host) for u, host in pairs if host == u]
            aliases = tuple(os.fspath(a) for a in mount_aliases(same)) if same else ()
            roots = [m.host for m in self.mounts if m.writable]
            try:
                inodes = denied_inodes(pairs, roots)
            except SandboxExecError as exc:
                raise ConfinementError(errno.EACCES, str(exc)) from None
            self._unwritable_names = aliases, inodes
        aliases, inodes = self._unwritable_names
        hit = next((a for a in aliases if is_within(path, a)), None)
        if hit is None and st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            hit = inodes.get((st.st_dev, st.st_ino))
        return hit

    def alias_of(self, st: os.stat_result) -> str | None:
        """The masked path whose file ``st`` is, when ``st`` is another name (a hard link) of it.

        A mask covers a path, not an inode: a link made before the file was denied (shipped by
        the repository, made by a command before the file existed) shows its bytes under a name
        no mask covers. The sandbox masks such names (`sandbox._maskaliases`); the file tools,
        which open by path on the host, ask this of every file they open with more than one
        link. Files with one link (nearly all) cost nothing. Raises `ConfinementError` when the
        search for them is refused (too many names, a directory it cannot list: fail closed).
        """
        if st.st_nlink < 2 or not stat.S_ISREG(st.st_mode) or not self.masked:
            return None
        return self.denied_inodes().get((st.st_dev, st.st_ino))

    def denied_inodes(self) -> dict[tuple[int, int], str]:
        """``(st_dev, st_ino) -> masked path`` of the masked files another name could show
        (`sandbox._maskaliases.denied_inodes`), worked out once per view; `ConfinementError`
        when that search is refused."""
        if self._denied_inodes is None:
            pairs = [(m, host) for m in self.alias_masks() if (host := self.to_host(m)) is not None]
            roots = [m.host for m in self.mounts if m.writable]
            try:
                self._denied_inodes = denied_inodes(pairs, roots)
            except SandboxExecError as exc:
                raise ConfinementError(errno.EACCES, str(exc)) from None
        return self._denied_inodes

    def alias_masks(self) -> Sequence[str]:
        """The masks whose files another name (a hard link) could show (`denied_inodes`): all of
        them here; a view may leave out masks of a directory no command can link from."""
        return self.masked

    def to_host(self, path: str) -> str | None:
        """Host path backing a sandbox path (lexical), or None when unreachable."""
        m = self.mount_of(path)
        if m is None:
            return None
        rel = relative_to(path, m.path) or ""
        return posixpath.join(m.host, rel) if rel else m.host

    def to_logical(self, path: str) -> str:
        """The path permission rules match: the mount's logical host path, or the sandbox path."""
        m = self.mount_of(path)
        if m is None or m.logical is None:
            return normalize(path)
        rel = relative_to(path, m.path) or ""
        return posixpath.join(m.logical, rel) if rel else m.logical

    def from_host(self, host_path: str) -> str | None:
        """Sandbox path of a host path under some mount's backing dir (deepest backing dir wins)."""
        best: tuple[int, str] | None = None
        for m in self.mounts:
            for base in (m.host, m.logical):
                if base is None:
                    continue
                rel = relative_to(host_path, base)
                if rel is not None and (best is None or len(base) > best[0]):
                    best = (len(base), posixpath.join(m.path, rel) if rel else m.path)
        return None if best is None else best[1]

    def describe_places(self) -> str:
        """The places a model may work in (writable mounts), for error messages."""
        return ", ".join(sorted(self.writable_roots())) or "none"

    # --- anchored resolution -----------------------------------------------------------------
    def resolve(self, path: str, *, follow_last: bool = True) -> Resolved:
        """Resolve ``path`` (absolute, sandbox view) to a directory fd and entry; see `Resolved`.

        Raises `ConfinementError` when it is unreachable or loops; masks and
        writability are the caller's decision, on ``Resolved.path``.
        """
        _refuse_unencodable(path)
        current = normalize(path)
        for _ in range(_MAX_HOPS):
            self._refuse_private(current)
            step: Resolved | str | None = self._fast(current, follow_last)
            if step is None:
                step = self._walk(current, follow_last)
            if isinstance(step, Resolved):
                return step
            current = step
        raise ConfinementError(errno.ELOOP, f"too many levels of symbolic links resolving {path}; check where its links lead")

    def _refuse_private(self, path: str) -> None:
        """Every hop of a resolution is judged: a symlink into /proc leads nowhere either."""
        for place in self.private:
            if not is_within(path, place):
                continue
            m = self.mount_of(path)
            if m is None or is_within(place, m.path):  # no mount of ours lies between: the sandbox's own
                raise ConfinementError(
                    errno.EACCES,
                    f"{path} is in the sandbox's own {place}, which the file tools cannot serve; use Bash "
                    f"(e.g. `cat {path}`)",
                )

    def _holder_of(self, m: Mount) -> Mount | None:
        """The writable mount whose host directory holds ``m``'s (deepest), if any."""
        best: Mount | None = None
        for other in self.mounts:
            inside = other.writable and other.host != m.host and is_within(m.host, other.host)
            if inside and (best is None or len(other.host) > len(best.host)):
                best = other
        return best

    def _open_root(self, m: Mount) -> int:
        """``m``'s host directory. One inside a writable mount's (the session's /tmp under a
        workspace's temp dir, a root inside a root) is reached from that mount's fd, one
        component at a time without following a symlink: a command may rename the directories
        on the way, and a path opened as given would follow the symlink it put there to any host
        directory, under a canonical path that still looks like ``m`` (red team, round 11)."""
        holder = self._holder_of(m)
        try:
            if holder is None:
                return os.open(m.host, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            base = self._open_root(holder)
            try:
                rel = relative_to(m.host, holder.host) or ""
                return open_dir_beneath(base, [p for p in rel.split("/") if p])
            finally:
                os.close(base)
        except ConfinementError:
            raise
        except OSError as exc:
            if holder is not None and exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise ConfinementError(
                    errno.EAGAIN,
                    f"{m.path} changed since it was checked (a directory on the way to it was replaced); "
                    "try again",
                ) from None
            raise ConfinementError(
                exc.errno or errno.ENOENT, f"{m.path} is not available ({exc.strerror}); check the path"
            ) from None

    def _fast(self, path: str, follow_last: bool) -> Resolved | None:
        """openat2 without symlinks from the deepest mount; None means: walk instead."""
        if not _openat2.usable:
            return None
        m = self.mount_of(path)
        rel = relative_to(path, m.path) if m is not None else None
        if m is None or not rel:
            return None
        parent, name = posixpath.split(rel)
        root = self._open_root(m)
        try:
            dfd = _openat2(
                root,
                parent or ".",
                os.O_PATH | os.O_DIRECTORY,
                _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
            )
        except OSError:
            return None
        finally:
            os.close(root)
        if dfd is None:
            return None
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return Resolved(path, dfd, None, (name,))
        except OSError:
            os.close(dfd)
            return None
        if stat.S_ISLNK(st.st_mode) and follow_last:
            os.close(dfd)
            return None
        return Resolved(path, dfd, name)

    def _walk(self, path: str, follow_last: bool) -> Resolved | str:
        """One component-wise O_NOFOLLOW walk; returns the result, or the path to restart with
        after a symlink."""
        parts = [p for p in path.split("/") if p]
        canon = "/"
        root = self._by_path.get("/")
        fd: int | None = self._open_root(root) if root is not None else None
        try:
            for i, name in enumerate(parts):
                last = i == len(parts) - 1
                nxt = posixpath.join(canon, name)
                mount = self._by_path.get(nxt)
                if mount is not None:
                    # A mount point: its backing directory, whatever the parent holds there.
                    new = self._open_root(mount)
                    _close(fd)
                    fd, canon = new, nxt
                    continue
                if fd is None:
                    if any(is_within(m.path, nxt) for m in self.mounts):
                        canon = nxt  # a directory on the way to a mount point
                        continue
                    raise ConfinementError(
                        errno.EACCES,
                        f"{nxt} is outside what the file tools can reach in this sandbox (they work in "
                        f"{self.describe_places()}); use Bash (e.g. `cat`) for other files the sandbox can see",
                    )
                try:
                    child = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                except FileNotFoundError:
                    if any(is_within(m.path, nxt) for m in self.mounts):
                        # Missing here, but a mount point lies below (a workspace under a private /tmp).
                        _close(fd)
                        fd, canon = None, nxt
                        continue
                    held, fd = fd, None
                    return Resolved(path, held, None, tuple(parts[i:]))
                try:
                    mode = os.fstat(child).st_mode
                    if stat.S_ISLNK(mode) and (follow_last or not last):
                        target = os.readlink("", dir_fd=child)
                        os.close(child)
                        child = -1
                        base = target if target.startswith("/") else posixpath.join(canon, target)
                        return normalize(posixpath.join(base, *parts[i + 1 :]))
                except BaseException:
                    _close(child)
                    raise
                if last or not stat.S_ISDIR(mode):
                    os.close(child)
                    if not last:
                        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", nxt)
                    held, fd = fd, None
                    return Resolved(nxt, held, name)
                _close(fd)
                fd, canon = child, nxt
            if fd is None:
                raise ConfinementError(
                    errno.EACCES,
                    f"{canon} is outside what the file tools can reach in this sandbox (they work in "
                    f"{self.describe_places()}); use Bash (e.g. `cat`) for other files the sandbox can see",
                )
            held, fd = fd, None
            return Resolved(canon, held)
        finally:
            _close(fd)


# --- operations -------------------------------------------------------------------------------


def _refuse_masked(view: View, path: str) -> None:
    mask = view.masked_by(path)
    if mask is not None:
        raise ConfinementError(
            errno.EACCES, f"{path} is in a read-denied location of the sandbox policy ({mask})"
        )


def _refuse_write_denied(view: View, r: Resolved, target: str) -> None:
    """Refuse a write to another name of a write-denied file (`View.unwritable_by`)."""
    if not view.unwritable:
        return
    entry: os.stat_result | None = None
    if not r.missing and r.name is not None:
        try:
            entry = os.stat(r.name, dir_fd=r.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            entry = None
    denied = view.unwritable_by(target, entry)
    if denied is not None:
        raise ConfinementError(
            errno.EACCES,
            f"{target} is another name (another mount of it, or a hard link) of {denied}, which a deny "
            "rule of the session protects from writes; no tool writes it there either",
        )


def _refuse_alias(view: View, path: str, fd: int) -> int:
    """``fd`` unless its file is a read-denied file by another name (`View.alias_of`); closed then."""
    try:
        denied = view.alias_of(os.fstat(fd))
        if denied is not None:
            # The mask, not the file: a name inside a masked directory is the mask's to keep (round 41).
            raise ConfinementError(
                errno.EACCES,
                f"{path} is another name (a hard link) of a file in the read-denied location "
                f"{view.masked_by(denied) or denied} of the sandbox policy",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _permits(st: os.stat_result, reader: tuple[int, int], want: int, where: str) -> bool:
    """Whether ``st`` (the inode at the host path ``where``) gives ``reader`` (no supplementary
    groups) every bit of ``want`` (an ``S_IROTH|S_IXOTH``-style mask), as the kernel judges the
    sandbox's user: its owner bits if it owns the inode, else its POSIX ACL entry, its group's,
    or the other bits (`sandbox._reach.bits_for`: red team round 48 -- mode bits alone let Read
    return, with root's power, a file an ACL closes to the sandbox uid). ``reader`` is the on-disk
    identity it has (an idmapped root's owner, there). An ACL that cannot be read: refused."""
    if st.st_uid == reader[0] or not st.st_mode & stat.S_IRWXG:
        acl: Acl | None = NO_ACL  # the owner's bits, or an empty mask: the kernel reads no ACL
    else:
        acl = acl_of(where, follow=False, st=st)
    return acl is not None and bits_for(st, acl, reader) & want == want


def reader_may(view: View, canonical: str, want: int, entry: os.stat_result | None = None) -> bool:
    """Whether the sandbox's user (`View.reader`) reaches the canonical path ``canonical``: every
    directory from ``/`` to it searchable, the entry itself granting ``want`` (``0o4`` read,
    ``0o5`` list a directory, ``0`` only reach it). ``entry``: its stat when already opened.
    Always True without a reader, inside a writable mount (shown to the sandbox's user as its
    own) and in a `Mount.caller_reads` mount. For search results found by a walk run as the
    caller (dropped when False)."""
    reader = view.reader
    if reader is None:
        return True
    mount = view.mount_of(canonical)
    if mount is None or mount.caller_reads:
        return True
    top = "/"
    if mount.writable:
        if not mount.idmapped or mount.owner is None:
            return True
        # Through the idmapped mount the root's owner is the sandbox's user (and nobody else is);
        # the directories above the root are made passable for it.
        reader, top = mount.owner, mount.path

    def host_of(path: str) -> str:
        host = view.to_host(path)
        return host if host is not None else path

    def stat_of(path: str) -> os.stat_result | None:
        try:
            return os.stat(host_of(path), follow_symlinks=False)
        except OSError:
            return None

    ancestors: list[str] = []
    parent = posixpath.dirname(canonical) if canonical != top else top
    while canonical != top:
        ancestors.append(parent)
        if parent == top or parent == "/":
            break
        parent = posixpath.dirname(parent)
    for directory in reversed(ancestors):
        st = stat_of(directory)
        if st is None or not _permits(st, reader, 0o1, host_of(directory)):
            return False
    st = entry if entry is not None else stat_of(canonical)
    return st is not None and _permits(st, reader, want, host_of(canonical))


def _refuse_unwritable(view: View, r: Resolved, target: str) -> None:
    """Refuse a write the sandbox's user could not make (`View.reader`; bwrap run as root): the
    directory it lands in (``r.dir_fd``, the deepest one that exists) must let that user create
    and remove entries, and a sticky one must be its own or hold a file of its own there. The
    tools run as root on the host, and an idmapped workspace shows another owner's directory to
    commands as nobody's (red team round 16: Write and Edit wrote where `echo >` was refused)."""
    if view.reader is None:
        return
    depth = len(r.missing) if r.missing else (1 if r.name is not None else 0)
    landing = target
    for _ in range(depth):
        landing = posixpath.dirname(landing)
    st = os.fstat(r.dir_fd)
    writer = view.reader
    mount = view.mount_of(landing)
    if mount is not None and mount.writable and mount.idmapped and mount.owner is not None:
        writer = mount.owner
    allowed = reader_may(view, landing, 0o3, st)
    if (
        allowed
        and st.st_mode & stat.S_ISVTX
        and not r.missing
        and r.name is not None
        and st.st_uid != writer[0]
    ):
        try:
            entry = os.stat(r.name, dir_fd=r.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            entry = None
        allowed = entry is None or entry.st_uid == writer[0]
    if not allowed:
        raise PermissionError(
            errno.EACCES,
            f"Permission denied: the sandbox's user (uid {view.reader[0]}) cannot write in {landing}, "
            "so neither can the file tools (its owner may change that, e.g. `chmod`/`chown` outside the sandbox)",
            target,
        )


def _refuse_unreadable(view: View, canonical: str, fd: int, want: int) -> None:
    """Refuse what the sandbox's user could not read (see `reader_may`)."""
    if view.reader is None or reader_may(view, canonical, want, os.fstat(fd)):
        return
    assert view.reader is not None
    raise PermissionError(
        errno.EACCES,
        f"Permission denied: the sandbox's user (uid {view.reader[0]}) cannot read {canonical}, so "
        "neither can the file tools",
        canonical,
    )


@dataclass(frozen=True)
class Identity:
    """What a check judged, by inode rather than by name: the directory ``Resolved.dir_fd`` is
    (where an open or a write happens) and the entry itself (None: it did not exist). A path
    names other files once a command renames or exchanges (``renameat2(RENAME_EXCHANGE)``) a
    directory on its way, under the same canonical path (red team, round 11)."""

    parent: tuple[int, int]
    entry: tuple[int, int] | None


def _ids(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def identity(r: Resolved) -> Identity:
    """The `Identity` of a resolution (for `open_file`, `open_directory`, `write_file`'s ``expect_id``)."""
    parent = _ids(os.fstat(r.dir_fd))
    if r.missing:
        return Identity(parent, None)
    if r.name is None:
        return Identity(parent, parent)
    try:
        return Identity(parent, _ids(os.stat(r.name, dir_fd=r.dir_fd, follow_symlinks=False)))
    except FileNotFoundError:
        return Identity(parent, None)


def _changed(path: str) -> ConfinementError:
    return ConfinementError(
        errno.EAGAIN,
        f"{path} changed since it was checked (a command renamed or replaced it, or a directory on its "
        "way); try again",
    )


def _refuse_changed(r: Resolved, expect: str | None, path: str, expect_id: Identity | None = None) -> None:
    if expect is not None and r.path != expect:
        raise ConfinementError(
            errno.EAGAIN,
            f"{path} now leads to {r.path}, not to {expect} where it led when it was checked "
            "(a symbolic link changed); try again",
        )
    if expect_id is not None and identity(r) != expect_id:
        raise _changed(path)


def _refuse_other(fd: int, expect_id: Identity | None, path: str) -> int:
    """``fd`` when it is the entry the check judged; closed and refused otherwise."""
    if expect_id is not None and _ids(os.fstat(fd)) != expect_id.entry:
        os.close(fd)
        raise _changed(path)
    return fd


def _vetted(view: View, path: str, fd: int, bits: int) -> int:
    """``fd`` once `_refuse_unreadable` let it pass; closed when it refuses."""
    try:
        _refuse_unreadable(view, path, fd, bits)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(
    view: View,
    path: str,
    flags: int = os.O_RDONLY,
    *,
    expect: str | None = None,
    expect_id: Identity | None = None,
) -> tuple[int, str]:
    """Open an existing regular file (not following a final symlink that was swapped in); ``(fd, canonical)``.

    Anything else is refused before it is opened (`SpecialFileError`, IsADirectoryError): the
    entry is looked at through an ``O_PATH`` fd first and the opened fd must be that inode.
    ``O_NONBLOCK`` and ``O_NOCTTY`` are always added.
    ``expect``: the canonical path a permission check judged; anything else is refused.
    ``expect_id``: the `Identity` it judged; another file there is refused (`ConfinementError`).
    Raises FileNotFoundError / IsADirectoryError / `ConfinementError`.
    """
    for _ in range(3):
        with view.resolve(path) as r:
            _refuse_changed(r, expect, path, expect_id)
            _refuse_masked(view, r.path)
            if r.missing:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", r.path)
            if r.name is None:
                raise IsADirectoryError(errno.EISDIR, "Is a directory", r.path)
            fd = _open_regular_in(r.dir_fd, r.name, flags, r.path)
            if fd is None:
                continue  # became a symlink, or was swapped, after the walk: resolve again
            fd = _refuse_other(fd, expect_id, path)
            return _vetted(view, r.path, _refuse_alias(view, r.path, fd), 0o4), r.path
    raise ConfinementError(errno.ELOOP, f"{path} kept changing into a symbolic link while it was opened; try again")


def _open_regular_in(parent: int, name: str, flags: int, shown: str) -> int | None:
    """Open the regular file ``name`` in ``parent`` (looked at through ``O_PATH`` first, never
    following a symlink); None when it changed between the look and the open (look again)."""
    try:
        probe = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    # ``probe`` stays open until the opened fd is compared with it: (device, inode) names the file
    # looked at only while that inode lives. Closed before, a regular file a command unlinked then
    # was freed, and a FIFO or directory it made next could take its number (ext4 reuses one at
    # once) and be opened as that regular file (red team round 51).
    try:
        seen = os.fstat(probe)
        if stat.S_ISLNK(seen.st_mode):
            return None
        if stat.S_ISDIR(seen.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", shown)
        if not stat.S_ISREG(seen.st_mode):
            raise SpecialFileError(shown, file_kind(seen.st_mode))
        try:
            fd = os.open(
                name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=parent
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(now.st_mode):
            os.close(fd)
            return None
        return fd
    finally:
        os.close(probe)


def open_dir_beneath(dir_fd: int, parts: Sequence[str], *, create: int | None = None) -> int:
    """An ``O_PATH`` fd of the directory ``parts`` below ``dir_fd``, reached one component at a time
    with ``O_NOFOLLOW`` (missing ones made with mode ``create`` when given). A symlink or a file on
    the way raises `OSError` (``ELOOP``/``ENOTDIR``) and ``..`` is refused: it never leads elsewhere."""
    if ".." in parts:
        raise ConfinementError(errno.EACCES, f"{'/'.join(parts)} climbs out of the directory with ..")
    fd = os.dup(dir_fd)
    try:
        for name in parts:
            if create is not None:
                try:
                    os.mkdir(name, create, dir_fd=fd)
                except FileExistsError:
                    pass
            nxt = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_beneath(dir_fd: int, rel: str, flags: int = os.O_RDONLY) -> int:
    """Open the regular file ``rel`` below the directory ``dir_fd`` (a search root already anchored):
    no component may be a symlink or ``..``, nothing that is not a regular file is opened
    (`SpecialFileError`), so a tree that changes after it was listed leads nowhere else."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ConfinementError(errno.EACCES, f"{rel} does not name a file below the searched directory")
    for _ in range(3):
        parent = open_dir_beneath(dir_fd, parts[:-1])
        try:
            fd = _open_regular_in(parent, parts[-1], flags, rel)
        finally:
            os.close(parent)
        if fd is not None:
            return fd
    raise ConfinementError(errno.ELOOP, f"{rel} kept changing into a symbolic link while it was opened; try again")


def open_directory(
    view: View, path: str, *, expect: str | None = None, expect_id: Identity | None = None
) -> tuple[int, str]:
    """Open an existing directory for listing (``O_RDONLY|O_DIRECTORY``); ``(fd, canonical)``.
    ``expect``/``expect_id``: as for `open_file`."""
    for _ in range(3):
        with view.resolve(path) as r:
            _refuse_changed(r, expect, path, expect_id)
            _refuse_masked(view, r.path)
            if r.missing:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", r.path)
            name = r.name or "."
            try:
                fd = os.open(
                    name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=r.dir_fd
                )
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    continue
                raise
            return _vetted(view, r.path, _refuse_other(fd, expect_id, path), 0o5), r.path
    raise ConfinementError(errno.ELOOP, f"{path} kept changing into a symbolic link while it was opened; try again")


def _umask() -> int:
    """The process umask without the racy umask(0)/umask(old) dance (other threads create files too)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


@dataclass(frozen=True)
class Stamp:
    """A file as it was when its content was read (from an ``fstat`` taken before the read).

    `write_file` given one (``base``) replaces the file only if it is still that inode with that
    size and those times right before the replace, and the file the replace displaced is that inode
    with that size and modification time (`_exchanged`): a command that rewrote it (in place, or by a
    rename over it) while the tool worked would otherwise lose its change unseen (red team, rounds 20, 26).
    """

    inode: tuple[int, int]
    size: int
    mtime_ns: int
    ctime_ns: int


def stamp(st: os.stat_result) -> Stamp:
    """The `Stamp` of a stat result."""
    return Stamp((st.st_dev, st.st_ino), st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class WriteOutcome:
    """Where a write landed (canonical sandbox path) and whether it created the file."""

    path: str
    created: bool


def write_file(
    view: View,
    path: str,
    data: bytes,
    *,
    make_parents: bool = False,
    expect: str | None = None,
    expect_id: Identity | None = None,
    base: Stamp | None = None,
    exclusive: bool = False,
) -> WriteOutcome:
    """Atomically replace (or create) ``path`` with ``data``, confined to the view's writable mounts.

    The temp file is created in the anchored parent directory fd and renamed
    within it; on any failure it is removed. An existing file keeps its mode;
    a new one gets 0o666 minus the umask. ``expect``: the canonical path a
    permission check judged; a path that now leads elsewhere is refused. ``expect_id``: the
    `Identity` it judged: the write lands in that directory, over that file (or none), or not at all.
    ``base``: the `Stamp` of the content the caller read; the file is replaced only if it is still
    that. ``exclusive``: the file must not exist; it is created without replacing one that appeared.
    """
    with view.resolve(path) as r:
        _refuse_changed(r, expect, path, expect_id)
        target = r.path
        if not view.writable(target):
            roots = ", ".join(view.writable_roots()) or "none"
            raise ConfinementError(
                errno.EACCES, f"{target} is outside the sandbox's writable places ({roots})"
            )
        _refuse_masked(view, target)
        if r.name is None and not r.missing:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", target)
        _refuse_write_denied(view, r, target)
        _refuse_unwritable(view, r, target)
        mount = view.mount_of(target)
        owner = mount.owner if mount is not None else None
        parent = os.dup(r.dir_fd)
        try:
            if r.missing:
                dirs, name = r.missing[:-1], r.missing[-1]
                if dirs and not make_parents:
                    missing_dir = posixpath.dirname(target)
                    raise FileNotFoundError(errno.ENOENT, "Directory does not exist", missing_dir)
                for d in dirs:
                    made = False
                    try:
                        os.mkdir(d, 0o777, dir_fd=parent)
                        made = True
                    except FileExistsError:
                        pass
                    try:
                        nfd = os.open(
                            d, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent
                        )
                    except OSError as exc:
                        raise ConfinementError(
                            errno.ELOOP,
                            f"{target}: a directory on the way changed while it was created ({exc.strerror}); try again",
                        ) from None
                    os.close(parent)
                    parent = nfd
                    if made and owner is not None:
                        _give_made_dir(parent, owner, target)
            else:
                assert r.name is not None
                name = r.name
            # Through an idmapped mount the sandbox's user replaces a file as the mount's owner;
            # keeping another owner (root's, a file a command renamed there) would give the
            # model's content an owner no command can give it (red team round 16).
            acts_as_owner = view.reader is not None and mount is not None and mount.idmapped
            return WriteOutcome(
                target,
                _replace_in(
                    parent,
                    name,
                    data,
                    target,
                    owner,
                    keep_owner=not acts_as_owner,
                    base=base,
                    exclusive=exclusive,
                ),
            )
        finally:
            os.close(parent)


def _give_made_dir(fd: int, owner: tuple[int, int], shown: str) -> None:
    """Give the directory just made (``fd``) to the mount's ``owner``, through the fd.

    By name, the chown could land on whatever a command renamed into that name between the
    ``mkdir`` and the chown -- another user's file or directory in the workspace, handed to the
    workspace's owner, which commands act as (red team, round 9). What is given must be ours
    (made by this process) and still empty."""
    rfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    try:
        st = os.fstat(rfd)
        if st.st_uid != os.geteuid() or os.listdir(rfd):
            raise ConfinementError(
                errno.EAGAIN, f"{shown}: a directory on the way changed while it was created; try again"
            )
        if (st.st_uid, st.st_gid) != owner:
            os.fchown(rfd, *owner)
    finally:
        os.close(rfd)


#: ``FS_IOC_GETFLAGS`` and its append-only / immutable bits (linux/fs.h).
_FS_IOC_GETFLAGS = 0x80086601
_FS_APPEND_FL = 0x20
_FS_IMMUTABLE_FL = 0x10


def _refuse_append_only(parent: int, shown: str) -> None:
    """Refuse a directory with the append-only or immutable attribute before a temp file is made:
    the rename over the target is refused there, and so is the temp file's removal, which stayed
    behind (red team round 14). A filesystem without attributes passes."""
    import array
    import fcntl

    try:
        dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return
    try:
        flags = array.array("l", [0])
        try:
            fcntl.ioctl(dfd, _FS_IOC_GETFLAGS, flags, True)
        except OSError:
            return
    finally:
        os.close(dfd)
    if flags[0] & (_FS_APPEND_FL | _FS_IMMUTABLE_FL):
        kind = "append-only" if flags[0] & _FS_APPEND_FL else "immutable"
        raise PermissionError(
            errno.EPERM,
            f"the directory of {shown} is {kind} (chattr): a file in it cannot be replaced; "
            "change the file in place with Bash (e.g. `cat >>`), or clear the attribute",
        )


def _inode(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _inode_at(parent: int, name: bytes) -> tuple[int, int] | None:
    """The (device, inode) of entry ``name`` of directory fd ``parent`` (not followed), or None."""
    try:
        return _inode(os.stat(name, dir_fd=parent, follow_symlinks=False))
    except OSError:
        return None


def _swapped(shown: str, *, landed: bool) -> ConfinementError:
    """The error of a write whose temporary file something else replaced while it was written."""
    if landed:
        state = f"{shown} now holds that file, not this write's content"
    else:
        state = f"{shown} was left as it was"
    return ConfinementError(
        errno.EAGAIN,
        f"{shown}: its temporary copy was replaced while it was written (a running command?); {state}. "
        "Stop what changes the directory, Read the file, and try again.",
    )


def _stale(shown: str) -> ConfinementError:
    """The error of a write whose file changed after its content was read."""
    return ConfinementError(
        errno.EAGAIN,
        f"{shown} changed after it was read (a running command?); it was left as it is now and this "
        "write was not made. Read it again, then make the change again.",
    )


def _refuse_stale(parent: int, name: bytes, base: Stamp | None, exclusive: bool, shown: str) -> None:
    """Refuse unless entry ``name`` is still what the caller read (``base``), or absent (``exclusive``)."""
    try:
        st: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if exclusive and st is not None:
        raise _stale(shown)
    if base is not None and (st is None or stamp(st) != base):
        raise _stale(shown)


def _land(
    parent: int,
    tmp: bytes,
    name: bytes,
    base: Stamp | None,
    exclusive: bool,
    shown: str,
    mine: tuple[int, int],
) -> None:
    """Put the temp file (inode ``mine``) at ``name``: a hard link for a new file (never replaces one that
    appeared since the check), else an exchange that is kept only if it displaced the file read
    (`_exchanged`), else (a filesystem without exchange) a rename right after checking the target."""
    if exclusive:
        try:
            os.link(tmp, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
        except FileExistsError:
            raise _stale(shown) from None
        except FileNotFoundError:
            # linkat refuses an inode that lost its last name: a command renamed its file over ours.
            raise _swapped(shown, landed=False) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
                raise
            # A filesystem without hard links: check, then rename (a window of microseconds).
        else:
            try:
                os.unlink(tmp, dir_fd=parent)
            except OSError:
                pass
            return
    pin = _pin_read(parent, name, base, shown) if base is not None else None
    try:
        _refuse_stale(parent, name, base, exclusive, shown)
        if base is not None and _exchanged(parent, tmp, name, base, shown, mine):
            return
        try:
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except PermissionError:
            _refuse_locked_file(parent, name, shown)
            raise
    finally:
        if pin is not None:
            os.close(pin)


def _pin_read(parent: int, name: bytes, base: Stamp, shown: str) -> int:
    """An ``O_PATH`` fd of entry ``name``, which must be the file read (``base``): held until the
    write has landed, so that no other file can take its inode number meanwhile.

    `_exchanged` knows the file it displaced by (device, inode): unheld, the file read could be
    unlinked by a command and freed, and the command's next file given its number (ext4 reuses one
    at once), its size and its modification time (``utime``); that file was then taken for the one
    read and removed, and the write reported made (red team round 51)."""
    try:
        pin = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except FileNotFoundError:
        raise _stale(shown) from None
    if stamp(os.fstat(pin)) != base:
        os.close(pin)
        raise _stale(shown)
    return pin


def _exchanged(parent: int, tmp: bytes, name: bytes, base: Stamp, shown: str, mine: tuple[int, int]) -> bool:
    """Exchange the temp file with ``name`` (``renameat2(RENAME_EXCHANGE)``) and keep it only if the
    file it displaced (now at ``tmp``) is the one read: its inode, size and modification time are
    ``base``'s (its change time moves with the exchange; `_refuse_stale` checked it just before).
    False where the filesystem cannot exchange (the caller checks, then renames).

    A command's rename over the file between the check and a plain rename was replaced unseen
    (round 26); now its file is displaced, seen, exchanged back and the write refused. Nothing a
    command put at either name is ever removed: only the file read is, once it is displaced."""
    try:
        _exchange(parent, tmp, name)
    except OSError as exc:
        if exc.errno in _NO_EXCHANGE:
            return False
        if exc.errno == errno.ENOENT:  # the file went away after the check, or our temp file did
            raise (
                _stale(shown) if _inode_at(parent, tmp) == mine else _swapped(shown, landed=False)
            ) from None
        raise
    try:
        st: os.stat_result | None = os.stat(tmp, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and (_inode(st), st.st_size, st.st_mtime_ns) == (base.inode, base.size, base.mtime_ns):
        try:
            os.unlink(tmp, dir_fd=parent)
        except OSError:
            pass
        return True
    # Exchange back: the command's file returns to its name, ours to the temp name (removed by the
    # caller, by inode). A command that renamed again in between left its files at both names.
    try:
        _exchange(parent, tmp, name)
    except OSError as exc:
        raise _changed_again(shown, tmp, exc.strerror) from None
    if _inode_at(parent, tmp) != mine:
        raise _changed_again(shown, tmp, None)
    raise _stale(shown)


def _changed_again(shown: str, tmp: bytes, why: str | None) -> ConfinementError:
    """The error of a write undone because a command replaced the file, which it replaced again meanwhile."""
    other = posixpath.join(posixpath.dirname(shown), os.fsdecode(tmp))
    undo = f"undoing it failed ({why})" if why else "it changed again while this write was undone"
    return ConfinementError(
        errno.EAGAIN,
        f"{shown} was replaced by a running command while this write was made, and {undo}: this write "
        f"was not made, and a file the command put there may be at {other}. Stop the command, Read both, "
        "keep the right one (remove the other), then make the change again.",
    )


def _refuse_locked_file(parent: int, name: bytes, shown: str) -> None:
    """Say why a rename over ``name`` was refused when the file itself is immutable or append-only
    (``chattr +i``/``+a``): a bare "Operation not permitted" named no way on (red team, round 20)."""
    import array
    import fcntl

    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            return  # never open what is not a regular file (a device acts when opened)
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return
    try:
        flags = array.array("l", [0])
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, flags, True)
    except OSError:
        return
    finally:
        os.close(fd)
    if flags[0] & _FS_APPEND_FL:
        how = "Append to it with Bash (e.g. `cat >>`), or clear the attribute (`chattr -a`, as root)."
    elif flags[0] & _FS_IMMUTABLE_FL:
        how = "Clear the attribute first (`chattr -i`, as root) if it should change."
    else:
        return
    kind = "append-only" if flags[0] & _FS_APPEND_FL else "immutable"
    raise PermissionError(
        errno.EPERM, f"{shown} is {kind} (chattr): it cannot be replaced and was left as it was. {how}"
    )


def _drop_inherited_acl(fd: int) -> None:
    """Remove the access ACL a temp file inherited from its directory's default ACL.

    The file it replaces has none (the tools refuse a file with one: round 14), so the new inode
    must not carry a named user's entry it never had (round 35: the next Edit refused the file)."""
    try:
        os.removexattr(fd, "system.posix_acl_access")
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise


def _owned_as_wanted(fd: int, owner: tuple[int, int] | None, mode: int) -> int:
    """Give the temp file ``fd`` the ``owner`` it should have; the mode to set then.

    Compared with the temp file's own ids, not the process's: a file created in a setgid directory
    has the directory's group, and root's ``0640 root:root`` file replaced there became readable by
    that group (round 35). Where the group cannot be given (not root, not a member), the group's
    bits go: the file is never more readable than the one it replaces."""
    if owner is None:
        return mode
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) != owner:
        try:
            os.fchown(fd, *owner)
        except PermissionError:
            pass  # not root: the file is the caller's, as any file it writes
        st = os.fstat(fd)
    return mode & ~0o070 if st.st_gid != owner[1] else mode


def _replace_in(
    parent: int,
    name: str,
    data: bytes,
    shown: str,
    owner: tuple[int, int] | None,
    *,
    keep_owner: bool = True,
    base: Stamp | None = None,
    exclusive: bool = False,
) -> bool:
    """Write ``data`` to a temp file in ``parent`` and rename it over ``name``; True when created.

    The file keeps the mode (without setuid/setgid) and owner of the file it replaces; a new one
    gets 0o666 minus the umask and the mount's owner. ``keep_owner=False``: the mount's owner
    always (an idmapped mount: what a command's replace would leave). ``base``/``exclusive``: as
    for `write_file`, checked first and again at the rename.
    """
    _refuse_stale(parent, os.fsencode(name), base, exclusive, shown)
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        created, mode = True, 0o666 & ~_umask()
    else:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", shown)
        created = False
        # New content is never privileged: setuid/setgid go, as the kernel drops them on a write
        # by anyone but root (the replace would otherwise hand the model's content those bits).
        kept = stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
        mode = kept if stat.S_ISREG(st.st_mode) else 0o666 & ~_umask()
        if keep_owner or owner is None:
            owner = (st.st_uid, st.st_gid)
    _refuse_append_only(parent, shown)
    # Bytes: a name's first 200 *characters* can be ~800 bytes of UTF-8, past NAME_MAX (255).
    tmp = b"." + os.fsencode(name)[:200] + f".{secrets.token_hex(6)}.tmp".encode()
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent
    )
    mine = _inode(os.fstat(fd))
    renamed = False
    # ``fd`` stays open until the last check: (device, inode) names our file only while the inode
    # lives. Closed before the checks, a temp file a command had already renamed over was freed
    # with the close, and the command's next file could get the same inode number (ext4 reuses a
    # freed one at once): both checks passed and its content was reported as this write (CI139).
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if not created:
                _drop_inherited_acl(fd)
            mode = _owned_as_wanted(fd, owner, mode)
            os.fchmod(fd, mode)
            os.fsync(fd)
            # The temp name sits in a directory commands may write: one renamed over it while the
            # data was written had its own file renamed over the target, reported as this write
            # (red team round 19). Checked before the rename (nothing lands) and after it (then it
            # is said).
            if _inode_at(parent, tmp) != mine:
                raise _swapped(shown, landed=False)
            _land(parent, tmp, os.fsencode(name), base, exclusive, shown, mine)
            renamed = True
        except BaseException:
            if not renamed and _inode_at(parent, tmp) == mine:  # never a file a command put there
                try:
                    os.unlink(tmp, dir_fd=parent)
                except OSError:
                    pass
            raise
        if _inode_at(parent, os.fsencode(name)) != mine:
            raise _swapped(shown, landed=True)
    finally:
        os.close(fd)
    try:
        dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return created
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
    return created
