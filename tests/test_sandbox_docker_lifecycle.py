"""Docker backend lifecycle: nothing leaks, crashed clients are reaped, errors say what to do.

Each test owns its containers (fresh sessions). Skips locally without docker;
fails under CI=true.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, ExecRequest, SandboxClosedError
from sandbox.docker import DockerBackend, list_sandboxes
from sandbox.docker._hostpid import host_pid
from sandbox.docker._labels import session_labels
from shellrt.cli import main as cli_main
from tests._docker_support import (
    BUSYBOX,
    DEBIAN,
    NOSH,
    config,
    container_exists,
    managed_container_ids,
    policy,
    read_to_end,
    require_docker,
)

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

REPO = Path(__file__).resolve().parents[1]


async def test_twenty_parallel_sandboxes_leave_zero_containers(tmp_path: Path) -> None:
    require_docker()
    backends = [DockerBackend(config(BUSYBOX), policy(tmp_path)) for _ in range(20)]
    sessions = {b.session_id for b in backends}
    outputs: dict[int, int] = {}

    async def use(i: int, backend: DockerBackend) -> None:
        async with backend:
            proc = await backend.exec(ExecRequest(argv=("true",), cwd="/", env={"PATH": "/bin"}))
            outputs[i] = (await proc.wait()).exit_code

    async with anyio.create_task_group() as tg:
        for i, backend in enumerate(backends):
            tg.start_soon(use, i, backend)
    assert outputs == {i: 0 for i in range(20)}
    assert managed_container_ids(sessions) == set()
    leftover_dirs = [p for p in Path("/tmp").glob("shellrt-docker-*") if any(s in p.name for s in sessions)]
    assert leftover_dirs == []


async def test_close_is_idempotent_and_exec_after_close_fails(tmp_path: Path) -> None:
    require_docker()
    backend = DockerBackend(config(BUSYBOX), policy(tmp_path))
    await backend.start()
    await backend.start()
    cid = backend.container_id
    assert cid is not None and container_exists(cid)
    await backend.close()
    await backend.close()
    assert not container_exists(cid)
    with pytest.raises(SandboxClosedError):
        await backend.exec(ExecRequest(argv=("true",), cwd="/"))


_CLIENT = textwrap.dedent(
    """
    import signal, sys, anyio
    from pathlib import Path
    from sandbox import DockerConfig, SandboxPolicy
    from sandbox.docker import DockerBackend

    async def main() -> None:
        # SIGINT as an anyio program takes it: a message to its loop, then it leaves without closing
        # the sandbox. The receiver is open before the id is printed, so the test's signal cannot
        # land before it (SIGKILL and SIGTERM keep their default: the process dies where it stands).
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            backend = DockerBackend(DockerConfig(image=sys.argv[1]), SandboxPolicy(workspace=Path(sys.argv[2])))
            await backend.start()
            print(backend.container_id, flush=True)
            async for _ in signals:
                sys.exit(130)

    anyio.run(main)
    """
)


def _crashed_client(tmp_path: Path, sig: int = signal.SIGKILL) -> str:
    """Start a client that opens a sandbox, signal it (SIGKILL), return the id of the container it had."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLIENT, BUSYBOX, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    cid = proc.stdout.readline().strip()
    assert cid and container_exists(cid), f"the client started no sandbox: {proc.stderr.read()[-2000:]}"
    proc.send_signal(sig)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the client outlived signal {sig} by 60 s: {proc.communicate()[1][-2000:]}")
    assert proc.returncode == (130 if sig == signal.SIGINT else -sig), proc.stderr.read()[-2000:]
    return cid


def _wait_removed(cid: str, within: float = 60) -> None:
    """Block until the daemon has removed container ``cid`` (the API's wait for "removed": no poll)."""
    import docker
    import requests

    client = docker.from_env(timeout=int(within))
    try:
        client.api.wait(cid, condition="removed", timeout=int(within))
    except docker.errors.NotFound:
        pass  # already gone
    except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
        pass  # not removed within the bound: the assertion after it says so
    finally:
        client.close()


