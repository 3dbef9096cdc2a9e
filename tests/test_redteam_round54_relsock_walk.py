"""Red team round 54 (relsock): a socket bound by a relative name made the next check read every
descriptor of every process on the host.

A pathname socket listed by a name relative to its binder's cwd (``bind("x.sock")``) is found
through the processes that show it (`sandbox._hostsockets.relative_socket_paths`, round 14 and 38).
It was found by ``readlink`` of every ``/proc/*/fd/*`` on the host, once for each batch of new names:
a session command holding 18,000 descriptors and binding one new relative name every 50 ms made every
later command of every session walk them (0.25-0.37 s a command; red team round 53, supdock, Left).
Now the kernel says which file each such socket is bound to (``unix_diag``'s ``UDIAG_SHOW_VFS``, asked
in the socket's own network namespace), and that file is looked for in each process's cwd: one
``stat`` a process and one a (distinct cwd, name), whatever the descriptors held. What is asserted is
the count of ``readlink`` calls (not time): it failed before (18,000+ a new name).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox import _hostsockets, _relnames
from sandbox._netns_sockets import other_namespace_lines
from tests.conftest import require

#: Serial: its sockets, bound where every session's watch looks, would retire other tests' sandboxes.
pytestmark = [pytest.mark.serial]

#: Descriptors the binder holds (as a sandboxed command may: under the sandbox's 20,000).
_FDS = 18_000

#: Holds _FDS descriptors and binds relative names on request ("bind" on stdin), in a network
#: namespace of its own ("ns") or the host's ("host"); "away" binds and then changes directory.
_BINDER = r"""
import ctypes, os, resource, socket, sys
if sys.argv[2] == "ns":
    assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000) == 0  # NEWUSER | NEWNET
os.chdir(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, int(sys.argv[3]) + 256), hard))
held = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(sys.argv[3]))]
socks = []
for line in sys.stdin:
    verb, name = line.split()
    s = socket.socket(socket.AF_UNIX)
    s.bind(name)
    socks.append(s)
    if verb == "away":
        os.chdir("/")
    print("bound", flush=True)
"""


class _Binder:
    def __init__(self, proc: subprocess.Popen[str], where: Path) -> None:
        self.proc = proc
        self.where = where

    def bind(self, name: str, verb: str = "bind") -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{verb} {name}\n")
        self.proc.stdin.flush()
        if "bound" not in self.proc.stdout.readline():
            pytest.fail(f"the binder could not bind {name}")


@contextmanager
def _binder(how: str, fds: int = _FDS) -> Iterator[_Binder]:
    require(os.geteuid() == 0, "needs root: to enter another network namespace (setns)")
    where = Path(tempfile.mkdtemp(prefix="shellrt-r54-relsock-", dir="/var/tmp"))
    proc = subprocess.Popen(
        [sys.executable, "-c", _BINDER, str(where), how, str(fds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield _Binder(proc, where)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(where, ignore_errors=True)


@contextmanager
def _counted_readlinks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    calls: list[str] = []
    real = os.readlink

    def counting(path: str, *args: object, **kwargs: object) -> str:
        calls.append(str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "readlink", counting)
    yield calls
    monkeypatch.setattr(os, "readlink", real)


def _lines_of(lines: bytes, where: Path) -> list[bytes]:
    """The lines of sockets the binder working in ``where`` bound (named after it: tests run in parallel)."""
    return [line for line in lines.splitlines() if f"r54rel-{where.name}-".encode() in line]


def test_a_new_relative_name_in_another_namespace_costs_no_descriptor_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Failed before: each new name cost 18,000+ readlinks (one walk of every descriptor); now one a
    located name, and each is still found where its binder is (kept outside the sandbox's paths)."""
    with _binder("ns") as binder:
        took = []
        for i in range(3):
            binder.bind(f"r54rel-{binder.where.name}-{i}.sock")
            # only this binder's lines: another test's sockets (a parallel run) are no part of the count
            lines = b"".join(line + b"\n" for line in _lines_of(other_namespace_lines(), binder.where))
            assert len(_lines_of(lines, binder.where)) == i + 1
            with _counted_readlinks(monkeypatch) as calls:
                start = time.perf_counter()
                kept = _hostsockets._foreign_lines(lines, ["/nonexistent-own-root"])
                took.append(time.perf_counter() - start)
            assert len(_lines_of(kept, binder.where)) == i + 1, "a relative name was not located"
            assert len(calls) < 1_000, f"{len(calls)} readlinks for one new relative name ({took[-1]:.3f} s)"
            # under the sandbox's own paths: left out, as before
            assert not _lines_of(
                _hostsockets._foreign_lines(lines, [str(binder.where.resolve())]), binder.where
            )
        print(
            f"a check with a new relative name beside {_FDS} descriptors: {[round(t * 1000, 1) for t in took]} ms"
        )


def test_a_new_relative_name_in_the_hosts_namespace_costs_no_descriptor_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host's own table (a local command, a ``network: host`` sandbox): failed before as above;
    the located path is masked (`ipc_mask_args` lists it)."""
    with _binder("host") as binder:
        for i in range(2):
            binder.bind(f"r54rel-{binder.where.name}-host{i}.sock")
            with _counted_readlinks(monkeypatch) as calls:
                paths = _hostsockets.host_socket_paths()
            assert str(binder.where / f"r54rel-{binder.where.name}-host{i}.sock") in paths
            assert len(calls) < 1_000, f"{len(calls)} readlinks for one new relative name"


def test_an_unsettled_name_is_kept_and_judged_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: past the lookup's budget a relative name is kept (counted, as one whose place is
    unknown), even under the sandbox's own paths, and not remembered: judged again once settled."""
    with _binder("ns", fds=16) as binder:
        binder.bind(f"r54rel-{binder.where.name}-budget.sock")
        lines = other_namespace_lines()
        own = [str(binder.where.resolve())]
        _relnames._RELATIVE.clear()
        monkeypatch.setattr(_relnames, "_LOOK_BUDGET", 0)
        assert len(_lines_of(_hostsockets._foreign_lines(lines, own), binder.where)) == 1
        monkeypatch.setattr(_relnames, "_LOOK_BUDGET", 4096)
        assert not _lines_of(_hostsockets._foreign_lines(lines, own), binder.where)


