"""Red team, round 21 (bwrap): a non-root caller's sandboxes share ONE half of its per-uid budgets.

Round 20 gave each session half of the caller's inotify instances, message queue bytes and queued
signals, and one bwrap per command the two rlimits only (its bwrap drops every capability before
``/proc/sys/user`` could be written). So a per-command sandbox could hold every inotify instance
of the uid, and two sandboxes (a session and a per-command one here) each holding their half held
everything: the operator's editor, ``tail -f`` and the next session's guard got none. Every
sandbox's user namespace is now a child of one budget namespace per process whose limits are the
half (`sandbox._ucounts.budget_prefix`), so what they hold together stays under it.

Only a non-root caller has the attack (a root caller's commands run as leased uids of their own,
which the root run shows); the test runs itself as uid 65534 from root.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require
from tests.test_redteam_round20_bwrap_ucounts import _TAKE, NAMES, _free, _got, _wanted

pytestmark = pytest.mark.bwrap


async def _hold(sup: Supervisor) -> tuple[str, tuple[int, ...]]:
    """Starts a background command taking all it can of each budget; (task id, what it holds)."""
    take = base64.b64encode(_TAKE.encode()).decode()
    task = await sup.start_background(f"echo {take} | base64 -d | python3 - hold 4096 4096 1048576")
    said = ""
    with anyio.fail_after(40):
        while "held" not in said:
            await anyio.sleep(0.2)
            said += (await sup.tasks.read_new(task.id)).text
    return task.id, _got(said)


def test_two_sandboxes_of_one_caller_leave_it_its_budgets(tmp_path: Path) -> None:
    """As uid 65534 failed before (1 of 1): the per-command sandbox took every inotify instance the
    session left, both together every queue byte and queued signal; the caller got 0 of each."""
    require_bwrap()
    want = _wanted()
    assert min(want) > 0, want
    for name in ("a", "b"):
        (tmp_path / name).mkdir()

    async def main() -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        session = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=tmp_path / "a"))
        one_shot = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=tmp_path / "b"))
        async with supervised(session, tmp_path / "sa") as sa, supervised(one_shot, tmp_path / "sb") as sb:
            task_a, held_a = await _hold(sa)
            task_b, held_b = await _hold(sb)
            free = await anyio.to_thread.run_sync(_free, want)
            await sa.tasks.stop(task_a)
            await sb.tasks.stop(task_b)
            return held_a, held_b, free

    held_a, held_b, free = anyio.run(main)
    wrong = [
        f"{name}: the session took {a}, the per-command sandbox {b}; the caller then got {f} of the {w} it asked for"
        for name, a, b, f, w in zip(NAMES, held_a, held_b, free, want, strict=True)
        if f < w or a == 0
    ]
    after = _free(want)
    wrong += [
        f"{name}: {a} of {w} after both ended" for name, a, w in zip(NAMES, after, want, strict=True) if a < w
    ]
    assert not wrong, "; ".join(wrong)


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    name = "test_two_sandboxes_of_one_caller_leave_it_its_budgets"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)