def _orphan(owner: dict[str, str] | None = None) -> str:
    """A container made as shellrt's (named and labelled), its owner gone unless ``owner`` labels say otherwise."""
    labels = {"shellrt.owner-host": socket.gethostname(), "shellrt.owner-pid": "999999999", **(owner or {})}
    session = secrets.token_hex(6)
    out = subprocess.run(
        [
            "docker", "run", "-d", "--network", "none", "--name", f"shellrt-{session}",
            "--label", "shellrt.managed=1", "--label", f"shellrt.session={session}", "--label", "shellrt.created=0",
            *[f"--label={k}={v}" for k, v in labels.items()], BUSYBOX, "sleep", "3600",
        ],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return out.stdout.strip()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["KILL", "TERM", "INT"])
async def test_killed_client_leaves_nothing(tmp_path: Path, sig: int) -> None:
    """The owner's attach connection closes with it: the executor ends and the daemon removes the container."""
    require_docker()
    cid = _crashed_client(tmp_path, sig)
    _wait_removed(cid)
    assert not container_exists(cid)


@pytest.mark.serial  # any test's DockerBackend start reaps the orphan before this one's list_sandboxes
async def test_orphan_is_reaped_by_next_start(tmp_path: Path) -> None:
    require_docker()
    cid = _orphan()
    info = {i.id: i for i in list_sandboxes()}
    assert info[cid[:12]].verdict.reap
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)):
        assert not container_exists(cid)


@pytest.mark.serial  # gc --older-than removes any old container, other tests' too
async def test_orphan_is_reaped_by_gc_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as alive:
        # Owned by this (live) process but old: concurrent starts elsewhere leave it alone, --older-than takes it.
        cid = _orphan({k: v for k, v in session_labels("x", "", "").items() if k.startswith("shellrt.owner")})
        assert cli_main(["sandbox", "ls"]) == 0
        assert cid[:12] in capsys.readouterr().out
        assert cli_main(["sandbox", "gc", "--older-than", "600", "--dry-run"]) == 0
        assert container_exists(cid)
        assert cli_main(["sandbox", "gc", "--older-than", "600"]) == 0
        assert not container_exists(cid)
        assert alive.container_id is not None and container_exists(alive.container_id)  # owner alive: kept


@pytest.mark.serial  # gc --all removes every shellrt container on the machine
async def test_gc_older_than_and_all(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        cid = backend.container_id
        assert cid is not None
        assert cli_main(["sandbox", "gc", "--older-than", "3600"]) == 0
        assert container_exists(cid)
        time.sleep(1.1)
        assert cli_main(["sandbox", "gc", "--older-than", "0.5", "--dry-run"]) == 0
        assert container_exists(cid)
        assert cli_main(["sandbox", "gc", "--all"]) == 0
        assert not container_exists(cid)


# --- clear errors -------------------------------------------------------------------
async def test_image_without_sh_is_refused(tmp_path: Path) -> None:
    require_docker()
    backend = DockerBackend(config(NOSH), policy(tmp_path))
    with pytest.raises(BackendUnavailableError, match=r"has no /bin/sh.*POSIX-sh"):
        await backend.start()
    assert managed_container_ids({backend.session_id}) == set()


async def test_missing_image_is_not_pulled(tmp_path: Path) -> None:
    require_docker()
    backend = DockerBackend(config("shellrt-test-does-not-exist:1"), policy(tmp_path))
    with pytest.raises(BackendUnavailableError, match=r"not present locally.*never pulls.*no registry"):
        await backend.start()


async def test_unreachable_daemon_says_how_to_start_it(tmp_path: Path) -> None:
    backend = DockerBackend(config(DEBIAN, docker_host="unix:///nonexistent/docker.sock"), policy(tmp_path))
    with pytest.raises(BackendUnavailableError, match=r"not reachable.*dockerd.*systemctl start docker"):
        await backend.start()


async def test_missing_workspace_is_reported(tmp_path: Path) -> None:
    backend = DockerBackend(config(DEBIAN), policy(tmp_path / "missing"))
    with pytest.raises(BackendUnavailableError, match="workspace .* does not exist"):
        await backend.start()


async def test_remote_daemon_and_host_network_are_refused(tmp_path: Path) -> None:
    backend = DockerBackend(config(DEBIAN, docker_host="tcp://10.1.2.3:2375"), policy(tmp_path))
    with pytest.raises(BackendUnavailableError, match="daemon on this machine"):
        await backend.start()
    backend = DockerBackend(config(DEBIAN), policy(tmp_path, network="host"))
    with pytest.raises(BackendUnavailableError, match="host network"):
        await backend.start()


async def test_bridge_network_is_opt_in(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path, network="bridge")) as backend:
        proc = await backend.exec(
            ExecRequest(argv=("/bin/sh", "-c", "ls /sys/class/net"), cwd="/", env={"PATH": "/bin"})
        )
        out = await read_to_end(proc.stdout)
        await proc.wait()
        assert "eth0" in out.decode()


