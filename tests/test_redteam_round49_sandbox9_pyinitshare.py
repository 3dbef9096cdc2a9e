"""Red team, round 49 (sandbox9): round 48's NOFILE split on the Python init's path.

Round 48 kept the caller's ``RLIMIT_NOFILE`` for a non-root caller's zygote (a sender of every
command's ends) and gave its inits the commands' share: the C fork server with ``prlimit`` as it
starts, the Python init (``SHELLRT_BWRAP_INIT=python``, no compiler, ``vm.memfd_noexec`` 2) in
`_zygote_main.Zygote._lower`. Only the C path had a test. Here the Python init runs the commands
(`sandbox._zinit` told so, as ``SHELLRT_BWRAP_INIT=python`` does): each command holds the share,
soft and hard, and the zygote itself the caller's limit. A non-root caller's case (uid 65534,
through round 47's one child run, `tests/test_redteam_round47_sandbox7_nonroot.py`); as root the
commands run as a leased uid with no share (round 48), which it asserts instead.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _zinit
from sandbox._bwrap_uidshare import nofile_share
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

_PROBE = "python3 -c 'import resource; print(\"NOFILE\", *resource.getrlimit(resource.RLIMIT_NOFILE))'"


def _descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (its ``/proc/*/task/*/children``), breadth first."""
    out: list[int] = []
    queue = [pid]
    while queue:
        here = queue.pop(0)
        try:
            tasks = os.listdir(f"/proc/{here}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                kids = Path(f"/proc/{here}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for kid in map(int, kids):
                out.append(kid)
                queue.append(kid)
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""  # ended meanwhile (an init let go)


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def _soft_nofile(pid: int) -> int | None:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    return None


def test_the_python_init_gives_its_commands_the_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held on the unfixed tree (round 48 wrote it; no test pinned it): fails with `_lower`'s
    ``setrlimit`` taken out (the command then holds the caller's 1,048,576 as uid 65534)."""
    require_bwrap()
    # what SHELLRT_BWRAP_INIT=python decides once per process, for this test only
    monkeypatch.setattr(_zinit, "_program", f"{_zinit.INIT_ENV}=python")
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with supervised(backend, tmp_path / "s") as sup:
            # more runs than the warm pool (3): inits made before and after the session's first command
            seen["runs"] = [(await sup.run(_PROBE, timeout_s=60)).preview.strip() for _ in range(4)]
            zygote = backend._zygote  # now: a zygote may have been replaced meanwhile (round 29)
            assert zygote is not None and zygote.host_pid is not None
            seen["c_init"] = zygote.c_init
            tree = _descendants(zygote.host_pid)
            ours = {p for p in tree if b"marshal.loads" in _cmdline(p)}  # `_BOOTSTRAP`
            # the zygote: the one whose parent is not one (its Python inits are clones of it)
            zygotes = [p for p in ours if _parent(p) not in ours]
            seen["zygote_nofile"] = [_soft_nofile(p) for p in zygotes]

    anyio.run(main)
    assert seen["c_init"] is False, seen
    caller = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    runs = seen["runs"]
    assert len(runs) == 4, seen
    # the zygote itself (a sender of every command's ends) keeps the caller's own
    assert seen["zygote_nofile"] == [caller], (caller, seen)
    if os.geteuid() == 0:  # a leased uid's commands: no share (round 48), the caller's limit
        assert all(r.split()[:2] == ["NOFILE", str(caller)] for r in runs), seen
        return
    share = nofile_share(caller)
    assert share < caller, (share, caller)
    assert all(r.split() == ["NOFILE", str(share), str(share)] for r in runs), (share, seen)
