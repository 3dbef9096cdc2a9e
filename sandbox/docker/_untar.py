"""Extract a tar archive a container produced into a host directory, anchored below it.

Why not ``tarfile.extractall(filter="data")``: the filter judges a member by
``os.path.realpath`` of its path and the extraction then creates it *by path*.
A chain of symlinks whose resolution passes ``PATH_MAX`` is left unresolved by
``realpath`` before Python 3.11.13 (CVE-2025-4517 and siblings), and docker's
walk of a running container can be raced (a symlink ``d``, then members below
``d``): either wrote outside the destination. Here every member is created
relative to a directory fd reached from the destination one component at a time
with ``O_NOFOLLOW`` (`sandbox.confine.open_dir_beneath`): a symlink is created as
a link and never followed, whatever the archive does later. Only directories,
regular files and symlinks staying inside come out; a hard link to a file this
archive created comes out as a copy of it (never as a second name of one inode
on the host: ``ln .git/config notes`` would let a later write to ``notes`` change
``.git/config``; red team round 13), its bytes counted against the archive's bound (one
budget for both since round 19);
no device or FIFO, no set-id, sticky or group/other write bit, no owner (the caller
owns what it extracts); total size and entry count bounded; runs of zeros are left
as holes (a sparse file stays sparse). A member the caller holds back (``held``: a
read- or write-denied path of the host, a protected name) is not written; one whose
content equals what the host already has there is skipped silently, any other is
refused. A member that replaces what the host has (a file or link over a directory, which goes
whole; a directory over a file or link) is refused when ``held`` names anything it would remove
(round 54). A link the archive made is judged under every name it gives the archive's entries
(`sandbox.docker._linkcheck`; red team round 26) and removed when one is held.
Members that are refused are skipped, the rest is extracted, and
`WorkspaceExportError` names them at the end: a stable tree never produces one.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import secrets
import stat
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, cast

from sandbox._scratch import remove_tree
from sandbox.confine import open_beneath, open_dir_beneath
from sandbox.docker._linkcheck import aliased_links, disk_lister, remove_link
from sandbox.docker._shown import shown
from sandbox.errors import SandboxError

__all__ = [
    "MAX_EXPORT_BYTES",
    "MAX_EXPORT_ENTRIES",
    "MAX_EXPORT_NAME_BYTES",
    "MAX_EXPORT_STEPS",
    "MAX_REPLACED_CHECKS",
    "ChunkReader",
    "Held",
    "WorkspaceExportError",
    "extract",
]

#: Bounds of one export: the archive's bytes (headers included) and its members.
MAX_EXPORT_BYTES = 16 << 30
MAX_EXPORT_ENTRIES = 1_000_000
#: Path components over all members: each member's directory is reached by one ``openat`` per
#: component, so 1,000,000 entries 2,000 deep were 2e9 system calls on the host (round 19).
#: A million entries 16 deep on average.
MAX_EXPORT_STEPS = 16_000_000
#: Bytes of member names over all members: the extraction keeps every name (for hard links,
#: directory modes, refusals), so names alone could hold gigabytes of the host's memory.
MAX_EXPORT_NAME_BYTES = 256 << 20
#: A pax or GNU long-name header is read into memory whole.
_MAX_META_BYTES = 1 << 20
_META_TYPES = frozenset(
    (
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
    )
)
_SHOWN_REFUSALS = 10
#: Host entries judged (``held``) in the directories an export would replace, over the whole export
#: (a member that is no directory where the host has one removes it whole: round 54). Past it such
#: a replacement is refused: the caller's `protected_reason` takes ~0.1 ms a name, ~20 s at most.
MAX_REPLACED_CHECKS = 200_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Marks an entry that was left out in `_Extraction.left_out` (no component is empty).
_LEFT = ""
_Tree = dict[str, "_Tree"]
#: Members are written in chunks of this size; a chunk of zeros becomes a hole: ``truncate -s
#: 10G`` costs a command nothing, and the host no more (red team round 9).
_CHUNK = 1 << 20
_ZEROS = bytes(_CHUNK)
#: A member's modification time ``utime`` takes (the kernel clamps to its file system's range):
#: finite and within +/- 2**62 s. A PAX ``mtime`` of ``1e300`` or ``nan`` raised OverflowError or
#: ValueError out of the extraction (round 50, docker10).
_MAX_TIME = float(1 << 62)


class WorkspaceExportError(SandboxError):
    """Raised when the container's workspace archive could not be exported whole.

    ``refused``: ``(member, why)`` of each member left out (the others were extracted).
    """

    def __init__(self, message: str, refused: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.refused = refused


class _Refused(Exception):
    """One member is left out; the reason is its message."""


class _OverBudget(Exception):
    """The copies of hard links took more than the archive's bound."""