async def test_dead_executor_is_recovered_and_reported(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        assert backend.container_id is not None and backend.executor_pid is not None
        subprocess.run(
            ["docker", "exec", backend.container_id, "kill", "-9", str(backend.executor_pid)],
            check=False,  # the container stops under the exec
            timeout=30,
        )
        await anyio.sleep(0.2)
        proc = await backend.exec(ExecRequest(argv=("true",), cwd="/", env={"PATH": "/bin"}))
        assert (await proc.wait()).exit_code == 0
        assert len(backend.recoveries) == 1 and "died or was killed" in backend.recoveries[0]


# --- fast start -----------------------------------------------------------------------
async def test_executor_is_the_main_process_and_start_needs_no_exec(tmp_path: Path) -> None:
    """Start is one create + one start: no ``docker exec`` session, the executor is docker-init's child."""
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        assert backend.container_id is not None and backend.executor_pid is not None
        execs = subprocess.run(
            ["docker", "inspect", "-f", "{{json .ExecIDs}}", backend.container_id],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        assert execs in ("null", "[]")
        # Read from the host: commands see nothing below the executor's /proc directory (round 40).
        init = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Pid}}", backend.container_id],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        host = host_pid(backend.container_id, backend.executor_pid)
        assert host is not None
        with open(f"/proc/{host}/stat", encoding="ascii") as fh:
            parent = fh.read().rsplit(") ", 1)[1].split()[1]
        assert parent == init  # parent: docker-init, PID 1


async def test_client_is_shared_and_close_is_one_forced_remove(tmp_path: Path) -> None:
    require_docker()
    from sandbox.docker._client import connect as _connect

    first = DockerBackend(config(BUSYBOX), policy(tmp_path))
    second = DockerBackend(config(BUSYBOX), policy(tmp_path))
    async with first, second:
        assert first._client is second._client is _connect(None)
        cid = first.container_id
        assert cid is not None
    assert not container_exists(cid)
    assert _connect(None) is first._client  # close leaves the shared client usable


# --- faults are reported truthfully and promptly ---------------------------------------
async def _drain(proc: object) -> bytes:
    from sandbox.base import SandboxProcess

    assert isinstance(proc, SandboxProcess)
    out = b""
    with anyio.move_on_after(60):
        try:
            while True:
                out += await proc.stdout.receive()
        except anyio.EndOfStream:
            pass
    return out


async def test_fork_bomb_kill_is_prompt_and_says_killed(tmp_path: Path) -> None:
    """A bomb whose shell stays: the kill ends the tree promptly and says it was killed."""
    require_docker()
    from sandbox.policy import ResourceLimits

    limits = ResourceLimits(pids=256)
    async with DockerBackend(config(DEBIAN), policy(tmp_path, limits=limits)) as backend:
        proc = await backend.exec(
            ExecRequest(argv=("bash", "-c", ":(){ :|:& };:; sleep 60"), cwd="/", env={"PATH": "/bin"})
        )
        await anyio.sleep(1.5)
        started = time.monotonic()
        with anyio.fail_after(30):
            await proc.kill()
            status = await proc.wait()
        assert time.monotonic() - started < 15  # KILL_GRACE plus a container replacement at worst
        assert status.exit_code == 137 and status.signal == 9 and status.sandbox_failure is None
        follow = await backend.exec(ExecRequest(argv=("true",), cwd="/", env={"PATH": "/bin"}))
        assert (await follow.wait()).exit_code == 0


