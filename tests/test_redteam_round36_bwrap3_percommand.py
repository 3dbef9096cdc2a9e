"""Red team, round 36 (bwrap3): one bwrap per command started from the caller's own thread.

Round 36 bwrap2 put the zygote, its holder and a root caller's spawner at umask 022 with no
signal blocked or ignored, so a session's commands and a root caller's per-command ones no longer
inherit their caller's. The per-command starts that come straight from the caller's thread did:
a non-root caller's (there is no spawner) and a root caller's ``nsenter`` fallback (the spawner
gone or never started). A process inherits its parent's umask, its ignored signals and its
thread's blocked mask through ``fork`` and ``exec``, and bwrap 0.8.0 resets none of them (no
``--umask``): under ``nohup`` or a shell's ``&`` every command ignored SIGHUP/SIGINT/SIGQUIT (its
own ``kill -INT`` of a child, ``timeout -s INT`` did nothing), a caller thread's blocked
SIGUSR1/SIGTERM reached every command, and a caller at umask 077 made every file a command wrote
unreadable to the next tool of the operator that expected 022 (and 000 made them world-writable).
Now the starter (``zinit enter``, the command's first process in the sandbox) sets umask 022,
unblocks every signal and puts each ignored one back to its default before it execs the command.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import os
print("UMASK", oct(os.umask(0o022)))
for line in open("/proc/self/status"):
    if line.startswith(("SigBlk", "SigIgn")):
        print(line.split(":")[0], int(line.split()[1], 16))
"""

_IGNORED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR2, signal.SIGALRM)
_BLOCKED = (signal.SIGUSR1, signal.SIGTERM, signal.SIGCHLD)


@contextmanager
def _caller_state(mask: int) -> Iterator[None]:
    """This process at umask ``mask``, ignoring ``_IGNORED``, its thread blocking ``_BLOCKED``;
    all put back after."""
    before = {sig: signal.getsignal(sig) for sig in _IGNORED}
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    umask = os.umask(mask)
    try:
        yield
    finally:
        os.umask(umask)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _bits(sigs: tuple[int, ...]) -> int:
    return sum(1 << (sig - 1) for sig in sigs)


@pytest.mark.parametrize("mask", [0o077, 0o000], ids=["077", "000"])
@pytest.mark.parametrize("spawner", [True, False], ids=["spawner", "no-spawner"])
def test_a_per_command_start_does_not_pass_on_its_callers_umask_and_signals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawner: bool, mask: int
) -> None:
    """Failed before: root without a spawner (its ``nsenter`` fallback) 2 of 2 (``UMASK 0o77`` /
    ``0o0``, SIGHUP..SIGALRM ignored, SIGUSR1/SIGTERM/SIGCHLD blocked); uid 65534 (never a
    spawner) 2 of 2. Root with its spawner held already (round 36 bwrap2)."""
    from tests.conftest import require

    require(not spawner or os.geteuid() == 0, "a spawner is a root caller's only")
    require_bwrap()
    if not spawner:

        async def no_spawner(self: BwrapBackend) -> None:
            return None

        monkeypatch.setattr(BwrapBackend, "_start_spawner", no_spawner)
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    ws.chmod(0o755)
    with _caller_state(mask):
        said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=False)
    assert said.get("UMASK") == "0o22", out
    assert int(said["SigIgn"]) & _bits(_IGNORED) == 0, out
    assert int(said["SigBlk"]) == 0, out


def test_it_holds_for_an_unprivileged_caller() -> None:
    name = "test_a_per_command_start_does_not_pass_on_its_callers_umask_and_signals"
    _nonroot.held_as_nobody(__file__, f"{name}[no-spawner-077]", f"{name}[no-spawner-000]")
