"""Red team, round 38 (review): ``mincore`` still told which host file pages were cached.

Round 38 (novel) closed the page-cache probes it named: ``preadv2(RWF_NOWAIT)`` fails with
EOPNOTSUPP and ``cachestat`` with ENOSYS. ``mincore`` on a shared map of the same file answers the
same question page by page, under the very rule ``cachestat`` has (the kernel's
``can_do_mincore``: a file the caller owns or may write by its mode; a read-only mount does not
count): a 0666 host file for a root caller's leased uid, every file of a non-root caller's own.
Here two such host files, one read by the host and one evicted by it: the command mapped each
read-only and counted 2,048 resident pages in the first and 0 in the second, telling which the
host (or another session) had read. The filter now answers ``mincore`` with ENOSYS, as
``cachestat`` (a kernel without it; its callers, ``fincore``/``vmtouch``-like tools, report it).
Root and uid 65534, session and one bwrap per command.
"""

from __future__ import annotations

import os
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

#: Run in the sandbox with the two host files' paths: map each read-only, count its resident pages.
_PROBE = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
for label, path in (("CACHED", sys.argv[1]), ("EVICTED", sys.argv[2])):
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
    vec = (ctypes.c_ubyte * (size // 4096))()
    if libc.mincore(ctypes.c_void_p(addr), size, vec) == 0:
        print(label, sum(v & 1 for v in vec))
    else:
        print(label, errno.errorcode[ctypes.get_errno()])
"""


@contextmanager
def _host_files() -> Iterator[tuple[Path, Path]]:
    """Two host files the command may write by their mode (0666), outside its workspace and /tmp
    (read-only to it): the first cached, the second evicted by the host."""
    where = Path(tempfile.mkdtemp(prefix="r38-review-mincore-", dir="/var/tmp"))
    where.chmod(0o755)
    cached, evicted = where / "cached", where / "evicted"
    try:
        for path in (cached, evicted):
            path.write_bytes(os.urandom(_SIZE))
            path.chmod(0o666)
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        cached.read_bytes()
        yield cached, evicted
    finally:
        for path in (cached, evicted):
            path.unlink(missing_ok=True)
        where.rmdir()


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_mincore_does_not_tell_what_the_host_cached(tmp_path: Path, persistent: bool) -> None:
    """Failed before: ``CACHED 2048`` and ``EVICTED 0``; root 2 of 2, uid 65534 2 of 2."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    with _host_files() as (cached, evicted):
        probe = f"import sys; sys.argv[1:] = [{str(cached)!r}, {str(evicted)!r}]\n" + _PROBE
        said, out = probe_lines(ws, tmp_path / "s", probe, persistent=persistent)
    assert said.get("CACHED") == said.get("EVICTED") == "ENOSYS", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_mincore_does_not_tell_what_the_host_cached")


def test_the_filter_refuses_mincore_on_both_machines() -> None:
    """On the program: ``mincore`` ENOSYS on x86_64 (27) and aarch64 (232)."""
    from tests.test_bwrap_seccomp_program import AUDIT, run

    enosys = 0x00050000 | 38
    for machine, nr in (("x86_64", 27), ("aarch64", 232)):
        prog = _seccomp.filter_bytes(machine=machine, final=True)
        assert run(prog, nr, AUDIT[machine], (0, 4096, 0))[0] == enosys, machine