def test_the_fallback_walk_is_bounded_and_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel cannot be asked (no ``unix_diag``, a namespace not ours to enter) the holders
    are walked as before, but at most `_WALK_BUDGET` descriptors: a name not found by then is kept."""
    monkeypatch.setattr(_relnames, "bound_files", lambda *_args: None)
    monkeypatch.setattr(_relnames, "_WALK_BUDGET", 2_000)
    with _binder("ns") as binder:
        binder.bind(f"r54rel-{binder.where.name}-walk.sock")
        lines = other_namespace_lines()
        _relnames._RELATIVE.clear()
        with _counted_readlinks(monkeypatch) as calls:
            kept = _hostsockets._foreign_lines(lines, [str(binder.where.resolve())])
        assert len(calls) <= 2_000 + 10, len(calls)
        assert len(_lines_of(kept, binder.where)) == 1


def test_the_bound_file_is_told_by_inode_and_filesystem(tmp_path: Path) -> None:
    """`sandbox._boundfile`: the kernel's record of a socket's file matches that file only (a
    lookalike with the same name elsewhere does not), and the filesystem is read from the mount
    table where ``stat`` reports another device (as btrfs subvolumes do)."""
    import socket

    from sandbox._boundfile import _superblock_of, bound_file_at, bound_files

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    real = socket.socket(socket.AF_UNIX)
    other = socket.socket(socket.AF_UNIX)
    try:
        real.bind(str(tmp_path / "a" / "s.sock"))
        other.bind(str(tmp_path / "b" / "s.sock"))
        inode = os.fstat(real.fileno()).st_ino
        files = bound_files([inode])
        require(files is not None, "needs unix_diag (CONFIG_UNIX_DIAG)")
        assert files is not None
        bound = files[inode]
        assert bound is not None
        st = os.stat(tmp_path / "a" / "s.sock")
        assert bound == (st.st_dev, st.st_ino & 0xFFFFFFFF)
        assert bound_file_at(str(tmp_path / "a" / "s.sock"), bound, "/proc/self/mountinfo") is not None
        assert bound_file_at(str(tmp_path / "b" / "s.sock"), bound, "/proc/self/mountinfo") is None
        fd = os.open(tmp_path / "a" / "s.sock", os.O_PATH)
        try:
            assert _superblock_of(fd, "/proc/self/mountinfo") == st.st_dev
        finally:
            os.close(fd)
        # another device in stat than the record's: only the mount table's device can match
        assert (
            bound_file_at(str(tmp_path / "a" / "s.sock"), (st.st_dev + 1, bound[1]), "/proc/self/mountinfo")
            is None
        )
        assert bound_files([4_000_000_001]) == {4_000_000_001: None}  # no such socket
    finally:
        real.close()
        other.close()


#: Forks ``n`` children each in a directory of its own (in a network namespace of its own), then binds
#: relative names on request and renames each away, so that no process's cwd shows it.
_CROWD = r"""
import ctypes, os, socket, sys, time
assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000) == 0  # NEWUSER | NEWNET
base = sys.argv[1]
for i in range(int(sys.argv[2])):
    if os.fork() == 0:
        os.mkdir(f"{base}/d{i}")
        os.chdir(f"{base}/d{i}")
        time.sleep(120)
        os._exit(0)
os.chdir(base)
socks = []
print("ready", flush=True)
for line in sys.stdin:
    s = socket.socket(socket.AF_UNIX)
    s.bind(line.strip())
    os.rename(line.strip(), "moved-" + line.strip())
    socks.append(s)
    print("bound", flush=True)
"""


def test_a_crowd_of_processes_spends_only_its_own_namespaces_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each namespace's names have a budget of their own: 300 processes in cwds of their own and names
    no cwd shows (each costs every cwd) do not leave a host socket's name, looked up in the same
    batch, unsettled -- it is found, and masked."""
    require(os.geteuid() == 0, "needs root: to enter another network namespace (setns)")
    monkeypatch.setattr(_relnames, "_LOOK_BUDGET", 600)
    where = Path(tempfile.mkdtemp(prefix="shellrt-r54-relsock-", dir="/var/tmp"))
    crowd = subprocess.Popen(
        [sys.executable, "-c", _CROWD, str(where), "300"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert crowd.stdin is not None and crowd.stdout is not None
        assert "ready" in crowd.stdout.readline()
        for i in range(3):
            crowd.stdin.write(f"r54rel-{where.name}-crowd{i}.sock\n")
            crowd.stdin.flush()
            assert "bound" in crowd.stdout.readline()
        with _binder("host", fds=16) as host:
            name = f"r54rel-{host.where.name}-daemon.sock"
            host.bind(name)
            foreign = b"".join(line + b"\n" for line in _lines_of(other_namespace_lines(), where))
            assert len(foreign.splitlines()) == 3
            _relnames._RELATIVE.clear()
            # one table, one lookup: the crowd's names and the host's in the same batch
            paths = _hostsockets.host_socket_paths((_hostsockets._strict_socket_table() or b"") + foreign)
            assert str(host.where / name) in paths
    finally:
        os.killpg(crowd.pid, 9)
        crowd.wait()
        shutil.rmtree(where, ignore_errors=True)
