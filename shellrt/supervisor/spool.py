"""Spooling a stream to disk as it arrives, keeping only a head and a tail in memory.

The file is the truth: byte-identical to what the command wrote, up to the
output quota (`OutputQuota`: 1 GiB per command by default). Memory stays
bounded by ``head_bytes + tail_bytes`` per stream, which is what the preview
shown to a model is built from.

Nothing is lost silently: when the quota is reached or the disk refuses a
write (full, quota, I/O error), the spool stops writing, keeps counting what
the command printed (and its head and tail), and `lost` says what is missing
from the file and why. Nor does a spool take a disk's last bytes: it stops short of a
reserve (`OutputQuota.disk_reserve_bytes`) that other sessions and the host keep. The command is not disturbed: its output keeps being
drained, so it never blocks on a full pipe.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from shellrt.supervisor._output_account import SLICE as _ACCOUNT_SLICE
from shellrt.supervisor._output_account import OutputAccount
from shellrt.supervisor.text import safe_decode, trim_partial_utf8

if TYPE_CHECKING:
    import concurrent.futures
    import hashlib

__all__ = [
    "DEFAULT_COMMAND_LIMIT",
    "DEFAULT_SESSION_LIMIT",
    "OutputQuota",
    "OutputSpool",
    "SpoolFiles",
    "parse_size",
]

#: Bytes of one command's output saved to disk unless configured otherwise (1 GiB).
DEFAULT_COMMAND_LIMIT = 1 << 30
#: Bytes of output one session saves to disk in total unless configured otherwise (8 GiB).
DEFAULT_SESSION_LIMIT = 8 << 30
#: Environment variables that configure `OutputQuota.from_env` (sizes like ``500M``, ``2G``; ``0`` = no limit).
COMMAND_LIMIT_ENV = "SHELLRT_OUTPUT_LIMIT"
SESSION_LIMIT_ENV = "SHELLRT_SESSION_OUTPUT_LIMIT"
#: Bytes a spool leaves free on its file system (``0``: none); unset, `default_reserve` of the disk.
RESERVE_ENV = "SHELLRT_OUTPUT_RESERVE"
#: The default reserve: this share of the file system, at most `RESERVE_CAP` (round 16: the fixed
#: quotas let one session's output take a disk smaller than 8 GiB to its last byte).
RESERVE_SHARE, RESERVE_CAP = 0.05, 1 << 30
#: Largest number of bytes a spool writes between two looks at its disk's free space (each look is
#: one ``fstatvfs``); near the reserve it looks more often (`OutputSpool._room_left`).
_RESERVE_STEP = 16 << 20
#: Bytes of each spool written without a look at the reserve (what the preview holds anyway).
_UNCHECKED_BYTES = 64 << 10
#: Bytes of a spool hashed as one block (`_BlockSums`): a read by name checks the blocks it spans.
_SUM_BLOCK = 64 << 10
#: Bytes of each block's digest kept (SHA-256, cut: ~1.4 GB/s here with SHA-NI, BLAKE2b ~0.6).
_SUM_BYTES = 16



class _Allowances:
    """What spools were allowed to write past their last look at a file system's free space, and
    have not written yet, per file system (``st_dev``). A look subtracts the other spools' part:
    with allowances alone (an eighth of the room each) four spools that looked while the disk was
    emptier took a tmpfs of 8 MiB to its last 12 KiB together (round 16 follow-up)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, int] = {}

    def renew(self, dev: int, held: int, seen: int) -> tuple[int, int]:
        """``(room left for this spool, its new allowance)``: ``seen`` is the free space above the
        reserve, ``held`` what this spool still had of its last allowance."""
        with self._lock:
            others = max(0, self._open.get(dev, 0) - held)
            room = seen - others
            allowance = max(0, min(_RESERVE_STEP, room // 8))
            self._open[dev] = others + allowance
        return room, allowance

    def spend(self, dev: int, n: int) -> None:
        with self._lock:
            left = self._open.get(dev, 0) - n
            if left > 0:
                self._open[dev] = left
            else:
                self._open.pop(dev, None)


_ALLOWANCES = _Allowances()

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"500M"`` -> bytes (K, M, G, T are powers of 1024); raises ValueError naming the format."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size; use bytes or a number with K, M, G or T (e.g. 2G)")
    return int(match.group(1)) * int(1024 ** " kmgt".index(match.group(2).lower() or " "))


class OutputQuota:
    """How many output bytes a session may save: per command, and in total over the session.

    ``None`` means no limit. The session total counts bytes written to spool
    files (not what a command printed beyond its own limit).
    """

    def __init__(
        self,
        command_bytes: int | None = DEFAULT_COMMAND_LIMIT,
        session_bytes: int | None = DEFAULT_SESSION_LIMIT,
        disk_reserve_bytes: int | None = None,
    ) -> None:
        self.command_bytes = command_bytes
        self.session_bytes = session_bytes
        #: Bytes every spool leaves free on its file system: None is `default_reserve`, 0 none.
        self.disk_reserve_bytes = disk_reserve_bytes
        self.session_used = 0
        self._lock = threading.Lock()
        #: The session's total on disk (`attach`), and what this process took of it and has not used.
        self._account: OutputAccount | None = None
        self._held = 0

    @staticmethod
    def check_env(environ: Mapping[str, str] | None = None) -> None:
        """Raise ValueError naming the first output variable whose value is not a size: a CLI
        checks them before anything starts (a bad one was a traceback mid-run)."""
        _env_sizes(os.environ if environ is None else environ)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OutputQuota:
        """Limits from ``SHELLRT_OUTPUT_LIMIT`` / ``SHELLRT_SESSION_OUTPUT_LIMIT`` (defaults: 1 GiB, 8 GiB)
        and the disk reserve from ``SHELLRT_OUTPUT_RESERVE`` (default: `default_reserve`); a bad
        value raises `check_env`'s ValueError."""
        command, session, reserve = _env_sizes(os.environ if environ is None else environ)
        command_bytes = DEFAULT_COMMAND_LIMIT if command is None else command or None
        session_bytes = DEFAULT_SESSION_LIMIT if session is None else session or None
        return cls(command_bytes, session_bytes, reserve)

    def disk_room(self, fd: int) -> tuple[int, int]:
        """``(bytes a spool may still write to fd's file system, the reserve kept)``; raises OSError."""
        st = os.fstatvfs(fd)
        reserve = self.disk_reserve_bytes
        if reserve is None:
            reserve = default_reserve(st.f_blocks * st.f_frsize)
        return st.f_bavail * st.f_frsize - reserve, reserve

    def grant(self, already: int, want: int) -> tuple[int, str | None]:
        """Bytes of ``want`` a command that saved ``already`` may save now, and why not all."""
        allowed, why = want, None
        if self.command_bytes is not None and already + want > self.command_bytes:
            allowed = max(0, self.command_bytes - already)
            why = (
                f"the per-command output limit of {self.command_bytes:,} bytes was reached "
                f"(set {COMMAND_LIMIT_ENV} to change it)"
            )
        if self.session_bytes is not None:
            with self._lock:
                left = max(0, self.session_bytes - self.session_used)
                if self._account is not None:  # the session's total on disk (every process, reopens)
                    if allowed > self._held:
                        self._held += self._account.take(
                            self.session_bytes, max(_ACCOUNT_SLICE, allowed - self._held)
                        )
                    left = min(left, self._held)
                if allowed > left:
                    allowed = left
                    why = (
                        f"the session output limit of {self.session_bytes:,} bytes was reached "
                        f"(set {SESSION_LIMIT_ENV} to change it)"
                    )
                self.session_used += allowed
                if self._account is not None:
                    self._held -= allowed
        return allowed, why

    def attach_session(self, session_dir: Path) -> OutputAccount | None:
        """Attach the account of ``session_dir`` (None: no session limit, or one attached already);
        raises `OutputAccountError` when it cannot be opened."""
        if self.session_bytes is None or self._account is not None:
            return None
        account = OutputAccount(session_dir)
        self.attach(account)
        return account

    def attach(self, account: OutputAccount) -> None:
        """Count the session total in ``account`` (on disk) from now on: it holds across reopen."""
        with self._lock:
            self._account, self._held = account, 0

    def detach(self) -> None:
        """Give back the unused part of the slice taken (at close)."""
        with self._lock:
            account, held = self._account, self._held
            self._account, self._held = None, 0
        if account is not None:
            with contextlib.suppress(OSError):
                account.give_back(held)


def _env_sizes(env: Mapping[str, str]) -> tuple[int | None, int | None, int | None]:
    """The per-command limit, session limit and reserve set in ``env`` (None: unset or empty), parsed
    once for `OutputQuota.check_env` and `OutputQuota.from_env`; raises ValueError naming the first
    variable whose value is not a size."""
    sizes: list[int | None] = []
    for name in (COMMAND_LIMIT_ENV, SESSION_LIMIT_ENV, RESERVE_ENV):
        raw = env.get(name)
        try:
            sizes.append(parse_size(raw) if raw else None)
        except ValueError as exc:
            raise ValueError(f"{name}={raw!r}: {exc} (0: no limit)") from None
    return sizes[0], sizes[1], sizes[2]


def default_reserve(disk_bytes: int) -> int:
    """What a spool leaves free on a file system of ``disk_bytes`` unless configured: 5 %, at most 1 GiB."""
    return min(RESERVE_CAP, int(disk_bytes * RESERVE_SHARE))


def room_above_reserve(fd: int, environ: dict[str, str] | None = None) -> int:
    """Bytes the host may still write to ``fd``'s file system before its reserve (``RESERVE_ENV``,
    else `default_reserve`; a bad setting is the default); for writers without an `OutputQuota`
    (the quarantine's copies). Raises OSError."""
    env = os.environ if environ is None else environ
    st = os.fstatvfs(fd)
    try:
        reserve = parse_size(env.get(RESERVE_ENV, "")) if env.get(RESERVE_ENV) else None
    except ValueError:
        reserve = None
    if reserve is None:
        reserve = default_reserve(st.f_blocks * st.f_frsize)
    return st.f_bavail * st.f_frsize - reserve


#: Never through a symlink: a session directory a command could reach must not make the host write elsewhere.
#: Never over a name that exists: a session directory outlives its Supervisor, and an earlier
#: command's spool of the same name was truncated (its result then showed another's output: round 42).
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
#: Opening a spool that exists by its name: never through a link, never waiting at a FIFO (round 48).
_BY_NAME = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def file_identity(fd: int) -> tuple[int, int]:
    """``(st_dev, st_ino)`` of an open file: what a spool's name must still lead to."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def open_own(path: Path, flags: int, identity: tuple[int, int] | None) -> int:
    """``path`` opened with ``flags`` when it is still a spool's own file: a regular file, reached
    without a link, and (``identity`` given) the very inode the spool made. Else `OSError`
    (``ESTALE``: something else is there now).

    The host re-opens a spool by its name, and on the local backend a command can put anything
    there: a FIFO blocked the open for ever (TaskOutput's thread; the pump's open, on the event
    loop), a link or a file renamed over it was read as the command's output (red team round 48).
    """
    fd = os.open(path, flags | _BY_NAME)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (identity is not None and (st.st_dev, st.st_ino) != identity):
            raise OSError(errno.ESTALE, f"{path} is no longer the file shellrt wrote (it was replaced)")
    except BaseException:
        os.close(fd)
        raise
    return fd


class SpoolFiles:
    """Spool files of one directory, without allocating an inode on a command's hot path.

    Creating a file costs 0.6 ms of CPU on the ext4 here (renaming or linking one:
    ~10 µs) — a third of a whole ``bash -c true``. So:

    - a command's spool is created lazily, at its first byte, by renaming a
      *spare* into place: empty files made ahead by a worker thread, which makes
      another for each one taken (off the event loop);
    - a command that wrote nothing gets a hard link to one shared empty file, at
      no allocation. Where a command reaches the directory
      (local: ``check_empty``) the file is checked before each link -- still the
      inode made, still empty -- and made again when not: a command wrote into it
      and the next empty results showed its bytes (red team round 49). A spare of
      each empty result's own cost ~0.8 ms of CPU (an inode) a command; local is
      no boundary (a command of the same uid may write a linked file later).

    `close` removes the spares and the shared name (existing links stay valid).
    """

    def __init__(
        self, directory: Path, stem: str, *, spares: int = 4, check_empty: bool = False
    ) -> None:
        self.directory = directory
        self._stem = stem
        self._want = spares
        self._n = 0
        self._spares: list[Path] = []
        #: Each spare's inode, as made: the name it is linked to must lead to it (`open_fresh`).
        self._spare_ids: dict[Path, tuple[int, int]] = {}
        self._spare_n = 0  # names of spares ever made (the worker's counter)
        self._ordered = 0  # spares asked of the worker and not made yet
        self._lock = threading.Lock()
        #: The one empty file linked at every empty result's name.
        self._empty = directory / f".{stem}-empty"
        #: The shared empty file's inode as made (`_make`), when each link must find it so.
        self._check_empty = check_empty
        self._empty_id: tuple[int, int] | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False
        # A session dropped without `close` left its spares and shared name behind (round 42).
        self._sweeper = weakref.finalize(self, _unlink_all, self._spares, self._empty)

    def take(self) -> str:
        """The next command's name (``<stem>-NNNN``); no file is made for it yet."""
        self._n += 1
        self._top_up()
        return f"{self._stem}-{self._n:04d}"

    def open_fresh(self, path: Path) -> int:
        """A new, empty file at ``path``, opened for writing (a spare moved into place if one is ready).

        A spare linked in is opened by its new name only as the spare's own inode (`open_own`): a
        FIFO put there between the link and the open blocked the open, on the event loop, for ever
        (red team round 48); anything else there is a name taken (``EEXIST``). It is emptied once
        open: a command may have written into the spare before it was taken (round 49).
        """
        fd = self._take_spare(path)
        return os.open(path, _NEW_FILE, 0o600) if fd is None else fd

    def place_empty(self, path: Path) -> None:
        """An empty file at ``path``: a link to the shared empty file while it is intact
        (`_shared_intact`), else one of its own (a spare moved into place if one is ready).
        ``FileExistsError``: an earlier command's spool of that name, kept (round 42).
        """
        if self._shared_intact():
            try:
                os.link(self._empty, path)
                return
            except FileExistsError:
                raise
            except OSError:  # no shared file yet, too many links, another fs
                pass
        fd = self._take_spare(path, keep_open=False)
        if fd is None:
            os.close(os.open(path, _NEW_FILE, 0o600))

    def _shared_intact(self) -> bool:
        """Whether the shared empty file may be linked: always where no command reaches it; else
        only while it is the inode `_make` made, regular and empty. One written into or replaced is
        unlinked (the worker makes a new one at its next top-up) and this result takes a spare."""
        if not self._check_empty:
            return True
        try:
            st = os.lstat(self._empty)
        except OSError:
            return False
        if stat.S_ISREG(st.st_mode) and st.st_size == 0 and (st.st_dev, st.st_ino) == self._empty_id:
            return True
        with contextlib.suppress(OSError):
            os.unlink(self._empty)
        return False

    def _take_spare(self, path: Path, *, keep_open: bool = True) -> int | None:
        """A ready spare linked at ``path``, empty there, opened for writing (``keep_open``; else
        -1 once linked and found empty); None: no spare ready, or it could not be linked (the
        caller creates the file)."""
        with self._lock:
            spare = self._spares.pop() if self._spares else None
            identity = self._spare_ids.pop(spare, None) if spare is not None else None
        if spare is None:
            return None
        self._top_up()
        try:
            os.link(spare, path)  # a rename replaced an earlier file of that name (round 42)
        except FileExistsError:
            raise
        except OSError:
            return None
        with contextlib.suppress(OSError):
            os.unlink(spare)
        if not keep_open:  # an empty result: one lstat says it is the spare, still empty
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == identity and st.st_size == 0:
                    return -1
        try:
            fd = open_own(path, os.O_WRONLY, identity)
        except OSError as exc:
            if exc.errno in (errno.ESTALE, errno.ELOOP):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from exc
            raise
        try:
            if os.fstat(fd).st_size:  # what a command wrote into the spare is not this output
                os.ftruncate(fd, 0)  # (only then: a truncate to 0 costs ext4 ~0.1 ms even so)
        except BaseException:
            os.close(fd)
            raise
        if not keep_open:
            os.close(fd)
            return -1
        return fd

    def _top_up(self) -> None:
        if self._closed:
            return
        with self._lock:
            missing = self._want - len(self._spares) - self._ordered
            if missing <= 0:
                return
            self._ordered += missing
        if self._executor is None:
            import concurrent.futures  # only sessions keep spares: off `shellrt run`'s import path

            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="shellrt-spool"
            )
        self._executor.submit(self._make, missing)

    def _make(self, count: int) -> None:
        """Worker thread: allocate ``count`` spares (and the shared empty file, once)."""
        if not self._empty.exists():
            with contextlib.suppress(OSError):
                fd = os.open(self._empty, _NEW_FILE, 0o400)
                try:
                    self._empty_id = file_identity(fd)
                finally:
                    os.close(fd)
        for _ in range(count):
            self._spare_n += 1
            spare = self.directory / f".{self._stem}-spare-{self._spare_n}"
            try:
                fd = os.open(spare, _NEW_FILE, 0o600)
                try:
                    identity: tuple[int, int] | None = file_identity(fd)
                finally:
                    os.close(fd)
            except OSError:  # the directory is gone: commands will create their files themselves
                identity = None
            with self._lock:
                self._ordered -= 1
                if identity is not None:
                    self._spares.append(spare)
                    self._spare_ids[spare] = identity

    def close(self) -> None:
        """Stop making spares; remove the unused ones and the shared name (blocking)."""
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        with self._lock:
            self._sweeper()  # the spares made so far and the shared name (once)