class ChunkReader:
    """A binary file over an iterator of chunks (docker's archive stream), at most ``limit`` bytes."""

    def __init__(self, chunks: Iterator[bytes], limit: int) -> None:
        self._chunks, self._limit, self._seen = chunks, limit, 0
        self._buf, self._pos = b"", 0  # the current chunk and how much of it was read

    @property
    def remaining(self) -> int:
        """Bytes the bound still allows: the archive read so far and the copies charged share it."""
        return self._limit - self._seen

    def charge(self, n: int) -> None:
        """Count ``n`` bytes written on the host that the archive did not carry (a hard link's copy)."""
        self._seen += n

    def read(self, size: int = -1) -> bytes:
        out: list[bytes] = []
        want = size
        while want != 0:
            if self._pos >= len(self._buf):
                chunk = next(self._chunks, None)
                if chunk is None:
                    break
                self._seen += len(chunk)
                if self._seen > self._limit:
                    raise WorkspaceExportError(
                        f"the container's workspace archive (with the copies of its hard links) is larger "
                        f"than {self._limit} bytes; remove "
                        "what need not come out (build outputs, caches) or export a subdirectory"
                    )
                self._buf, self._pos = chunk, 0
            end = len(self._buf) if want < 0 else min(len(self._buf), self._pos + want)
            out.append(self._buf[self._pos : end])
            if want > 0:
                want -= end - self._pos
            self._pos = end
        return b"".join(out)


class _BoundedInfo(tarfile.TarInfo):
    """Refuses a pax or long-name header larger than `_MAX_META_BYTES` before it is read into memory."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _META_TYPES and self.size > _MAX_META_BYTES:
            raise tarfile.HeaderError(f"an extended header of {self.size} bytes (at most {_MAX_META_BYTES})")
        proc = cast(Callable[[tarfile.TarFile], tarfile.TarInfo], getattr(super(), "_proc_member"))  # noqa: B009 (private in typeshed)
        return proc(tarfile_)


def _parts(name: str) -> list[str]:
    if name.startswith("/") or "\0" in name:
        raise _Refused("an absolute name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _Refused("a name with ..")
    if not parts:
        raise _Refused("an empty name")
    return parts


def _link_stays_inside(parts: list[str], target: str) -> bool:
    """Whether a symlink at ``parts`` pointing to ``target`` resolves inside the destination, lexically
    and whatever other links do: ``..`` only leading, no more of them than the link is deep (a
    ``..`` after a name could climb out of a directory that is itself a link)."""
    if not target or target.startswith("/") or "\0" in target:
        return False
    steps = [p for p in target.split("/") if p not in ("", ".")]
    ups = 0
    while ups < len(steps) and steps[ups] == "..":
        ups += 1
    return ".." not in steps[ups:] and ups <= len(parts) - 1


def _file_mode(mode: int) -> int:
    mode &= 0o755
    if not mode & 0o100:
        mode &= ~0o111
    return mode | 0o600


def _no_wider(mode: int, parent: int, name: str) -> int:
    """``mode`` for a file replacing the host's regular file ``name`` in ``parent``: the owner's bits
    as the member says, the group's and others' no wider than the host's file had them. Its bytes
    came from the host (the copy-in): a command's ``chmod 644`` of the operator's 0600 file made the
    export show them to every local user (round 54). A new name takes ``mode`` as it is."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return mode
    if not stat.S_ISREG(st.st_mode):
        return mode
    return (mode & 0o700) | (mode & stat.S_IMODE(st.st_mode) & 0o077)


#: Why a member (its parts below the destination; whether it is a directory) must not be
#: written on the host, or None.
Held = Callable[[list[str], bool], "str | None"]


def _same_file(fd: int, source: IO[bytes], size: int) -> bool:
    """Whether the open host file ``fd`` holds exactly ``size`` bytes equal to ``source``'s."""
    if os.fstat(fd).st_size != size:
        return False
    while chunk := source.read(_CHUNK):
        if os.read(fd, len(chunk)) != chunk:
            return False
    return os.read(fd, 1) == b""


