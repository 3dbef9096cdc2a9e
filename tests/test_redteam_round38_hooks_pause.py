"""Red team, round 38 (hooks): processes the host pause of round 37 missed, and pauses never lifted.

Before a hook runs on the host, every process of the session's running commands and background
tasks is stopped (`shellrt.supervisor._host_pause`), so none re-plants what the hook's programs
obey between the sweep and the hook. These attack what the pause did not stop: a process stopped
at the scan and continued by a sibling not yet stopped, a command whose start was under way when
the pause began, a command started while a hook ran, and processes the pause could not hold (no
descriptor left); and a pause that raised, leaving the tree stopped for ever.
"""

from __future__ import annotations

import resource
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_zygote
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor, _host_pause
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.anyio

#: A loop counting as fast as it can, and 12 sleepers.
_BUSY = "for i in $(seq 12); do sleep 300 & done; n=0; while :; do n=$((n+1)); echo $n >> b.cnt; done"


def _peek(path: Path) -> int:
    """How much a counting loop appended so far (0 before it starts: paused before its first write)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


async def _wait_for(path: Path) -> None:
    with anyio.fail_after(10):
        while not path.exists():
            await anyio.sleep(0.01)


@asynccontextmanager
async def _session(tmp_path: Path, *, persistent: bool = True) -> AsyncIterator[tuple[Path, Supervisor]]:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        yield ws, sup


async def test_a_command_started_while_a_hook_runs_waits_for_it(tmp_path: Path) -> None:
    """Failed before: a command started by a call that runs alongside another's hook ran under it."""
    async with _session(tmp_path) as (ws, sup):
        await sup.start_background("sleep 300")
        async with anyio.create_task_group() as tg, sup.quiet_for_host() as failure:
            assert failure is None, failure
            tg.start_soon(lambda: sup.run("echo x > started", timeout_s=30))
            await anyio.sleep(0.8)
            assert not (ws / "started").exists(), "a command ran while the hook ran"
        assert (ws / "started").exists()  # and it ran once the hook ended


async def test_a_start_under_way_when_the_pause_begins_is_paused(tmp_path: Path) -> None:
    """Failed before: a command whose backend start had not returned when the pause began was no
    seed of it, and counted under the hook (a bwrap per command: its start awaits the spawn)."""
    async with _session(tmp_path, persistent=False) as (ws, sup), anyio.create_task_group() as tg:
        tg.start_soon(lambda: sup.run("n=0; while :; do n=$((n+1)); echo $n >> c.cnt; done", timeout_s=30))
        with anyio.fail_after(5):
            while not sup._starting:
                await anyio.sleep(0)
        async with sup.quiet_for_host() as failure:
            assert failure is None, failure
            # A bwrap per command takes a moment to run its shell: its first count, or 3 s without one.
            with anyio.move_on_after(3):
                while not (ws / "c.cnt").exists():
                    await anyio.sleep(0.01)
            before = _peek(ws / "c.cnt")
            await anyio.sleep(0.4)
            assert _peek(ws / "c.cnt") == before, "a command started under the pause ran"
        tg.cancel_scope.cancel()


async def test_a_command_the_zygote_has_not_started_yet_is_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: a command whose host pid was not found yet (the zygote slower than
    ``_PID_WAIT_S`` under load; here that wait is 0) was no seed, and the pause said all were
    still while it counted under the hook."""
    monkeypatch.setattr(_bwrap_zygote, "_PID_WAIT_S", 0.0)
    async with _session(tmp_path) as (ws, sup):
        for attempt in range(4):
            counter = ws / f"d{attempt}.cnt"
            async with anyio.create_task_group() as tg:
                loop = f"n=0; while :; do n=$((n+1)); echo $n >> {counter.name}; done"
                tg.start_soon(partial(sup.run, loop, timeout_s=30))
                with anyio.fail_after(5):
                    while not sup._live:
                        await anyio.sleep(0)
                async with sup.quiet_for_host() as failure:
                    if failure is None:  # paused (refused: then the hook does not run)
                        await anyio.sleep(0.1)
                        before = _peek(counter)
                        await anyio.sleep(0.3)
                        assert _peek(counter) == before, f"attempt {attempt}: a command the pause skipped ran"
                tg.cancel_scope.cancel()
            with anyio.fail_after(10):
                while sup._live:
                    await anyio.sleep(0.01)


async def test_processes_it_cannot_hold_fail_closed_and_nothing_stays_stopped(tmp_path: Path) -> None:
    """Failed before: with no descriptor left for a pidfd, the process was skipped as gone (the
    pause said all were still) or ``/proc`` could not be listed (the pause raised and what it had
    stopped was never continued)."""
    async with _session(tmp_path) as (ws, sup):
        await sup.start_background(_BUSY)
        await _wait_for(ws / "b.cnt")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        for spare in (3, 6, 9):
            probe = open("/dev/null")  # noqa: SIM115 -- the next free descriptor
            limit = probe.fileno() + spare
            probe.close()
            failure: str | None | BaseException = None
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            try:
                paused = _host_pause.pause(
                    [p.pid for t in sup.tasks.list() if (e := sup.tasks.execution(t.id)) and (p := e.process).pid]
                )
                failure = paused.failure
            except BaseException as exc:  # the raise itself is half the attack: what stays stopped
                failure = exc
                paused = None
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            if paused is not None:
                _host_pause.resume(paused)
            assert isinstance(failure, str), f"{spare} spare descriptors: {failure!r} (not a refusal)"
            before = _peek(ws / "b.cnt")
            # A stopped task never counts again; a running one may wait its turn on a loaded
            # machine (0.3 s without a count was seen at load ~25): wait for the count, 10 s at most.
            with anyio.move_on_after(10):
                while _peek(ws / "b.cnt") <= before:
                    await anyio.sleep(0.05)
            assert _peek(ws / "b.cnt") > before, "the task stayed stopped after the pause"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_command_started_while_a_hook_runs_waits_for_it",
        "test_a_start_under_way_when_the_pause_begins_is_paused",
        "test_a_command_the_zygote_has_not_started_yet_is_not_skipped",
        "test_a_second_session_on_the_workspace_is_paused_too",
    )



async def test_a_second_session_on_the_workspace_is_paused_too(tmp_path: Path) -> None:
    """Failed before (round 37's Left): a second live session of this process on the same workspace
    went on under the first one's hook, and its task could re-plant ``.git/config`` there."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    first = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    second = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(first, tmp_path / "s1") as sup, supervised(second, tmp_path / "s2") as other:
        await other.start_background(_BUSY)
        await _wait_for(ws / "b.cnt")
        async with sup.quiet_for_host() as failure:
            assert failure is None, failure
            before = _peek(ws / "b.cnt")
            await anyio.sleep(0.4)
            assert _peek(ws / "b.cnt") == before, "the other session's task ran under the hook"
            started = anyio.Event()

            async def start() -> None:
                await other.run("echo x > other-started", timeout_s=30)
                started.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(start)
                await anyio.sleep(0.5)
                assert not (ws / "other-started").exists(), "the other session started a command under the hook"
                tg.cancel_scope.cancel()
        before = _peek(ws / "b.cnt")
        await anyio.sleep(0.3)
        assert _peek(ws / "b.cnt") > before  # and it goes on after
