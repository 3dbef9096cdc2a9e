"""Red team round 12 (bwrap): what a command reaches of shellrt, the zygote and the session's other commands.

Attacks that already hold, kept as fast regression tests (each probed in the session sandbox,
one sandbox per command and through the CLI; as root and, in
`tests.test_redteam_round12_bwrap_nonroot`, as uid 65534):

* **Inherited fds**: a foreground command and a background task hold fds 0-2 only: no end of
  the zygote's control socket, the status pipe, the init's server socket, the seccomp program,
  bwrap's json-status or args fds or its eventfd. Nothing to forge an exit code or a cwd report
  through (the docker executor's channel of round 6 has no bwrap counterpart).
* **Signals**: the command's pid 1 (the session's per-command init, or bwrap's own init per
  command) drops every signal sent from inside; the exit code the host reports is the
  command's. ``kill -9 -1`` reaches only the command's own pid namespace: a background task of
  the same session keeps running, and neither sees the other's processes, environment or
  command line.
* **pid 1**: the session's init is not dumpable: its memory, fds and environment are closed to
  the command it runs, though both have one uid. Per command, pid 1 is bwrap's own init, which is
  dumpable (bwrap 0.8): the command can write its memory (``/proc/1/mem``), but it holds nothing
  the command lacks (the same filter, ``no_new_privs``, no capability, the same uid).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.models import TaskStatus
from tests import test_sandbox_escape_bwrap as escape
from tests._bwrap_session import require_bwrap, supervised
from tests.test_sandbox_escape_bwrap import Run

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]
run, ws, host_sockets = escape.run, escape.ws, escape.host_sockets

#: The fds of the shell (listed by a child writing a file: a pipe or ``$(...)`` would add the shell's
#: end of it) and of a child of it (python leaves out the fd it listed with, gone by then).
FDS = (
    "ls /proc/$$/fd > /tmp/rt12-fds; echo SHELL-FDS $(sort -n /tmp/rt12-fds); rm -f /tmp/rt12-fds; "
    "python3 -c \"import os; print('CHILD-FDS', *sorted(int(f) for f in os.listdir('/proc/self/fd') "
    "if os.path.lexists('/proc/self/fd/' + f)))\""
)


def _fds(out: str, label: str) -> list[int]:
    return [int(f) for f in out.split(label)[1].splitlines()[0].split()]


@pytest.fixture(params=["persistent", "per-command"])
async def session(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Supervisor]:
    require_bwrap()
    work = tmp_path / "w"
    work.mkdir()
    backend = BwrapBackend(
        BwrapConfig(persistent=request.param == "persistent"), SandboxPolicy(workspace=work)
    )
    async with supervised(backend, tmp_path / "session") as sup:
        yield sup


async def test_a_command_holds_no_fd_beyond_stdio(run: Run) -> None:
    code, out = await run(FDS)
    assert code == 0, out
    assert _fds(out, "SHELL-FDS") == [0, 1, 2] and _fds(out, "CHILD-FDS") == [0, 1, 2], out


async def test_a_background_task_holds_no_fd_beyond_stdio(session: Supervisor) -> None:
    task = await session.start_background(FDS)
    with anyio.fail_after(30):
        ended = await session.tasks.wait(task.id)
    out = (await session.tasks.read_new(task.id)).text
    assert ended.exit_code == 0, out
    assert _fds(out, "SHELL-FDS") == [0, 1, 2] and _fds(out, "CHILD-FDS") == [0, 1, 2], out


async def test_the_hosts_own_inheritable_fds_stay_outside(session: Supervisor) -> None:
    """An fd the embedding program left inheritable (an MCP client's socket, a log file) reaches
    no command and no task, whether the command's bwrap starts now or its zygote started before."""
    read_end, write_end = os.pipe()
    log = os.open("/etc/hostname", os.O_RDONLY)
    for fd in (read_end, write_end, log):
        os.set_inheritable(fd, True)
    try:
        result = await session.run(FDS, timeout_s=30)
        task = await session.start_background(FDS)
        with anyio.fail_after(30):
            await session.tasks.wait(task.id)
        background = (await session.tasks.read_new(task.id)).text
    finally:
        for fd in (read_end, write_end, log):
            os.close(fd)
    for out in (result.preview, background):
        assert _fds(out, "SHELL-FDS") == [0, 1, 2] and _fds(out, "CHILD-FDS") == [0, 1, 2], out


async def test_signals_to_pid_1_are_dropped_and_the_exit_code_is_the_commands(run: Run) -> None:
    code, out = await run(
        "for s in HUP INT QUIT TERM USR1 USR2 PIPE ALRM CHLD CONT TSTP; do kill -$s 1; done; "
        "kill -9 1; sleep 0.3; echo ALIVE; exit 7"
    )
    assert code == 7 and "ALIVE" in out, out
    code, out = await run("echo NEXT")
    assert code == 0 and "NEXT" in out, out


async def test_pid_1_is_closed_to_the_command_or_holds_nothing_more(session: Supervisor) -> None:
    """The session's init: not dumpable (its memory, fds and environment are closed, one uid
    notwithstanding). Per command, pid 1 is bwrap's init, which is dumpable (bwrap 0.8): its memory
    is the command's to write, so it must hold nothing the command lacks -- the same filter,
    ``no_new_privs``, no capability, the same uid."""
    result = await session.run(
        "ps -o comm= -p 1; cat /proc/1/environ >/dev/null 2>&1 && echo OPEN-environ; "
        "ls /proc/1/fd/ >/dev/null 2>&1 && echo OPEN-fd; "
        "python3 -c \"open('/proc/1/mem', 'rb')\" 2>/dev/null && echo OPEN-mem; "
        "for p in 1 $$; do grep -E '^(Uid|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp(_filters)?):' "
        "/proc/$p/status | tr -s '\t ' ' ' > /tmp/rt12-status-$p; done; "
        "cmp -s /tmp/rt12-status-1 /tmp/rt12-status-$$ && echo SAME-STATUS; cat /tmp/rt12-status-1; "
        "rm -f /tmp/rt12-status-*",
        timeout_s=30,
    )
    out = result.preview
    assert "SAME-STATUS" in out and "NoNewPrivs: 1" in out and "Seccomp: 2" in out, out
    assert "CapEff: 0000000000000000" in out and "CapBnd: 0000000000000000" in out, out
    if out.split()[0] == "shellrt-init":
        assert "OPEN-" not in out, out
    else:
        assert out.split()[0] == "bwrap", out


async def test_kill_minus_one_and_proc_reach_stop_at_the_commands_own_pid_namespace(
    session: Supervisor,
) -> None:
    task = await session.start_background("sleep 30; echo BG-DONE", env={"RT12_MARK": "background-secret"})
    await anyio.sleep(0.5)
    result = await session.run(
        "kill -9 -1; sleep 0.2; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 'background-secre[t]'; "
        "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'slee[p] 30'; true",
        timeout_s=30,
    )
    try:
        counts = [line for line in result.preview.split() if line.isdigit()]
        assert counts == ["0", "0"], result.preview
        assert session.tasks.get(task.id).status is TaskStatus.RUNNING, "kill -9 -1 reached another command"
    finally:
        await session.tasks.stop(task.id)


async def test_no_writable_sys_path_and_no_userfaultfd_device(run: Run) -> None:
    """``userfaultfd`` is denied as a call; its device (Linux 6.1+) must not stand in for it, and
    nothing under /sys takes a write (the uevent helper, a device's power state)."""
    code, out = await run(
        "find /sys -writable 2>/dev/null | head -5 | sed 's/^/WRITABLE /'; "
        "[ -e /dev/userfaultfd ] && echo UFFD-DEVICE; true"
    )
    assert "WRITABLE" not in out and "UFFD-DEVICE" not in out, out
