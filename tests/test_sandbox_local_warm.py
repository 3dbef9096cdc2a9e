"""The local backend's warm shell (sandbox._warmshell): what runs in it is what a fresh ``bash -c`` runs."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest, SandboxPolicy
from sandbox._hostproc import HostProcess, HostRunner
from sandbox._proctree import is_alive, pids_with_marker
from sandbox._warmshell import WarmShells
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.env import base_env
from shellrt.supervisor.shells import shell_argv

pytestmark = pytest.mark.anyio

#: Everything a command can tell about the shell it runs in, apart from its pid and marker.
PROBE = r"""echo "last=$_ 0=$0 line=$LINENO flags=$- argc=$# seconds=$SECONDS status=$?"
echo "pid=$$ ppid=$PPID bashpid=$BASHPID"
compgen -v | grep -v '^BASH_EXECUTION_STRING$' | tr '\n' ' '; echo
env | grep -v '^SHELLRT_RUN_ID=\|^SHELLRT_CWD_FILE=\|^_=' | sort | tr '\n' ' '; echo
(cd /proc/$$/fd && echo *)
pwd -P; echo "PWD=$PWD OLDPWD=${OLDPWD-unset}"
set -o | tr -s ' \t' ' ' | tr '\n' ' '; echo
shopt | tr -s ' \t' ' ' | tr '\n' ' '; echo
trap -p; umask; ulimit -n
"""


@pytest.fixture
async def runner() -> AsyncIterator[HostRunner]:
    r = HostRunner("warmtest")
    r.start()
    try:
        yield r
    finally:
        await r.close()
    assert not pids_with_marker(r.marker_prefix, prefix=True)


def request(command: str, cwd: Path, **env: str) -> ExecRequest:
    return ExecRequest(
        argv=("bash", "-c", command), cwd=str(cwd), env={**base_env(), **env}, merge_stderr=True
    )


async def ready(warm: WarmShells) -> None:
    with anyio.fail_after(10):
        while not warm.ready:
            await anyio.sleep(0.005)


async def output(process: HostProcess) -> tuple[str, int]:
    data = b""
    try:
        while True:
            data += await process.stdout.receive()
    except anyio.EndOfStream:
        pass
    status = await process.wait()
    return data.decode(), status.exit_code


async def fresh(runner: HostRunner, req: ExecRequest) -> HostProcess:
    run = runner.new_run(req.report_cwd)
    return await runner.spawn(
        req.argv, req, marker=run.marker, cwd_host_file=run.cwd_file, env_extra=run.env, cwd=req.cwd
    )


async def warm_process(warm: WarmShells, req: ExecRequest, *, idle_s: float = 0.0) -> HostProcess:
    """``req`` run by a warm shell (the first ask is taken for a one-off; the second starts one)
    that waited ``idle_s`` for it."""
    for _ in range(2):
        if not warm.ready:
            assert warm.take(req) is None
    await ready(warm)
    await anyio.sleep(idle_s)
    process = warm.take(req)
    assert process is not None, "a matching request must be run by the waiting shell"
    return process


async def test_a_warm_shell_runs_what_a_fresh_bash_c_runs(runner: HostRunner, tmp_path: Path) -> None:
    warm = WarmShells(runner)
    try:
        long_comment = "# " + "x" * 60_000 + "\n"  # far beyond a pipe buffer: read whole from the memfd
        req = request(long_comment + PROBE, tmp_path)
        hot = await warm_process(warm, req, idle_s=1.1)  # $SECONDS starts at 0 all the same
        hot_text, hot_code = await output(hot)
        cold_text, cold_code = await output(await fresh(runner, req))
    finally:
        warm.close()
    assert hot_code == cold_code == 0
    hot_lines, cold_lines = hot_text.splitlines(), cold_text.splitlines()
    assert hot_lines[1] == f"pid={hot.pid} ppid={os.getpid()} bashpid={hot.pid}"
    assert hot_lines[0] == cold_lines[0] and hot_lines[2:] == cold_lines[2:]
    assert "line=2 " in hot_lines[0] and "seconds=0 " in hot_lines[0]
    assert hot_lines[4].split() == ["0", "1", "2"], "no descriptor of the warm shell may reach the command"
    assert "__shellrt_c" not in hot_text and "__shellrt_g" not in hot_text


async def test_a_directory_made_again_is_not_the_warm_shells(runner: HostRunner, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    warm = WarmShells(runner)
    try:
        req = request("ls; pwd -P", work)
        await warm_process(warm, req)  # consumed; the next one waits in `work`
        await ready(warm)
        shutil.rmtree(work)
        work.mkdir()
        (work / "made-again").touch()
        assert warm.take(req) is None, "the waiting shell sits in the removed directory"
        text, code = await output(await fresh(runner, req))
    finally:
        warm.close()
    assert code == 0 and "made-again" in text


async def test_another_environment_or_stdin_is_never_run_warm(runner: HostRunner, tmp_path: Path) -> None:
    warm = WarmShells(runner)
    try:
        req = request("true", tmp_path)
        await warm_process(warm, req)
        await ready(warm)
        assert warm.take(request("true", tmp_path, EXTRA="1")) is None
        assert warm.take(req.model_copy(update={"stdin": True})) is None
        assert warm.take(req.model_copy(update={"argv": ("true",)})) is None
        assert warm.take(req.model_copy(update={"merge_stderr": False})) is None
    finally:
        warm.close()


async def test_a_leftover_background_child_of_a_warm_command_is_killed(
    runner: HostRunner, tmp_path: Path
) -> None:
    warm = WarmShells(runner)
    try:
        process = await warm_process(warm, request("sleep 1000 >/dev/null 2>&1 & echo $!", tmp_path))
        text, _ = await output(process)
    finally:
        warm.close()
    child = int(text.split()[0])
    with anyio.fail_after(5):
        while is_alive(child):
            await anyio.sleep(0.01)


async def test_a_warm_shell_killed_while_waiting_is_replaced(runner: HostRunner, tmp_path: Path) -> None:
    warm = WarmShells(runner)
    try:
        req = request("echo ran", tmp_path)
        await warm_process(warm, req)
        await ready(warm)
        waiting = warm._ready[0]
        assert waiting is not None and waiting.process.pid is not None
        os.kill(waiting.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not waiting.process.exited and time.monotonic() < deadline:
            await anyio.sleep(0.005)
        assert warm.take(req) is None, "a dead shell is not handed out"
        text, code = await output(await fresh(runner, req))
    finally:
        warm.close()
    assert (text, code) == ("ran\n", 0)


async def test_close_ends_the_waiting_shell(tmp_path: Path) -> None:
    backend = LocalBackend(None, SandboxPolicy(workspace=tmp_path))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=tmp_path / ".session") as sup:
            for _ in range(3):
                assert (await sup.run("true", timeout_s=10)).exit_code == 0
            warm = backend._warm
            assert warm is not None
            await ready(warm)
            waiting = warm._ready[0]
            assert waiting is not None and waiting.process.pid is not None
            pid = waiting.process.pid
            assert is_alive(pid)
    finally:
        await backend.close()
    assert not is_alive(pid)
    assert not pids_with_marker(backend.marker_prefix, prefix=True)


async def test_an_escaped_process_of_a_long_idle_warm_shell_is_swept(
    runner: HostRunner, tmp_path: Path
) -> None:
    """The sweep's pid floor is taken when the command starts, not when its shell did."""
    warm = WarmShells(runner)
    command = "(setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!)"
    try:
        process = await warm_process(warm, request(command, tmp_path), idle_s=0.5)
        assert process.scan_floor <= (process.pid or 0)
        # Counted from its spawn, the idle wait would exceed the pid cycle: every sweep a full scan.
        assert time.monotonic() - process.spawned_at < 0.4
        text, _ = await output(process)
    finally:
        warm.close()
    escaped = int(text.split()[0])
    assert escaped > process.scan_floor
    with anyio.fail_after(5):
        while is_alive(escaped):
            await anyio.sleep(0.01)


async def test_commands_with_and_without_a_cwd_report_share_the_warm_shell(
    runner: HostRunner, tmp_path: Path
) -> None:
    """Commands that report their cwd and read-only ones that do not alternate: both run warm,
    and the one that asks for a report gets it (and its variable), the other neither."""
    (tmp_path / "sub").mkdir()
    probe = shell_argv('cd sub; echo "${SHELLRT_CWD_FILE:+set}|$_"', "bash")[2]  # with the report trap
    reporting = request(probe, tmp_path).model_copy(update={"report_cwd": True})
    quiet = request(probe, tmp_path)
    warm = WarmShells(runner)
    try:
        assert warm.take(reporting) is None  # the one-off
        for _ in range(3):
            for req, expected in ((reporting, "set|sub\n"), (quiet, "|sub\n")):
                process = await warm.take_soon(req)
                if process is None:  # its shell was still starting: the next one is warm
                    await ready(warm)
                    process = await warm.take_soon(req)
                assert process is not None, f"{req.report_cwd=}: started fresh"
                assert (await output(process)) == (expected, 0)
                reported = (await process.wait()).cwd
                assert reported == (str(tmp_path / "sub") if req.report_cwd else None)
    finally:
        warm.close()
