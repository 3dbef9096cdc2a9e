"""Red team, round 36 (bwrap2): a command inherited its caller's ignored and blocked signals.

Ignored dispositions and the blocked mask survive ``exec``: a caller started under ``nohup``
(SIGHUP ignored) or with a shell's ``&`` (SIGINT and SIGQUIT ignored), or whose starting thread
blocked a signal, passed that on to the zygote, its holder and the root spawner, and from them to
every command: a command ignored SIGHUP/SIGINT it never asked to (its own ``kill -INT`` of a child,
``timeout -s INT``, a test harness's Ctrl-C all did nothing), and one per command of a root caller
started with SIGTERM blocked. Now those processes start with nothing blocked and nothing ignored but
Python's SIGPIPE/SIGXFSZ, which every spawn resets (`sandbox._zygote_main.clean_signals`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
for line in open("/proc/self/status"):
    if line.startswith(("SigBlk", "SigIgn")):
        print(line.split(":")[0], int(line.split()[1], 16))
"""

_IGNORED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR2)
_BLOCKED = (signal.SIGUSR1, signal.SIGTERM)


@contextmanager
def _caller_signals() -> Iterator[None]:
    """This process ignoring ``_IGNORED`` and its thread blocking ``_BLOCKED``, put back after."""
    before = {sig: signal.getsignal(sig) for sig in _IGNORED}
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _bits(sigs: tuple[int, ...]) -> int:
    return sum(1 << (sig - 1) for sig in sigs)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_does_not_inherit_its_callers_signal_state(tmp_path: Path, persistent: bool) -> None:
    """Failed before: root session (``SigIgn`` with SIGHUP, SIGINT, SIGQUIT, SIGUSR2) and root per
    command (those and ``SigBlk`` SIGUSR1, SIGTERM): 2 of 2; uid 65534 session 1 of 1."""
    from tests.conftest import require

    require(persistent or os.geteuid() == 0, "one bwrap per command of a non-root caller: see Left")
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    with _caller_signals():
        said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert int(said["SigIgn"]) & _bits(_IGNORED) == 0, out
    assert int(said["SigBlk"]) & _bits(_BLOCKED) == 0, out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_command_does_not_inherit_its_callers_signal_state[session]")
