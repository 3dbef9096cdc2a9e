"""Local backend: session/process group, marker bookkeeping, tree kill of escaped processes."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest, LocalConfig, SandboxClosedError, SandboxExecError, SandboxPolicy
from sandbox._proctree import COMMAND_ENV, MARKER_VAR, ProcessTree, is_alive, pids_with_marker, scan_markers
from sandbox.local import LocalBackend

pytestmark = pytest.mark.anyio


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[LocalBackend]:
    b = LocalBackend(LocalConfig(), SandboxPolicy(workspace=tmp_path))
    await b.start()
    try:
        yield b
    finally:
        await b.close()
    assert not pids_with_marker(b.marker_prefix, prefix=True)


async def read_all(proc: object) -> bytes:
    data = b""
    stream = proc.stdout  # type: ignore[attr-defined]
    try:
        while True:
            data += await stream.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        return data


async def test_process_leads_its_own_session(backend: LocalBackend, tmp_path: Path) -> None:
    proc = await backend.exec(ExecRequest(argv=("bash", "-c", "ps -o sid=,pgid= -p $$"), cwd=str(tmp_path)))
    out = (await read_all(proc)).split()
    await proc.wait()
    assert out == [str(proc.pid).encode(), str(proc.pid).encode()]
    assert os.getsid(0) != proc.pid


async def test_env_is_exactly_the_request_plus_documented_vars(backend: LocalBackend, tmp_path: Path) -> None:
    proc = await backend.exec(
        ExecRequest(argv=("/usr/bin/env",), cwd=str(tmp_path), env={"A": "1"}, report_cwd=True)
    )
    names = {line.split(b"=", 1)[0] for line in (await read_all(proc)).splitlines()}
    await proc.wait()
    # GIT_OPTIONAL_LOCKS=0 is every backend's (`sandbox._proctree.COMMAND_ENV`)
    assert names == {b"A", MARKER_VAR.encode(), b"SHELLRT_CWD_FILE", *(k.encode() for k in COMMAND_ENV)}


async def test_cwd_report(backend: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    proc = await backend.exec(
        ExecRequest(
            argv=("bash", "-c", 'cd d && pwd -P > "$SHELLRT_CWD_FILE"'), cwd=str(tmp_path), report_cwd=True
        )
    )
    status = await proc.wait()
    assert status.cwd == str(tmp_path / "d") and status.exit_code == 0


async def test_signal_death_is_reported(backend: LocalBackend, tmp_path: Path) -> None:
    proc = await backend.exec(ExecRequest(argv=("bash", "-c", "kill -TERM $$"), cwd=str(tmp_path)))
    status = await proc.wait()
    assert status.signal == 15 and status.exit_code == 143


async def test_kill_reaches_setsid_and_double_forked_orphans(backend: LocalBackend, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    script = f"(setsid sleep 1101 & echo $! >> {pidfile}); (sleep 1102 & echo $! >> {pidfile}) ; sleep 1103"
    proc = await backend.exec(ExecRequest(argv=("bash", "-c", script), cwd=str(tmp_path)))
    with anyio.fail_after(20):  # wait for both pids, not a fixed time
        while not pidfile.exists() or len(pidfile.read_text().split()) < 2:
            await anyio.sleep(0.05)
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2 and all(is_alive(p) for p in pids)
    start = time.monotonic()
    await proc.kill()
    assert time.monotonic() - start < 10  # the sleeps run ~1100 s: only a hang fails this
    assert not any(is_alive(p) for p in pids)
    await proc.kill()  # idempotent


async def test_orphans_of_a_finished_command_are_swept(backend: LocalBackend, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    proc = await backend.exec(
        ExecRequest(
            argv=("bash", "-c", f"(setsid sleep 1104 >/dev/null 2>&1 & echo $! > {pidfile})"),
            cwd=str(tmp_path),
        )
    )
    assert (await proc.wait()).exit_code == 0
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10  # a condition wait: generous for a loaded box
    while is_alive(pid) and time.monotonic() < deadline:
        await anyio.sleep(0.02)
    assert not is_alive(pid)


async def test_close_kills_running_processes(tmp_path: Path) -> None:
    b = LocalBackend(LocalConfig(), SandboxPolicy(workspace=tmp_path))
    await b.start()
    proc = await b.exec(ExecRequest(argv=("bash", "-c", "sleep 1105 & sleep 1106"), cwd=str(tmp_path)))
    await anyio.sleep(0.1)
    await b.close()
    assert proc.pid is not None and not is_alive(proc.pid)
    assert not pids_with_marker(b.marker_prefix, prefix=True)
    with pytest.raises(SandboxClosedError):
        await b.exec(ExecRequest(argv=("true",), cwd=str(tmp_path)))
    await b.close()  # idempotent


async def test_exec_before_start_and_bad_cwd(tmp_path: Path, backend: LocalBackend) -> None:
    fresh = LocalBackend(LocalConfig(), SandboxPolicy(workspace=tmp_path))
    with pytest.raises(SandboxClosedError):
        await fresh.exec(ExecRequest(argv=("true",), cwd=str(tmp_path)))
    with pytest.raises(SandboxExecError, match="cannot start"):
        await backend.exec(ExecRequest(argv=("true",), cwd=str(tmp_path / "missing")))


def test_marker_matching_is_exact_per_run_and_prefix_per_backend() -> None:
    procs = [
        subprocess.Popen(["sleep", "30"], env={**os.environ, MARKER_VAR: marker})
        for marker in ("t-x-1", "t-x-12")
    ]
    try:
        time.sleep(0.05)
        assert pids_with_marker("t-x-1") == [procs[0].pid]
        assert sorted(pids_with_marker("t-x-", prefix=True)) == sorted(p.pid for p in procs)
        assert scan_markers()[procs[1].pid] == "t-x-12"
        tree = ProcessTree(procs[0].pid, "t-x-1")
        assert tree.kill_all(deadline_s=1.0)
        procs[0].wait()
        assert procs[1].poll() is None
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_is_alive_treats_zombies_as_dead() -> None:
    proc = subprocess.Popen(["true"])
    deadline = time.monotonic() + 30  # until it is a zombie: `true` may wait seconds for a core under load
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{proc.pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                break
        except OSError:
            break
        time.sleep(0.01)
    assert not is_alive(proc.pid)
    proc.wait()
    assert not is_alive(proc.pid)


def test_local_enforces_only_tree_kill(tmp_path: Path) -> None:
    assert LocalBackend(LocalConfig(), SandboxPolicy(workspace=tmp_path)).enforces() == frozenset(
        {"tree_kill"}
    )


async def test_kill_while_another_task_waits(backend: LocalBackend, tmp_path: Path) -> None:
    for _ in range(20):
        proc = await backend.exec(ExecRequest(argv=("sleep", "30"), cwd=str(tmp_path)))
        async with anyio.create_task_group() as tg:
            tg.start_soon(proc.wait)
            await anyio.sleep(0)
            await proc.kill()
        status = await proc.wait()
        assert status.signal == 9