async def test_a_fork_bomb_ends_with_the_shell_that_started_it(tmp_path: Path) -> None:
    """The bomb's first shell exits 0 at once: as on bwrap, its whole tree dies with it, promptly.

    The first shell starts the bomb with one fork and exits: `:(){ :|:& };:` forks twice from it,
    and under load its second fork met the pids limit, retried for bash's 15 s and exited 254 (CI
    of stop 41: 60 s ran out). Output is read as any caller reads it: bash's retry messages
    filled an unread pipe and the shell blocked writing them."""
    require_docker()
    from sandbox.policy import ResourceLimits

    limits = ResourceLimits(pids=256)
    async with DockerBackend(config(DEBIAN), policy(tmp_path, limits=limits)) as backend:
        proc = await backend.exec(
            ExecRequest(
                argv=("bash", "-c", ":(){ :|:& }; : & exit 0"),
                cwd="/",
                env={"PATH": "/bin"},
                merge_stderr=True,
            )
        )
        # Under a second here, loaded or not: the bound says "ends", the leftover count below
        # says "whole tree".
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, proc)
                status = await proc.wait()
        assert status.exit_code == 0 and status.sandbox_failure is None
        bombs = await backend.run_capture(
            ["sh", "-c", "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^bash$' || true"]
        )
        assert bombs.strip() == "0", bombs


async def test_oom_kill_is_flagged(tmp_path: Path) -> None:
    require_docker()
    from sandbox.policy import ResourceLimits

    limits = ResourceLimits(memory_bytes=64 * 1024 * 1024)
    async with DockerBackend(config(DEBIAN), policy(tmp_path, limits=limits)) as backend:
        proc = await backend.exec(
            ExecRequest(
                argv=("dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"),
                cwd="/",
                env={"PATH": "/bin"},
            )
        )
        status = await proc.wait()
        assert status.exit_code == 137 and status.oom_killed


async def test_killed_container_is_reported_as_a_sandbox_failure(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        proc = await backend.exec(ExecRequest(argv=("sleep", "30"), cwd="/", env={"PATH": "/bin"}))
        assert backend.container_id is not None
        subprocess.run(["docker", "kill", backend.container_id], capture_output=True, timeout=60)
        with anyio.fail_after(30):
            status = await proc.wait()
        assert status.sandbox_failure is not None and "container" in status.sandbox_failure
        assert status.exit_code != 0
        # The next command gets a fresh container, and the replacement is on record.
        again = await backend.exec(ExecRequest(argv=("true",), cwd="/", env={"PATH": "/bin"}))
        assert (await again.wait()).exit_code == 0 and len(backend.recoveries) == 1


async def test_exec_after_timeout_while_gc_and_other_sessions_run(tmp_path: Path) -> None:
    """No FileNotFoundError race: gc and other sessions come and go while a session kills and execs."""
    require_docker()
    from sandbox.docker import gc_sandboxes

    stop = anyio.Event()

    async def churn() -> None:
        while not stop.is_set():
            await anyio.to_thread.run_sync(gc_sandboxes)
            async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as other:
                await (await other.exec(ExecRequest(argv=("true",), cwd="/", env={"PATH": "/bin"}))).wait()

    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend, anyio.create_task_group() as tg:
        tg.start_soon(churn)
        for _ in range(5):
            slow = await backend.exec(ExecRequest(argv=("sleep", "30"), cwd="/", env={"PATH": "/bin"}))
            with anyio.move_on_after(0.5):
                await slow.wait()
            await slow.kill()
            assert (await slow.wait()).exit_code == 137
            proc = await backend.exec(ExecRequest(argv=("echo", "ok"), cwd="/", env={"PATH": "/bin"}))
            assert await _drain(proc) == b"ok\n"
            assert (await proc.wait()).exit_code == 0
        stop.set()
    assert backend.recoveries == []


async def test_emergency_cleanup_removes_containers_synchronously(tmp_path: Path) -> None:
    require_docker()
    from sandbox.docker import emergency_cleanup

    backend = DockerBackend(config(BUSYBOX), policy(tmp_path))
    await backend.start()
    cid, host_dir, io_dir = backend.container_id, backend._host_dir, backend._io_dir
    assert cid is not None and host_dir is not None and os.path.isdir(host_dir)
    assert io_dir is not None and os.path.isdir(io_dir)
    emergency_cleanup()
    assert not container_exists(cid) and not os.path.exists(host_dir) and not os.path.exists(io_dir)
    await backend.close()  # still idempotent afterwards
