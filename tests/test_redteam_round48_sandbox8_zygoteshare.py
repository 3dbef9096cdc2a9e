"""Red team, round 48 (sandbox8): a non-root caller's command stopped every session's zygote.

Round 47 gave a non-root caller's commands ``(soft NOFILE - 253) / 2`` descriptors so that what
they hold in flight over unix sockets (``SCM_RIGHTS``, counted per uid, checked against each
*sender's* soft ``RLIMIT_NOFILE``) leaves the caller's other processes room. But the zygote got the
same halved limit (``prlimit`` before its bwrap, `lower_ceilings`), and the zygote is a sender: it
hands each command's stdio to the init that runs it and the init's ends to the host. A command that
queued its limit's worth made every zygote of the caller -- its own session's and every other
session's -- fail its next send (``ETOOMANYREFS``): no command ran anywhere until it stopped (a
background task: the session's life). Now the zygote (and its C fork server's parent) keeps the
caller's limit and only the inits, and so the commands, get the share (`_zygote_main.Zygote._lower`,
the fork server lowered as it starts). As root it holds by construction (the commands run as a
leased uid); uid 65534 runs it through ``tests/test_redteam_round47_sandbox7_nonroot.py`` (one child run).
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._bwrap_uidshare import nofile_share
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised
from tests._inflight_fill import HOLD_UNTIL_DONE, SEND_UNTIL_REFUSED

pytestmark = pytest.mark.bwrap

#: Queue 253 copies of one descriptor a message on stream pairs until the kernel refuses, report
#: the count and the descriptor limit, then hold them until the host is done.
#: Commands run in each session while the descriptors are held: more than the warm pool (3) of
#: inits made ahead, so some are made (and their ends sent to the host) meanwhile.
_RUNS = 5

_FILL = (
    SEND_UNTIL_REFUSED
    + 'import resource\nprint("INFLIGHT", sent, why, resource.getrlimit(resource.RLIMIT_NOFILE), flush=True)\n'
    + HOLD_UNTIL_DONE
)


def test_a_command_in_flight_leaves_every_zygote_its_sends(tmp_path: Path) -> None:
    """Failed before as uid 65534 (1 of 1: both the command's own session and another session of
    the caller ran nothing while the command held 10,120 descriptors in flight)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "fill.py").write_text(_FILL)
    policy = SandboxPolicy(workspace=ws)
    first = BwrapBackend(BwrapConfig(persistent=True), policy)
    other = BwrapBackend(BwrapConfig(persistent=True), policy)
    seen: dict[str, str] = {}

    async def main() -> None:
        async with supervised(first, tmp_path / "s1") as sup, supervised(other, tmp_path / "s2") as sup2:
            seen["warm"] = (await sup2.run("echo warm", timeout_s=60)).preview.strip()

            async def fill() -> None:
                seen["out"] = (await sup.run("python3 fill.py", timeout_s=60)).preview

            async with anyio.create_task_group() as tg:
                tg.start_soon(fill)
                end = time.monotonic() + 40
                while not (ws / "ready").exists() and "out" not in seen and time.monotonic() < end:
                    await anyio.sleep(0.02)
                try:
                    with anyio.fail_after(30):
                        # more than a warm pool: an init the zygote made (and sent) meanwhile
                        for i in range(_RUNS):
                            seen[f"same{i}"] = (await sup.run(f"echo s{i}", timeout_s=20)).preview.strip()
                            seen[f"other{i}"] = (await sup2.run(f"echo o{i}", timeout_s=20)).preview.strip()
                except Exception as exc:  # noqa: BLE001 -- what failed is the finding
                    seen["error"] = repr(exc)
                finally:
                    (ws / "done").touch()

    anyio.run(main)
    out = seen.get("out", "")
    assert "INFLIGHT" in out, (seen, out)
    if os.geteuid() != 0:  # the commands keep round 47's share: only the zygote's own is back
        share = nofile_share(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        assert f"({share}, {share})" in out, (share, out)
    ran = [seen.get(f"{name}{i}") for i in range(_RUNS) for name in ("same", "other")]
    assert ran == [f"{s}{i}" for i in range(_RUNS) for s in "so"], (seen, out)
