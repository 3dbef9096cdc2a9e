"""Red team, round 38 (review3): sessions whose writable roots overlap another's, under its hook.

Round 38 (hooks) paused, under one session's hook, every other live session of the process on the
same workspace, keyed by the workspace's real path. A session whose workspace lies inside another
session's (a harness running a sub-project, an MCP server's second session on a subdirectory), or
whose extra writable root is another session's workspace, or the same directory reached through a
bind mount, has another key: its background task went on under the hook and could re-plant the
hook's ``.git/config`` between the sweep and the hook's ``git``.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.anyio

#: A loop counting as fast as it can into ``$1/b.cnt``, with 4 sleepers.
_BUSY = "for i in 1 2 3 4; do sleep 300 & done; n=0; while :; do n=$((n+1)); echo $n >> {dir}/b.cnt; done"


def _peek(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


async def _wait_for(path: Path) -> None:
    with anyio.fail_after(10):
        while not path.exists():
            await anyio.sleep(0.01)


async def _held_under_hook(
    tmp_path: Path, hook_policy: SandboxPolicy, task_policy: SandboxPolicy, target: Path
) -> None:
    """``task_policy``'s session writes into ``target`` in a loop; ``hook_policy``'s session runs a
    hook: the writes stop for the hook's time and go on after."""
    require_bwrap()
    hooked = BwrapBackend(BwrapConfig(), hook_policy)
    tasked = BwrapBackend(BwrapConfig(), task_policy)
    async with supervised(hooked, tmp_path / "s1") as sup, supervised(tasked, tmp_path / "s2") as other:
        await other.start_background(_BUSY.format(dir=target))
        await _wait_for(target / "b.cnt")
        async with sup.quiet_for_host() as failure:
            assert failure is None, failure
            before = _peek(target / "b.cnt")
            await anyio.sleep(0.4)
            assert _peek(target / "b.cnt") == before, "the other session's task ran under the hook"
        before = _peek(target / "b.cnt")
        await anyio.sleep(0.3)
        assert _peek(target / "b.cnt") > before, "the other session's task stayed stopped"


async def test_a_session_on_the_workspace_s_parent_is_paused(tmp_path: Path) -> None:
    """Failed before: a session on ``ws`` wrote ``ws/sub`` under the hook of a session on ``ws/sub``."""
    ws = tmp_path / "ws"
    sub = ws / "sub"
    sub.mkdir(parents=True)
    await _held_under_hook(tmp_path, SandboxPolicy(workspace=sub), SandboxPolicy(workspace=ws), sub)


async def test_a_session_with_the_workspace_as_a_writable_root_is_paused(tmp_path: Path) -> None:
    """Failed before: a session whose extra writable root is the hook's workspace wrote on."""
    ws = tmp_path / "ws"
    own = tmp_path / "own"
    ws.mkdir()
    own.mkdir()
    await _held_under_hook(
        tmp_path, SandboxPolicy(workspace=ws), SandboxPolicy(workspace=own, writable_roots=(ws,)), ws
    )


async def test_a_session_on_a_subdirectory_is_paused(tmp_path: Path) -> None:
    """Failed before: a session on ``ws/sub`` wrote on under the hook of a session on ``ws`` (the
    hook's programs read ``ws``'s tree, ``sub`` included: a nested repository's config)."""
    ws = tmp_path / "ws"
    sub = ws / "sub"
    sub.mkdir(parents=True)
    await _held_under_hook(tmp_path, SandboxPolicy(workspace=ws), SandboxPolicy(workspace=sub), sub)


async def test_a_session_closing_is_paused_until_its_tasks_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: a session left the registry (and the pause's list: ``_closed``) when its
    ``close`` began, before its tasks were killed; a hook meanwhile let them write on (the kill
    made slow here: a task tree's kill takes a moment on every backend)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    first = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    second = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(first, tmp_path / "s1") as sup, supervised(second, tmp_path / "s2") as other:
        await other.start_background(_BUSY.format(dir=ws))
        await _wait_for(ws / "b.cnt")
        close_tasks = other.tasks.close

        async def slow_close() -> None:
            await anyio.sleep(1.0)
            await close_tasks()

        monkeypatch.setattr(other.tasks, "close", slow_close)
        async with anyio.create_task_group() as tg:
            tg.start_soon(other.close)
            await anyio.sleep(0.05)
            async with sup.quiet_for_host() as failure:
                assert failure is None, failure
                before = _peek(ws / "b.cnt")
                await anyio.sleep(0.4)
                assert _peek(ws / "b.cnt") == before, "the closing session's task ran under the hook"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_session_on_the_workspace_s_parent_is_paused",
        "test_a_session_with_the_workspace_as_a_writable_root_is_paused",
        "test_a_session_on_a_subdirectory_is_paused",
        "test_a_session_closing_is_paused_until_its_tasks_are_gone",
    )


_BIND_CHECK = """
import os, subprocess, sys
from shellrt.supervisor._host_pause import Reach
a, b, c = sys.argv[1:4]
subprocess.run(["mount", "--bind", a, b], check=True)
print(Reach.of([b]).overlaps(Reach.of([a])), Reach.of([b + "/sub"]).overlaps(Reach.of([a])),
      Reach.of([a]).overlaps(Reach.of([c])))
"""


def test_a_workspace_spelled_through_a_bind_mount_overlaps(tmp_path: Path) -> None:
    """Guard: the same directory bound elsewhere (docker bind mode's host path, a harness's bind) is
    one reach, and so is a directory below it; a sibling is not. Run in a private mount namespace
    (root: ``unshare -m``) so the host's mounts never change."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.conftest import require

    require(os.geteuid() == 0 and shutil.which("unshare") is not None, "a private mount namespace needs root")
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for one in (a / "sub", b, c):
        one.mkdir(parents=True)
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-c", _BIND_CHECK, str(a), str(b), str(c)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "False"]
