"""Red team, round 22 (bwrap): two shellrt processes of one uid share ONE budget namespace.

Round 21 gave each process's sandboxes, together, half of the caller's per-uid budgets (inotify,
fanotify, queued signals, queue bytes) through a budget namespace per process; two ``shellrt
serve`` of one uid each made their own and each got half, so together they could hold
everything (round 21 "Left"). Each process's holder now asks the uid's serving holder (an
abstract socket of the host's network namespace, checked: same uid, not a sandbox, a direct child
namespace owned by the uid with the same limits) and joins its namespace; when the serving
holder ends, a surviving one serves the name (`sandbox._ucounts._MAKE`).

Only a non-root caller has a budget namespace; the test runs itself as uid 65534 from root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sandbox import _ucounts
from tests import _nonroot
from tests.conftest import require

pytestmark = pytest.mark.bwrap

#: One shellrt process of the caller under the rendezvous ``argv[1]``: its budget namespace's
#: inode and holder pid, then it holds it until EOF.
_PROCESS = r"""
import os, sys
from sandbox import _ucounts
_ucounts._RENDEZVOUS = sys.argv[1]
prefix = _ucounts.budget_prefix()
print(os.stat(prefix[1].split("=", 1)[1]).st_ino, getattr(_ucounts._NAMESPACE, "holder_pid", os.getpid)(), flush=True)
sys.stdin.read()
"""


def _name() -> str:
    """A rendezvous of this test's own: no other process of the uid serves it or ends meanwhile."""
    return f"shellrt-budget-{os.geteuid()}-test-{uuid.uuid4().hex[:12]}"


def _process(name: str) -> tuple[subprocess.Popen[str], int, int]:
    started = subprocess.Popen(
        [sys.executable, "-c", _PROCESS, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        # the temp dir's rendezvous (round 26; round 23 meets in XDG_RUNTIME_DIR when set)
        env={**{k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert started.stdout is not None
    line = started.stdout.readline().split()
    assert len(line) == 2 and all(w.isdigit() for w in line), f"no budget namespace: {line!r} ({started.poll()})"
    return started, int(line[0]), int(line[1])


def _serves(holder: int, name: str) -> bool:
    """Whether ``holder`` listens on the rendezvous ``name`` (``/proc/net/unix``, its own fds; a
    holder binds the name relative to its rendezvous directory, round 26)."""
    inodes = {
        f"socket:[{row.split()[6]}]"
        for row in Path("/proc/net/unix").read_text().splitlines()[1:]
        if row.split()[-1] == name and int(row.split()[3], 16) & 0x10000  # __SO_ACCEPTCON
    }
    try:
        return any(os.readlink(fd) in inodes for fd in Path(f"/proc/{holder}/fd").iterdir())
    except OSError:
        return False


def _end(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=60)


def test_two_processes_of_one_caller_share_one_budget() -> None:
    """As uid 65534 failed before (1 of 1): the second process made a namespace of its own."""
    if os.geteuid() == 0:  # root's commands run as leased uids of their own: no budget namespace
        assert _ucounts.budget_prefix() == []
        return
    name = _name()
    first, ns_first, _holder = _process(name)
    try:
        second, ns_second, survivor = _process(name)
    except BaseException:
        _end(first)
        raise
    try:
        assert ns_second == ns_first, "two processes of one uid, two budget namespaces (each its own half)"
        _end(first)  # the serving holder ends: the second's serves the name from now on
        deadline = time.monotonic() + 90
        while not _serves(survivor, name) and time.monotonic() < deadline:
            time.sleep(0.05)  # the survivor binds the free name within its 2 s poll
        assert _serves(survivor, name), "the surviving holder did not take the free name over"
        third, ns_third, _holder = _process(name)
        _end(third)
        assert ns_third == ns_second, "after the first process ended, a new one did not find the survivor's"
    finally:
        _end(second)
        if first.poll() is None:
            _end(first)


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("nsenter") is not None, "setpriv and nsenter")
    name = "test_two_processes_of_one_caller_share_one_budget"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)
