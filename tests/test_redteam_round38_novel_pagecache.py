"""Red team, round 38 (novel): a command evicted and probed the host's page cache of host files.

The page cache is one per host: a file's cached pages serve every process that reads it, in every
namespace. A command that can merely *read* a host file (a shared library, the interpreter, a
world-readable file of the operator's, another session's input) could

* evict it: ``posix_fadvise(POSIX_FADV_DONTNEED)`` drops the file's clean pages for everyone (no
  permission beyond a read-only fd; the session's lock-view overlay passes it to the real file),
  and ``madvise(MADV_PAGEOUT)`` those of a file the command's uid owns (a non-root caller's);
* probe it without touching it: ``preadv2(RWF_NOWAIT)`` fails with EAGAIN unless the data is
  cached, and ``cachestat`` counts a file's cached pages (the kernel limits it, as ``mincore``, to
  files the caller owns or may write: a non-root caller's own).

Evict, wait, probe: which pages of which host file some other process (the operator, another
session, host root) read in between -- the page-cache side channel (Gruss et al., CCS 2019),
and a covert channel between sessions; evicting in a loop alone slows every host program that
reads those files from disk again. The filter now makes ``POSIX_FADV_DONTNEED`` and
``MADV_PAGEOUT`` no-ops (advice: answered 0), refuses ``RWF_NOWAIT`` on ``preadv2`` with
EOPNOTSUPP (a file without non-blocking reads: callers read blocking) and ``cachestat`` with
ENOSYS (a kernel before 6.5). Root and uid 65534, session and per command.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox import _seccomp
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_SIZE = 8 << 20
_CACHESTAT = 451
_libc = ctypes.CDLL(None, use_errno=True)

#: Run in the sandbox with the two host files' paths: evict the cached one, probe the evicted one.
_PROBE = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
cached, evicted = sys.argv[1], sys.argv[2]
fd = os.open(cached, os.O_RDONLY)
try:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    print("FADVISE ok")
except OSError as exc:
    print("FADVISE", errno.errorcode[exc.errno])
probe = os.open(evicted, os.O_RDONLY)
try:
    os.preadv(probe, [bytearray(4096)], 0, os.RWF_NOWAIT)
    print("NOWAIT cached")
except OSError as exc:
    print("NOWAIT", errno.errorcode[exc.errno])
stat = ctypes.create_string_buffer(40)
rng = (ctypes.c_uint64 * 2)(0, 0)
got = libc.syscall(451, probe, rng, stat, 0)
print("CACHESTAT", "ok" if got == 0 else errno.errorcode[ctypes.get_errno()])
"""


def _cached_pages(path: Path) -> int:
    """How many of ``path``'s pages the host's page cache holds (``cachestat``; the test's own file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        rng = (ctypes.c_uint64 * 2)(0, 0)
        out = ctypes.create_string_buffer(40)
        assert _libc.syscall(_CACHESTAT, fd, rng, out, 0) == 0, os.strerror(ctypes.get_errno())
        return int(struct.unpack("5Q", out.raw)[0])
    finally:
        os.close(fd)


@contextmanager
def _host_files() -> Iterator[tuple[Path, Path]]:
    """Two world-readable host files outside the workspace and the sandbox's /tmp: the first read
    (cached), the second evicted (the host's own DONTNEED)."""
    where = Path(tempfile.mkdtemp(prefix="r38-pagecache-", dir="/var/tmp"))
    where.chmod(0o755)
    cached, evicted = where / "cached", where / "evicted"
    try:
        for path in (cached, evicted):
            path.write_bytes(os.urandom(_SIZE))
            path.chmod(0o644)
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)  # clean pages: DONTNEED drops only those
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        cached.read_bytes()
        yield cached, evicted
    finally:
        for path in (cached, evicted):
            path.unlink(missing_ok=True)
        where.rmdir()


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_neither_evicts_nor_probes_the_hosts_page_cache(tmp_path: Path, persistent: bool) -> None:
    """Failed before: the host's 2,048 cached pages of a file the command could only read fell to
    0 (``FADVISE ok``), and per command ``RWF_NOWAIT`` told an evicted file (EAGAIN) from a cached
    one (the session's overlay already said ENOTSUP); root 2 of 2, uid 65534 2 of 2 (there
    ``CACHESTAT ok`` too: its own file)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    with _host_files() as (cached, evicted):
        before = _cached_pages(cached)
        assert before >= _SIZE // 4096 * 9 // 10, before
        probe = f"import sys; sys.argv[1:] = [{str(cached)!r}, {str(evicted)!r}]\n" + _PROBE
        said, out = probe_lines(ws, tmp_path / "s", probe, persistent=persistent)
        after = _cached_pages(cached)
    assert after >= before * 9 // 10, (
        f"the command evicted the host's cache: {before} -> {after} pages\n{out}"
    )
    assert said.get("FADVISE") == "ok", out  # advice: a no-op that succeeds, callers carry on
    assert said.get("NOWAIT") == errno.errorcode[errno.EOPNOTSUPP], out  # "ENOTSUP": the same number
    assert said.get("CACHESTAT") == "ENOSYS", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_command_neither_evicts_nor_probes_the_hosts_page_cache")


def test_the_filter_answers_the_advice_as_a_no_op() -> None:
    """On the program, both machines: DONTNEED and PAGEOUT answered 0 without the kernel, other
    advice let through; ``preadv2`` with RWF_NOWAIT (among other flags) EOPNOTSUPP."""
    from tests.test_bwrap_seccomp_program import ALLOW, AUDIT, run

    noop = 0x00050000  # SECCOMP_RET_ERRNO with errno 0: the call returns 0
    eopnotsupp = 0x00050000 | 95
    for machine, index in (("x86_64", 0), ("aarch64", 1)):
        prog = _seccomp.filter_bytes(machine=machine, final=True)
        arch = AUDIT[machine]
        fadvise, madvise, preadv2 = ((221, 223), (28, 233), (327, 286))
        assert run(prog, fadvise[index], arch, (3, 0, 0, 4))[0] == noop
        assert run(prog, fadvise[index], arch, (3, 0, 0, 3))[0] == ALLOW  # WILLNEED
        assert run(prog, madvise[index], arch, (0, 4096, 21))[0] == noop
        assert run(prog, madvise[index], arch, (0, 4096, 4))[0] == ALLOW  # MADV_DONTNEED: its own memory
        assert run(prog, preadv2[index], arch, (3, 0, 1, 0, 0, 0x8 | 0x2))[0] == eopnotsupp
        assert run(prog, preadv2[index], arch, (3, 0, 1, 0, 0, 0x2))[0] == ALLOW  # RWF_HIPRI alone
