"""Red team, round 38 (review): a command's many relative socket names made every start walk /proc
once per name.

Round 38 (novel) lists the pathname sockets of every other network namespace
(`sandbox._netns_sockets`) and leaves out those under a sandbox's own paths
(`sandbox._hostsockets._foreign_lines`). A name bound relative to its binder's cwd is found
through the processes holding it (`relative_socket_paths`: one walk of every process's fds), but
the lines were looked up one at a time: each new name cost a walk of its own. A process in a
network namespace of its own (a command in any bwrap sandbox, a rootless container: ``unshare -Urn``
is enough) holding N sockets bound by relative names made the host walk /proc N times, reading
N fds of that process each time, at every sandbox start and before every command of every session
(the socket watch), before any command runs: quadratic, 300 names cost 1.2 s, and rebinding
fresh names kept the cache from helping. Round 14 closed the same class for the host's own table
(one walk for all new names); the foreign lines now share it.
"""

from __future__ import annotations

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

#: Serial: its sockets, bound where every session's watch looks, would retire other tests' sandboxes.
pytestmark = [pytest.mark.serial]

_N = 300

#: Binds N unix sockets by names relative to its cwd, in a user and network namespace of its own.
_BINDER = r"""
import ctypes, os, resource, socket, sys, time
assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000) == 0  # NEWUSER | NEWNET
n = int(sys.argv[2])
os.chdir(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
socks = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.bind(f"r38rev-{i}.sock" if sys.argv[3] == "rel" else f"{sys.argv[1]}/r38rev-{i}.sock")
    socks.append(s)
print("ready", flush=True)
time.sleep(600)
"""


@contextmanager
def _binder(n: int, how: str = "rel") -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="r38-review-walks-", dir="/var/tmp"))
    proc = subprocess.Popen(
        [sys.executable, "-c", _BINDER, str(where), str(n), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        if "ready" not in proc.stdout.readline():
            pytest.fail(f"the binder could not start: {proc.stderr.read() if proc.stderr else ''}")
        yield where
    finally:
        proc.kill()
        proc.wait()
        for path in where.iterdir():
            path.unlink()
        where.rmdir()


def test_many_relative_names_cost_one_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: 300 walks of /proc for one start (1 of 1); now one, and every name is still
    found where its binder is (kept when outside the sandbox's paths, left out under them)."""
    walks = []
    real_holders = _relnames._holders

    def counted(targets: set[str], pids: list[str], budget: list[int]) -> tuple[dict[str, list[str]], bool]:
        walks.append(len(targets))
        return real_holders(targets, pids, budget)

    monkeypatch.setattr(_relnames, "_holders", counted)
    monkeypatch.setattr(_relnames, "bound_files", lambda *_args: None)  # the walk it counts (round 54)
    with _binder(_N) as where:
        lines = other_namespace_lines()
        ours = [line for line in lines.splitlines() if b"r38rev-" in line]
        assert len(ours) == _N, len(ours)
        start = time.perf_counter()
        kept = _hostsockets._foreign_lines(lines, ["/nonexistent-own-root"])
        took = time.perf_counter() - start
        assert len(walks) <= 1, f"{len(walks)} walks of /proc for one listing ({took:.2f} s)"
        assert sum(b"r38rev-" in line for line in kept.splitlines()) == _N
        walks.clear()
        assert b"r38rev-" not in _hostsockets._foreign_lines(lines, [str(where.resolve())])
        assert len(walks) <= 1, walks


def test_an_unchanged_table_is_not_judged_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: each listing resolved every one of 3,000 absolute names again (3,000
    resolutions for the second listing; 19,000 sockets cost ~100 ms a start, ~10 ms now)."""
    resolved = []
    real = _hostsockets._real

    def counted(name: str, dirs: dict[str, str]) -> str:
        resolved.append(name)
        return real(name, dirs)

    monkeypatch.setattr(_hostsockets, "_real", counted)
    with _binder(3000, "abs"):
        lines = other_namespace_lines()
        first = _hostsockets._foreign_lines(lines, ["/nonexistent-own-root"])
        resolved.clear()
        again = _hostsockets._foreign_lines(lines, ["/nonexistent-own-root"])
    assert again == first
    assert sum(b"r38rev-" in line for line in again.splitlines()) == 3000
    assert len(resolved) == 0, f"{len(resolved)} names resolved again for an unchanged table"
