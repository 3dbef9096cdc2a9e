"""Red team round 15, local backend: does anything of a command outlive its reported end?

See `tests._outlive15`. One local session per module (the session cgroup as root, the reaper
process as uid 65534: this file belongs in the non-root selection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import LocalConfig, SandboxPolicy
from sandbox._warm import MAX_TEXT_BYTES, WarmPool
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests._outlive15 import planted_after_end, respawned_after_check, workspace

pytestmark = [pytest.mark.anyio]


#: Hands a waiting warm shell (`sandbox._warm`) a text of the command's own, through its stdin pipe
#: (``/proc/<pid>/fd/0``: same uid). The text uses shell builtins only until its last ``exec``, so
#: the warm shell starts no process: it still looks like an idle pre-started shell, no leftover.
_INJECT = r"""
import os, sys
me, parent = os.getpid(), os.getppid()
fifo = os.path.abspath(f".rt15-wait-{me}")
os.mkfifo(fifo)
payload = (
    f"exec 9<>{fifo}; "
    f"while kill -0 {me} 2>/dev/null || kill -0 {parent} 2>/dev/null; do read -t 0.02 -u 9; done; "
    f"read -t {sys.argv[1]} -u 9; "
    "printf '#!/bin/sh\necho planted after the command ended\n' > .git/hooks/pre-commit; "
    ": > planted.done; exec chmod 755 .git/hooks/pre-commit"
).encode()
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if b"__shellrt_n" in open(f"/proc/{pid}/cmdline", "rb").read() and int(pid) not in (me, parent):
            found.append(pid)
    except OSError:
        pass
for pid in found:
    try:
        fd = os.open(f"/proc/{pid}/fd/0", os.O_WRONLY)
        os.write(fd, b"%d " % len(payload) + payload)
        os.close(fd)
    except OSError:  # a retired warm shell on its way out
        pass
print("injected", len(found), flush=True)
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def local(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Path, Supervisor]]:
    base = tmp_path_factory.mktemp("rt15outlocal")
    ws = base / "ws"
    ws.mkdir()
    workspace(ws)
    (ws / "inject.py").write_text(_INJECT)
    backend = LocalBackend(LocalConfig(warm_shells=1), SandboxPolicy(workspace=ws))
    busy_psi, WarmPool.busy_psi = WarmPool.busy_psi, 101.0  # a warm shell even on a loaded machine
    try:
        async with backend, Supervisor(backend, session_dir=base / "session") as sup:
            yield ws, sup
    finally:
        WarmPool.busy_psi = busy_psi


async def test_a_detached_marker_scrubbed_leftover_does_not_plant_after_the_end(
    local: tuple[Path, Supervisor],
) -> None:
    ws, sup = local
    why = await planted_after_end(sup, ws)
    assert why is None, why


async def test_a_hijacked_warm_shell_does_not_plant_after_the_end(local: tuple[Path, Supervisor]) -> None:
    """A command too long for a warm shell runs fresh beside the waiting one, and hands that one a
    text of its own: the warm shell is no command, so nothing of the session "runs"."""
    ws, sup = local
    hook, done = ws / ".git" / "hooks" / "pre-commit", ws / "planted.done"
    for stale in (hook, done):
        stale.unlink(missing_ok=True)
    for _ in range(2):  # two commands of one shape: a warm shell now waits for the next
        assert (await sup.run("true", timeout_s=30)).exit_code == 0
    padding = "#" + "x" * MAX_TEXT_BYTES  # too long for a warm shell: it starts fresh
    # 120 s: the script reads every process's command line; under a CI lane's load that took 30 s once
    result = await sup.run(f"python3 inject.py 0.3\n{padding}", timeout_s=120)
    assert result.exit_code == 0, result.preview
    assert "injected" in result.preview, result.preview  # 1 before the fix: a warm shell waited beside it
    assert not hook.exists()
    with anyio.move_on_after(0.8):
        while not done.exists():
            await anyio.sleep(0.05)
    later = await sup.run("true", timeout_s=30)
    assert later.exit_code == 0, later.preview
    assert not hook.exists(), (
        "a warm shell the command took over planted a git hook after the protected-files check, "
        f"and the next check kept it as the operator's edit: {later.notes!r}"
    )


async def test_no_warm_shell_waits_while_a_background_task_runs(local: tuple[Path, Supervisor]) -> None:
    """A background task runs beside every later command: no warm shell is pre-started then (it
    could hand one a text of its own), and the pool starts again once the task ended."""
    _, sup = local
    backend = sup.backend
    assert isinstance(backend, LocalBackend)
    task = await sup.start_background("sleep 30")
    try:
        for _ in range(3):
            assert (await sup.run("true", timeout_s=30)).exit_code == 0
        warm = backend._runner.warm
        assert warm is not None and warm.idle == 0, "a warm shell waits beside a running background task"
    finally:
        await sup.tasks.stop(task.id)
    for _ in range(2):
        assert (await sup.run("true", timeout_s=30)).exit_code == 0
    assert warm.idle == 1, "the pool did not start again once the task had ended"


async def test_a_leftover_cannot_undo_the_post_command_revert(local: tuple[Path, Supervisor]) -> None:
    """The idle sweep that ends a command's leftovers ran beside the post-command check (won 3 of 8
    before, as root): now it is over before the command is reported ended."""
    ws, sup = local
    why = await respawned_after_check(sup, ws, attempts=4)
    assert why is None, why