def _unlink_all(spares: list[Path], empty: Path) -> None:
    """Remove the unused spares and the shared empty name (at close, or when collected unclosed)."""
    for path in (*spares, empty):
        with contextlib.suppress(OSError):
            path.unlink()
    spares.clear()


class _BlockSums:
    """A digest of each `_SUM_BLOCK` bytes the host wrote to a spool, taken as it writes them.

    On the local backend a command of the same uid writes through a spool's own inode while its
    task runs (``dd conv=notrunc``); the seal taken at the end took that in, and TaskOutput read it
    as the task's output (red team round 50). Every byte a read by name returns is now checked
    against what the host wrote: 16 bytes of memory per 64 KiB (256 KiB for the 1 GiB a command
    may save). Writes come from the event loop, reads from a worker thread: a lock keeps each
    read's view whole.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = bytearray()  # the digests of the complete blocks, one after the other
        self._part: hashlib._Hash | None = None  # the last, partial block's hash so far
        self._part_len = 0

    def add(self, data: memoryview) -> None:
        """Account ``data``, just written at the end of the file."""
        with self._lock:
            while data:
                if self._part is None:
                    import hashlib  # not at import: `shellrt run`'s module budget

                    self._part = hashlib.sha256()
                take = _SUM_BLOCK - self._part_len
                self._part.update(data[:take])
                self._part_len += min(take, len(data))
                data = data[take:]
                if self._part_len == _SUM_BLOCK:
                    self._done += self._part.digest()[:_SUM_BYTES]
                    self._part, self._part_len = None, 0

    def checked(self, fd: int, start: int, size: int) -> bytes:
        """``size`` bytes at ``start`` of ``fd`` (less at the end of what was written), read whole
        blocks at a time, each found as written; else `OSError` (``ESTALE``)."""
        import hashlib

        with self._lock:
            done = bytes(self._done)
            part = self._part.copy() if self._part is not None else None
            part_len = self._part_len
        blocks = len(done) // _SUM_BYTES
        written = blocks * _SUM_BLOCK + part_len
        end = min(start + size, written)
        if start >= end:
            return b""
        first = start // _SUM_BLOCK
        span = min(-(-end // _SUM_BLOCK) * _SUM_BLOCK, written) - first * _SUM_BLOCK
        data = os.pread(fd, span, first * _SUM_BLOCK)
        for i in range(0, span, _SUM_BLOCK):
            block, index = data[i : i + _SUM_BLOCK], first + i // _SUM_BLOCK
            if index < blocks:
                want = done[index * _SUM_BYTES : (index + 1) * _SUM_BYTES]
            else:
                assert part is not None  # the range ends within what was written
                want = part.digest()[:_SUM_BYTES]
            if len(block) != min(_SUM_BLOCK, written - index * _SUM_BLOCK) or (
                hashlib.sha256(block).digest()[:_SUM_BYTES] != want
            ):
                raise OSError(errno.ESTALE, "the spool file was rewritten since shellrt wrote it")
        offset = start - first * _SUM_BLOCK
        return data[offset : offset + end - start]


class OutputSpool:
    """One output file plus the head/tail kept for previews and progress."""

    def __init__(
        self,
        path: Path,
        *,
        head_bytes: int = 16_384,
        tail_bytes: int = 16_384,
        on_chunk: Callable[[bytes], None] | None = None,
        files: SpoolFiles | None = None,
        quota: OutputQuota | None = None,
        checked: bool = False,
    ) -> None:
        self.path = path
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.total_bytes = 0
        #: Bytes actually in the file (equal to ``total_bytes`` unless output was lost).
        self.saved_bytes = 0
        #: Why the file stops short of ``total_bytes`` (None: nothing lost).
        self.lost: str | None = None
        self._quota = quota
        self._head = bytearray()
        self._tail = bytearray()
        self._on_chunk = on_chunk
        #: With ``files``, the file is made at the first byte (or linked empty at close).
        self._files = files
        self._closed = False
        #: Head and tail let go (`release_memory`): read back from the file when asked.
        self._released = False
        self._fd: int | None = None
        #: The file's ``(st_dev, st_ino)`` once made: a read by its name must reach this very file.
        self._identity: tuple[int, int] | None = None
        #: ``(st_size, st_mtime_ns, st_ctime_ns)`` as the spool closed it: a read after finds the same,
        #: or the file was written through since (`open_own`; red team round 49).
        self._seal: tuple[int, int, int] | None = None
        #: The head and tail let go (`release_memory`), hashed: what is read back must match them.
        self._digest: bytes | None = None
        #: What the host wrote, block by block: a read by name returns only bytes found so (round 50).
        #: None (``checked=False``: a foreground command's, `shellrt run`'s): never read by name, its
        #: result's preview comes from memory; `read_at` refuses it (EPERM) rather than read unchecked.
        self._sums = _BlockSums() if checked else None
        if files is None:
            try:
                self._fd = os.open(path, _NEW_FILE, 0o600)
                self._identity = file_identity(self._fd)
            except OSError as exc:
                # A full disk (bytes or inodes: a command can fill the one the session lives on)
                # loses the output as a failed write does; the start does not fail (round 27).
                # Anything else is refused as before: a name taken (a planted link, round 5).
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                self.lost = _write_failure(exc, path)
        #: ``saved_bytes`` up to which the disk was seen to have room (past it: look again). A small
        #: output is written as before: a nearly full disk does not fail every ``echo``.
        self._room_until = _UNCHECKED_BYTES
        #: The file system's ``st_dev`` and what is left of this spool's allowance (`_Allowances`).
        self._dev: int | None = None
        self._allowance = 0

    def write(self, chunk: bytes) -> None:
        """Append ``chunk`` to the file and update head/tail (synchronous: page-cache writes are fast)."""
        if not chunk:
            return
        if self.lost is None:
            self._save(chunk)
        self.total_bytes += len(chunk)
        if len(self._head) < self.head_bytes:
            self._head += chunk[: self.head_bytes - len(self._head)]
        if len(chunk) >= self.tail_bytes:
            self._tail = bytearray(chunk[-self.tail_bytes :])
        else:
            self._tail += chunk
            excess = len(self._tail) - self.tail_bytes
            if excess > 0:
                del self._tail[:excess]
        if self._on_chunk is not None:
            self._on_chunk(chunk)

    def _save(self, chunk: bytes) -> None:
        """Write ``chunk`` (or the part the quota allows) to the file; never raises for a refused write."""
        allowed, why = len(chunk), None
        try:
            if self._quota is not None:  # the session's account on disk may refuse (full: round 28)
                allowed, why = self._quota.grant(self.saved_bytes, len(chunk))
            view = memoryview(chunk)[:allowed]
            fd = self._fd
            if fd is None and not self._closed and self._files is not None and view:
                fd = self._fd = self._files.open_fresh(self.path)
                self._identity = file_identity(fd)
            if fd is not None and self._quota is not None and self.saved_bytes + len(view) > self._room_until:
                room, why_room = self._room_left(fd, self._quota)
                if room < len(view):
                    view, why = view[: max(0, room)], why_room
            if fd is not None:
                while view:
                    written = os.write(fd, view)
                    if self._sums is not None:
                        self._sums.add(view[:written])
                    self.saved_bytes += written
                    view = view[written:]
                    if self._allowance:
                        spent = min(written, self._allowance)
                        self._allowance -= spent
                        if self._dev is not None:
                            _ALLOWANCES.spend(self._dev, spent)
        except OSError as exc:
            self.lost = _write_failure(exc, self.path)
            return
        if why is not None:
            self.lost = why

    def _room_left(self, fd: int, quota: OutputQuota) -> tuple[int, str]:
        """Bytes this spool may write before its disk's reserve, and the reason it stops there.

        Looked up again after a share of what was left (at most `_RESERVE_STEP`): spools
        writing side by side overshoot the reserve by a fraction of it, never to the last byte.
        """
        if quota.disk_reserve_bytes == 0:
            self._room_until = 1 << 62
            return 1 << 62, ""
        seen, reserve = quota.disk_room(fd)
        if self._dev is None:
            self._dev = os.fstat(fd).st_dev
        room, self._allowance = _ALLOWANCES.renew(self._dev, self._allowance, seen)
        self._room_until = self.saved_bytes + self._allowance
        why = (
            f"the disk holding {self.path.parent} is down to its last {reserve:,} free bytes, which shellrt "
            f"leaves to the host and other sessions ({RESERVE_ENV}; free space, or set TMPDIR elsewhere)"
        )
        return room, why

    def materialize(self) -> None:
        """Make sure the file exists as its own (writable) file now, e.g. before others read it live."""
        if self._fd is None and not self._closed and self._files is not None:
            try:
                self._fd = self._files.open_fresh(self.path)
                self._identity = file_identity(self._fd)
            except OSError as exc:
                self.lost = self.lost or _write_failure(exc, self.path)

    def close(self) -> None:
        """Close the file (idempotent); head/tail stay readable. The file exists afterwards (disk permitting)."""
        if self._allowance and self._dev is not None:
            _ALLOWANCES.spend(self._dev, self._allowance)  # what it will not write: others' again
        self._allowance = 0
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                self._seal = _seal_of(os.fstat(fd))
            except OSError:
                self._seal = None
            finally:
                os.close(fd)
        elif not self._closed and self._files is not None:
            try:
                self._files.place_empty(self.path)
            except FileExistsError as exc:  # the name holds another command's output, not this one's
                self.lost = self.lost or _write_failure(exc, self.path)
            except OSError:
                pass
        self._closed = True

    def loss_report(self, label: str) -> str | None:
        """One sentence on what of this stream is missing from its file and why (None: nothing)."""
        if self.lost is None:
            return None
        return (
            f"{label}: the command printed {self.total_bytes:,} bytes; {self.saved_bytes:,} bytes are saved in "
            f"{self.path}; the rest was not saved because {self.lost}."
        )

    def release_memory(self) -> None:
        """Let the head and tail go once the file holds every byte (closed, nothing lost): an ended
        background task kept up to 32 KiB for the session's life, 40 MB over 1,000 tasks (red team
        round 42). Whoever asks for them later gets them read back from the file."""
        if self._closed and self.lost is None and self.saved_bytes == self.total_bytes and self._head:
            self._digest = _digest(self._head, self._tail)
            self._head, self._tail, self._released = bytearray(), bytearray(), True

    def _held(self) -> tuple[bytes | bytearray, bytes | bytearray]:
        """The head and tail: in memory, or read back from the file after `release_memory` (what
        cannot be read is empty). Read back each time, never kept: keeping them brought round 42's
        memory back for a caller that looks at every ended task (red team round 45)."""
        if not self._released:
            return self._head, self._tail
        head_size = min(self.head_bytes, self.total_bytes)
        tail_size = min(self.tail_bytes, self.total_bytes)
        try:
            fd = self.open_own()
        except OSError:
            return b"", b""  # replaced or removed: `preview` says so
        try:
            head, tail = os.pread(fd, head_size, 0), os.pread(fd, tail_size, self.total_bytes - tail_size)
        except OSError:
            return b"", b""
        finally:
            os.close(fd)
        if _digest(head, tail) != self._digest:
            return b"", b""  # written through in place since (same inode): not this output (round 49)
        return head, tail

    def open_own(self) -> int:
        """The spool's file opened for reading by its name, only while the name still leads to the file
        this spool wrote (`open_own`) and, once closed, as it was closed: the same size, modification
        and change times (a command on local wrote through the inode: ``>>``, ``dd conv=notrunc``,
        ``truncate``; red team round 49). Else `OSError` (``ESTALE``)."""
        if self._identity is None:
            raise OSError(errno.ENOENT, f"{self.path} holds none of this command's bytes")
        fd = open_own(self.path, os.O_RDONLY, self._identity)
        seal = self._seal
        if seal is not None:
            try:
                now = _seal_of(os.fstat(fd))
            except BaseException:
                os.close(fd)
                raise
            if now != seal:
                os.close(fd)
                raise OSError(errno.ESTALE, f"{self.path} was rewritten since shellrt wrote it")
        return fd

    def read_at(self, start: int, size: int) -> bytes:
        """Up to ``size`` bytes of the file at ``start`` (blocking: call it off the event loop);
        `OSError` when its name leads elsewhere now (`open_own`) or a block they lie in is not as
        the host wrote it, the task still running or not (``ESTALE``; `_BlockSums`)."""
        if self._sums is None:
            raise OSError(errno.EPERM, f"{self.path} was not hashed as written: shellrt does not read it back")
        fd = self.open_own()
        try:
            return self._sums.checked(fd, start, size)
        finally:
            os.close(fd)

    def held_from(self, start: int, size: int) -> tuple[int, bytes]:
        """Up to ``size`` bytes of the stream at ``start`` or later that memory still holds, and the
        position they begin at (past ``start`` when the bytes there were in neither the head nor the
        tail): what a reader gets of output the file misses (`lost`; red team round 28)."""
        held_head, held_tail = self._held()
        head_end = len(held_head)
        tail_start = self.total_bytes - len(held_tail)
        if start < head_end:
            data = bytes(held_head[start : start + size])
            if tail_start <= head_end and len(data) < size:  # the tail goes on where the head ends
                data += bytes(held_tail[head_end - tail_start :][: size - len(data)])
            return start, data
        begin = max(start, tail_start)
        return begin, bytes(held_tail[begin - tail_start :][:size])

    def head(self, size: int) -> bytes:
        """The first ``size`` bytes written (at most what the head keeps)."""
        return bytes(self._held()[0][:size])

    @property
    def complete_in_memory(self) -> bool:
        """True when head and tail together hold every byte written. After `release_memory` the file
        holds every byte and the sizes are the limits': nothing is read back to count them."""
        if self._released:
            return self.total_bytes <= self.head_bytes + self.tail_bytes
        return self.total_bytes <= len(self._head) + len(self._tail)

    def full_bytes(self) -> bytes | None:
        """Every byte written, when it is all in memory (else None)."""
        return self._full(*self._held())

    def _full(self, held_head: bytes | bytearray, held_tail: bytes | bytearray) -> bytes | None:
        if self.total_bytes <= len(held_head):
            return bytes(held_head)
        if self.total_bytes <= len(held_head) + len(held_tail):
            return bytes(held_head) + bytes(held_tail[len(held_tail) - (self.total_bytes - len(held_head)) :])
        return None

    def preview(self) -> tuple[str, bool]:
        """``(text, truncated)``: the whole output, or head + an omission marker + tail."""
        held_head, held_tail = self._held()
        if self._released and not held_head:
            # Let go to the file (which held every byte) and unreadable there now: a command
            # replaced or removed it (local); what is there now is not this output (round 48).
            from shellrt.protocol.notes import note

            return note(
                f"the {self.total_bytes:,} bytes of this output were saved in {self.path}, which was "
                "replaced, rewritten or removed since; shellrt does not show what is there now"
            ), True
        full = self._full(held_head, held_tail)
        if full is not None:
            return safe_decode(full), False
        # Imported here: only a cut output needs the notes (the lean `shellrt run` never cuts).
        from shellrt.protocol.notes import OUTPUT_MARK, neutralize_output, note
        from shellrt.supervisor._escape_cut import open_sequence_start

        head_bytes = trim_partial_utf8(bytes(held_head), at_start=False)
        # Nor may a sequence the command left open across the cut take the note in (round 26).
        head_bytes = head_bytes[: open_sequence_start(head_bytes)]
        omitted = self.total_bytes - len(head_bytes) - len(held_tail)
        # The cut is said by a note of ours, which output may not forge: head and tail are
        # marked here (the tail's first line is a partial one), their count said in the note.
        head, forged_head = neutralize_output(safe_decode(head_bytes))
        tail, forged_tail = neutralize_output(safe_decode(trim_partial_utf8(bytes(held_tail), at_start=True)))
        if self.lost is None:
            where = f"full output in {self.path}"
        else:
            where = f"only the first {self.saved_bytes} bytes are saved in {self.path}"
        forged = forged_head + forged_tail
        marked = (
            f"; {forged} line{'s' if forged != 1 else ''} of output around this cut began like a shellrt "
            f"note and {'are' if forged != 1 else 'is'} shown prefixed with {OUTPUT_MARK.strip()!r}"
            if forged
            else ""
        )
        marker = "\n\n" + note(f"... {omitted} bytes omitted; {where}{marked} ...") + "\n\n"
        return head + marker + tail, True

    def last_lines(self, n: int = 5) -> tuple[str, ...]:
        """The last ``n`` lines seen (decoded safely), for progress events."""
        held_head, held_tail = self._held()
        tail = bytes(held_tail if self.total_bytes > len(held_head) else held_head)
        lines = tail.rstrip(b"\n").split(b"\n")[-n:]
        return tuple(safe_decode(trim_partial_utf8(line, at_start=True)) for line in lines if line)


def _seal_of(st: os.stat_result) -> tuple[int, int, int]:
    """What a closed spool's file must still show: any write since changes its size or its times
    (the change time cannot be set back by a process)."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _digest(head: bytes | bytearray, tail: bytes | bytearray) -> bytes:
    """A hash of a released spool's head and tail, to check them when read back."""
    import hashlib  # only a released spool's read-back needs it

    return hashlib.blake2b(bytes(head) + b"\0" + bytes(tail), digest_size=16).digest()


def _write_failure(exc: OSError, path: Path) -> str:
    """Why writing the spool failed, in words that say what to do."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk holding {path.parent} is full ({os.strerror(exc.errno)}); free space or set TMPDIR elsewhere"
    if exc.errno == errno.EEXIST:
        return (
            f"{path} already holds another command's output (an earlier session in this directory), "
            "which shellrt does not overwrite; use a fresh session directory"
        )
    if exc.errno == errno.EFBIG:
        return f"the spool file {path} reached the largest size this file system allows"
    return f"writing {path} failed ({exc.strerror or exc})"
