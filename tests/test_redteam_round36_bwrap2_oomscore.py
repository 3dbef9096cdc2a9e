"""Red team, round 36 (bwrap2): a command ran at its caller's OOM score.

A process inherits its parent's ``oom_score_adj`` (and its floor, ``oom_score_adj_min``). Every
bwrap command ran at its caller's: 0 for an ordinary caller, the host's own processes' score, so
under host-wide memory pressure (a non-root caller on cgroup v1 has no memory cgroup at all) the
kernel's OOM killer weighed a hostile command's memory the same as a host service's; a caller
at a negative score (a unit's ``OOMScoreAdjust=``) made every command outrank the host's
processes to be spared. The direction that matters is down: a command must never be *less*
killable than the host. Now every bwrap sandbox starts at `sandbox._oomscore.OOM_SCORE_ADJ`
(1000, as Kubernetes gives a best-effort pod): the first the kernel kills, before anything of the
host at a lower score; a caller already there keeps it. Root and uid 65534, session and per command.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import errno
def read(path):
    with open(path) as f:
        return f.read().strip()
print("ADJ", read("/proc/self/oom_score_adj"))
print("SCORE", read("/proc/self/oom_score"))
try:
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("-1")
    print("BELOW0 ok")
except OSError as exc:
    print("BELOW0", errno.errorcode[exc.errno])
"""

#: What every bwrap command starts at (`sandbox._oomscore.OOM_SCORE_ADJ`).
_EXPECTED = 1000


def _own_adj() -> int:
    return int(Path("/proc/self/oom_score_adj").read_text())


@contextmanager
def _caller_at(adj: int) -> Iterator[None]:
    """This process (which starts the sandbox) at ``adj`` (a raise: no privilege), put back after."""
    before = _own_adj()
    Path("/proc/self/oom_score_adj").write_text(str(adj))
    try:
        yield
    finally:
        Path("/proc/self/oom_score_adj").write_text(str(before))


def _probe(tmp_path: Path, persistent: bool) -> dict[str, str]:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert said.get("ADJ") == str(_EXPECTED), out
    # Below the host's default (0) needs CAP_SYS_RESOURCE in the host's user namespace.
    assert said.get("BELOW0") == "EACCES", out
    return said


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_is_killed_before_the_hosts_processes(tmp_path: Path, persistent: bool) -> None:
    """A caller at the host's default score (0): its commands ran at 0 too. Failed before: ``ADJ
    0``, root 2 of 2 and uid 65534 2 of 2."""
    require_bwrap()
    _probe(tmp_path, persistent)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_raised_callers_commands_are_not_lowered(tmp_path: Path, persistent: bool) -> None:
    """A caller at +500 (a harness that wants to die before the host does): its commands must not
    come out below it. The reset only ever raises a score."""
    with _caller_at(500):
        _probe(tmp_path, persistent)
    assert _own_adj() != 500, "the caller's own score put back"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (a non-root caller on cgroup v1 has no memory cgroup: the host's OOM
    killer is the only one its commands meet)."""
    _nonroot.held_as_nobody(
        __file__,
        "test_a_command_is_killed_before_the_hosts_processes",
        "test_a_raised_callers_commands_are_not_lowered",
    )


def test_the_zygote_and_the_host_agree_on_the_score() -> None:
    """`sandbox._zygote_main` imports nothing of ``sandbox``: its copy of the number is pinned here."""
    from sandbox import _oomscore, _zygote_main

    assert _zygote_main.OOM_SCORE_ADJ == _oomscore.OOM_SCORE_ADJ == _EXPECTED