def _copy_data(src: int, dst: int, budget: int) -> int:
    """Copy ``src``'s data extents into the empty file ``dst`` (holes stay holes); bytes copied.
    Raises `_OverBudget` past ``budget`` bytes."""
    size = os.fstat(src).st_size
    copied = pos = 0
    while pos < size:
        try:
            pos = os.lseek(src, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                break
            raise
        end = os.lseek(src, pos, os.SEEK_HOLE)
        while pos < end:
            chunk = os.pread(src, min(_CHUNK, end - pos), pos)
            if not chunk:
                break
            if chunk != _ZEROS[: len(chunk)]:
                view = memoryview(chunk)
                at = pos
                while view:
                    n = os.pwrite(dst, view, at)
                    view, at = view[n:], at + n
                copied += len(chunk)
                if copied > budget:
                    raise _OverBudget
            pos += len(chunk)
    os.ftruncate(dst, size)
    return copied


@dataclass
class _Extraction:
    root: int
    #: What must not be written on the host (None: nothing is held back).
    held: Held | None = None
    #: Bytes the copies of hard links may still take (they carry no data in the archive).
    copy_budget: int = 0
    #: The archive, whose bound the copies share (round 19: a separate budget of the same size
    #: let one export write twice its bound on the host).
    archive: ChunkReader | None = None
    #: Regular files this archive created: name -> (st_dev, st_ino), for its hard links.
    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Directories: name -> (mode, mtime, the host's mode when it had the directory already),
    #: applied once everything below them is written.
    dirs: dict[str, tuple[int, float, int | None]] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)
    #: Entries left out, as a tree of components (``_LEFT`` marks one): a member below one is
    #: refused, found in one step per component (a set of joined prefixes took O(depth²) per
    #: member: 36 ms for each member 2,000 deep, hours for an archive of them; round 19).
    left_out: _Tree = field(default_factory=dict)
    #: Symbolic links this archive created: name -> target (judged at the end: `_linkcheck`).
    links: dict[str, str] = field(default_factory=dict)
    #: Host entries the replaced directories may still have judged (`MAX_REPLACED_CHECKS`).
    replace_checks: int = MAX_REPLACED_CHECKS

    def member(self, tar: tarfile.TarFile, info: tarfile.TarInfo, name: str) -> None:
        parts = _parts(name)
        if not (isinstance(info.mtime, (int, float)) and math.isfinite(info.mtime) and abs(info.mtime) < _MAX_TIME):
            raise _Refused(f"a modification time the host cannot set ({str(info.mtime)[:40]})")
        key = "/".join(parts)
        if self.below_left_out(parts):
            raise _Refused("below an entry that was left out")
        why = self.held(parts, info.isdir()) if self.held is not None else None
        if why is not None:
            if not self._unchanged(tar, info, parts):
                raise _Refused(why)
            return
        if info.isdir():
            parent = self._parent(parts)
            try:
                had = self._make_dir(parent, parts)
            finally:
                os.close(parent)
            self.dirs[key] = (info.mode, info.mtime, had)
        elif info.isreg():
            self._regular(tar, info, parts, key)
        elif info.issym():
            if not _link_stays_inside(parts, info.linkname):
                raise _Refused(f"a symbolic link to {info.linkname!r}, outside the workspace")
            self._place(parts, lambda parent, tmp: os.symlink(info.linkname, tmp, dir_fd=parent))
            self.files.pop(key, None)
            self.links[key] = info.linkname
        elif info.islnk():
            self._hard_link(info, parts, key)
        else:
            kinds = {tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device"}
            raise _Refused(f"a {kinds.get(info.type, 'fifo' if info.isfifo() else 'special file')}")
        if not info.issym():
            self.links.pop(key, None)  # a link made earlier under this name was replaced

    def below_left_out(self, parts: list[str]) -> bool:
        """Whether a directory above ``parts`` was left out (one dict step per component)."""
        node: _Tree | None = self.left_out
        for part in parts[:-1]:
            node = node.get(part) if node is not None else None
            if node is None:
                return False
            if _LEFT in node:
                return True
        return False

    def leave_out(self, parts: list[str]) -> None:
        """Mark ``parts`` left out: one node per directory the archive named (docker's archive of a
        real tree lists every directory), nothing below an entry already left out."""
        node = self.left_out
        for part in parts:
            if _LEFT in node:
                return
            node = node.setdefault(part, {})
        node[_LEFT] = {}

    def _unchanged(self, tar: tarfile.TarFile, info: tarfile.TarInfo, parts: list[str]) -> bool:
        """Whether the host already has this member as it is: a directory as a directory, a file
        with the same bytes (a write-denied file the command could only read comes out as is)."""
        try:
            if info.isdir():
                parent = open_dir_beneath(self.root, parts[:-1])
                try:
                    return stat.S_ISDIR(os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode)
                finally:
                    os.close(parent)
            if not info.isreg():
                return False
            source = tar.extractfile(info)
            if source is None:
                return False
            fd = open_beneath(self.root, "/".join(parts))
        except OSError:
            return False
        try:
            return _same_file(fd, source, info.size)
        finally:
            os.close(fd)

    def _parent(self, parts: list[str]) -> int:
        try:
            return open_dir_beneath(self.root, parts[:-1], create=0o700)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _Refused("below a symbolic link or a file") from None
            raise _Refused(f"its directory cannot be made ({exc.strerror})") from None

    def _make_dir(self, parent: int, parts: list[str]) -> int | None:
        """Make the directory ``parts`` (its parent open as ``parent``); the host's mode when it had
        one there already (its mode is never widened: `finish_directories`), else None."""
        name = parts[-1]
        try:
            os.mkdir(name, 0o700, dir_fd=parent)
            return None
        except FileExistsError:
            pass
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            return stat.S_IMODE(st.st_mode)
        # A file or a symlink where the archive has a directory: the host's, judged as the file it
        # is (a directory member is judged by nothing but the denied paths: round 54, a ``.git``
        # file, which names the repository git obeys, was removed by a ``.git/`` directory).
        why = self.held(parts, False) if self.held is not None else None
        if why is not None:
            raise _Refused(f"it would replace the host's {'/'.join(parts)}: {why}")
        os.unlink(name, dir_fd=parent)
        os.mkdir(name, 0o700, dir_fd=parent)
        return None

    def _check_replaced(self, parent: int, parts: list[str]) -> None:
        """Before the host's directory at ``parts`` is removed (a member that is no directory takes
        its place): refused when ``held`` names anything in it, at any depth, never through a link.
        The denied paths were judged so since round 13; a protected name was not: ``rm -rf .claude
        && echo x > .claude`` in the container removed the operator's ``.claude/settings.json`` (its
        deny rules and hooks) on the host (round 54)."""
        if self.held is None:
            return
        stack = [(os.open(parts[-1], _DIR_FLAGS, dir_fd=parent), parts)]
        try:
            while stack:
                fd, where = stack.pop()
                try:
                    with os.scandir(fd) as listing:
                        for entry in listing:
                            self.replace_checks -= 1
                            if self.replace_checks < 0:
                                raise _Refused(
                                    f"it would replace a host directory; more than {MAX_REPLACED_CHECKS} "
                                    "host entries in the replaced directories are too many to judge"
                                )
                            path = [*where, entry.name]
                            is_dir = entry.is_dir(follow_symlinks=False)
                            why = self.held(path, is_dir)
                            if why is not None:
                                raise _Refused(f"it would replace a directory holding {'/'.join(path)}: {why}")
                            if is_dir:
                                stack.append((os.open(entry.name, _DIR_FLAGS, dir_fd=fd), path))
                finally:
                    os.close(fd)
        finally:
            for fd, _ in stack:
                os.close(fd)

    def _place(self, parts: list[str], make: Callable[[int, str], None]) -> os.stat_result:
        """Create an entry under a temporary name in the anchored parent (``make``), then rename
        it over ``parts[-1]`` (a directory there is removed first). Returns the new entry's lstat."""
        parent = self._parent(parts)
        # Unguessable: the archive's own names share the directory. A predictable one (pid and a
        # counter) let a member named like a later temp name abort the whole export with a bare
        # FileExistsError, and one named like its own temp name be unlinked after its rename
        # (red team round 19).
        tmp = f".shellrt-export-{secrets.token_hex(12)}"
        try:
            try:
                make(parent, tmp)
            except BaseException:  # e.g. a hard link's copy over the bound: no partial file left
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=parent)
                raise
            try:
                name = parts[-1]
                try:
                    if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                        self._check_replaced(parent, parts)
                        remove_tree(name, dir_fd=parent)  # however deep (round 11)
                except FileNotFoundError:
                    pass
                os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
                return os.stat(name, dir_fd=parent, follow_symlinks=False)
            finally:
                try:  # left over when ``name`` already was a hard link of the same file
                    os.unlink(tmp, dir_fd=parent)
                except FileNotFoundError:
                    pass
        finally:
            os.close(parent)

    def _regular(self, tar: tarfile.TarFile, info: tarfile.TarInfo, parts: list[str], key: str) -> None:
        source = tar.extractfile(info)
        if source is None:
            raise _Refused("a file without data")

        def write(parent: int, tmp: str) -> None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(tmp, flags, 0o600, dir_fd=parent)
            try:
                while chunk := source.read(_CHUNK):
                    if chunk == _ZEROS[: len(chunk)]:
                        os.lseek(fd, len(chunk), os.SEEK_CUR)  # a hole, as in the command's own file
                        continue
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                os.ftruncate(fd, os.lseek(fd, 0, os.SEEK_CUR))  # a hole at the end, too
                os.fchmod(fd, _no_wider(_file_mode(info.mode), parent, parts[-1]))
                os.utime(fd, (info.mtime, info.mtime))
            finally:
                os.close(fd)

        st = self._place(parts, write)
        self.files[key] = (st.st_dev, st.st_ino)

    def _hard_link(self, info: tarfile.TarInfo, parts: list[str], key: str) -> None:
        """A copy of the file this archive created under ``info.linkname`` (never a second name of
        its inode on the host; its data bytes count against ``copy_budget``)."""
        try:
            source = "/".join(_parts(info.linkname))
        except _Refused:
            source = ""
        if source not in self.files:
            raise _Refused(f"a hard link to {info.linkname!r}, which is no file this archive created")
        try:
            fd = open_beneath(self.root, source)
        except OSError:
            raise _Refused(f"a hard link to {info.linkname!r}, which changed meanwhile") from None
        try:
            seen = os.fstat(fd)
            if (seen.st_dev, seen.st_ino) != self.files[source]:
                raise _Refused(f"a hard link to {info.linkname!r}, which changed meanwhile")

            def copy(parent: int, tmp: str) -> None:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                out = os.open(tmp, flags, 0o600, dir_fd=parent)
                try:
                    budget = self.copy_budget
                    if self.archive is not None:
                        budget = min(budget, self.archive.remaining)
                    copied = _copy_data(fd, out, budget)
                    self.copy_budget -= copied
                    if self.archive is not None:
                        self.archive.charge(copied)
                    os.fchmod(out, _no_wider(stat.S_IMODE(seen.st_mode), parent, parts[-1]))
                    os.utime(out, (info.mtime, info.mtime))
                finally:
                    os.close(out)

            st = self._place(parts, copy)
        finally:
            os.close(fd)
        self.files[key] = (st.st_dev, st.st_ino)

    def finish_directories(self) -> None:
        """Apply directory modes (owner rwx kept, no set-id/sticky/group-other write) and times,
        deepest first, through the same anchored walk; one replaced meanwhile is skipped. A
        directory the host had keeps its own bits but those the member clears: the container's
        ``chmod 755 .git`` opened the operator's 0700 ``.git`` to every local user (round 54)."""
        for key in sorted(self.dirs, key=lambda k: k.count("/"), reverse=True):
            mode, mtime, had = self.dirs[key]
            mode = (mode & 0o755) | 0o700
            if had is not None:
                mode = (had & 0o7000) | (had & 0o777 & mode)
            parts = key.split("/")
            try:
                parent = open_dir_beneath(self.root, parts[:-1])
            except OSError:
                continue
            try:
                fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
            except OSError:
                continue
            finally:
                os.close(parent)
            try:
                os.fchmod(fd, mode)
                os.utime(fd, (mtime, mtime))
            finally:
                os.close(fd)


def extract(
    archive: ChunkReader,
    dest_fd: int,
    rename: Callable[[str], str | None],
    *,
    max_entries: int = MAX_EXPORT_ENTRIES,
    held: Held | None = None,
    max_copy_bytes: int = MAX_EXPORT_BYTES,
    max_steps: int | None = None,
    max_name_bytes: int | None = None,
) -> None:
    """Extract the tar stream ``archive`` below the directory ``dest_fd``.

    ``rename`` maps a member's name to its place below the destination (None: skip it); ``held``
    says why a member must not be written there (see the module). The copies of hard links take
    at most ``max_copy_bytes`` of data, and with the archive's bytes no more than ``archive``'s
    bound. Raises
    `WorkspaceExportError` naming refused members after extracting the others, or at once when
    the archive is unreadable or over a bound.
    """
    job = _Extraction(dest_fd, held, max_copy_bytes, archive)
    count = steps = name_bytes = 0
    max_steps = MAX_EXPORT_STEPS if max_steps is None else max_steps
    max_name_bytes = MAX_EXPORT_NAME_BYTES if max_name_bytes is None else max_name_bytes
    try:
        with tarfile.open(fileobj=cast(IO[bytes], archive), mode="r|", tarinfo=_BoundedInfo) as tar:
            for info in tar:
                count += 1
                if count > max_entries:
                    raise WorkspaceExportError(
                        f"the container's workspace archive has more than {max_entries} entries; remove "
                        "what need not come out (build outputs, caches) or export a subdirectory"
                    )
                if info.size > archive.remaining:
                    # Its data must stream through (even to skip it): a 100 GB sparse file took
                    # minutes of zeros to reach the bound (red team round 25). Known now, from its header.
                    raise WorkspaceExportError(
                        f"the container's workspace archive would be larger than its bound: {shown(info.name)} "
                        f"alone is {info.size} bytes, more than the {archive.remaining} bytes left; remove it "
                        "(a sparse file comes out as all its bytes) or export a subdirectory"
                    )
                name = rename(info.name)
                if name is None:
                    continue
                steps += name.count("/") + 1
                name_bytes += len(name) + len(info.linkname)
                if steps > max_steps or name_bytes > max_name_bytes:
                    raise WorkspaceExportError(
                        "the container's workspace archive names its entries too deep or too long in all "
                        f"(more than {max_steps} path components or {max_name_bytes} bytes of names); remove "
                        "what need not come out (deep build trees, caches) or export a subdirectory"
                    )
                if info.islnk():
                    linked = rename(info.linkname)
                    info.linkname = linked if linked is not None else "/"
                try:
                    if info.sparse is not None:
                        # Round 50 (docker10): its holes are bytes the stream never carries (a map of
                        # "0,0" and a size of 15 GiB: 10 KB of archive had the host make 6 GiB of zeros
                        # in 29 s, a file of that apparent size each). docker's archives have none.
                        raise _Refused("a sparse member (docker's archives have none)")
                    job.member(tar, info, name)
                except _Refused as why:
                    job.refused.append((name, str(why)))
                    job.leave_out([p for p in name.split("/") if p not in ("", ".")])
                except (OSError, ValueError, OverflowError) as exc:
                    # Round 50: one member the host cannot make (a name past NAME_MAX, a host
                    # directory the caller may not write, an immutable file, a header value no call
                    # takes) is refused like any other, its name shown escaped; a bare exception
                    # ended the export there, with the command's name raw in its message.
                    cause = exc.strerror or exc.errno if isinstance(exc, OSError) else type(exc).__name__
                    job.refused.append((name, f"the host could not write it ({cause})"))
                    job.leave_out([p for p in name.split("/") if p not in ("", ".")])
    except tarfile.TarError as exc:
        raise WorkspaceExportError(f"the container's workspace archive could not be read: {exc}") from None
    except _OverBudget:
        raise WorkspaceExportError(
            f"the copies of the workspace's hard links take more than {max_copy_bytes} bytes, or with the "
            "archive more than its bound (a hard link comes out as a copy); remove the extra names (`find -links +1`) or export a subdirectory"
        ) from None
    finally:
        # Every link goes, or is judged under each name it gives the archive's entries (also when
        # the extraction stopped early: nothing it made through a link is left unjudged).
        if held is not None and job.links:
            for link, reason in aliased_links(job.links, disk_lister(dest_fd), held):
                remove_link(dest_fd, link, job.links[link])
                job.refused.append((link, reason))
        job.finish_directories()
    if job.refused:
        # The names are the command's: never raw to a terminal (`_shown`).
        listed = "; ".join(shown(f"{name}: {why}") for name, why in job.refused[:_SHOWN_REFUSALS])
        more = len(job.refused) - _SHOWN_REFUSALS
        raise WorkspaceExportError(
            f"{len(job.refused)} entries of the container's workspace were not exported ({listed}"
            + (f"; and {more} more" if more > 0 else "")
            + "); everything else was. A symbolic link may only point inside the workspace; special "
            "files never come out; entries below a symlink mean the workspace changed while it was "
            "archived: export again once nothing runs",
            tuple(job.refused),
        )
