"""DockerConfig.root_can_administer: root commands administer the image, and still cannot reach shellrt.

With the opt-in, uid-0 commands hold CHOWN, DAC_OVERRIDE and FOWNER on a
writable root: Inspect's own ``test_exec_as_user`` (adduser, whoami as root
and as the new user, userdel) passes. DAC_OVERRIDE ignores file modes, so the
I/O directory is detached from the container and cwd files come as fd 6; the
escape probes of ``test_sandbox_escape_docker`` run again here as such a root
command, against the executor, its runners, the helpers, other commands'
request files, FIFOs and environments.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest

from sandbox import DockerConfig, ExecRequest
from sandbox.base import ExitStatus
from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, require_docker
from tests.test_sandbox_escape_docker import ATTACK

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
#: CHOWN (0), DAC_OVERRIDE (1), FOWNER (3).
ADMIN_CAPS = f"{0b1011:016x}"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def admin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    require_docker()
    ws = tmp_path_factory.mktemp("adminws")
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(ws)) as backend:
        yield backend


async def run(
    backend: DockerBackend, script: str, user: str | None = None, report_cwd: bool = False
) -> tuple[str, ExitStatus]:
    request = ExecRequest(
        argv=("sh", "-c", script),
        cwd="/workspace",
        env=ENV,
        merge_stderr=True,
        user=user,
        report_cwd=report_cwd,
    )
    proc = await backend.exec(request)
    chunks: list[bytes] = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await proc.stdout.receive())
    status = await proc.wait()
    return b"".join(chunks).decode(errors="replace"), status


class _InspectView:
    """The one method Inspect's ``test_exec_as_user`` calls, over a docker backend."""

    def __init__(self, backend: DockerBackend) -> None:
        self.backend = backend

    async def exec(self, cmd: list[str], user: str | None = None, timeout: int | None = None) -> Any:
        from inspect_ai.util import ExecResult

        proc = await self.backend.exec(ExecRequest(argv=tuple(cmd), cwd="/workspace", env=ENV, user=user))
        out: list[bytes] = []
        err: list[bytes] = []

        async def drain(stream: Any, into: list[bytes]) -> None:
            with contextlib.suppress(anyio.EndOfStream):
                while True:
                    into.append(await stream.receive())

        with anyio.fail_after(timeout or 60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, proc.stdout, out)
                if proc.stderr is not None:
                    tg.start_soon(drain, proc.stderr, err)
            status = await proc.wait()
        return ExecResult(
            status.exit_code == 0, status.exit_code, b"".join(out).decode(), b"".join(err).decode()
        )


async def test_inspects_exec_as_user_passes_with_the_opt_in(admin: DockerBackend) -> None:
    from inspect_ai.util._sandbox.self_check import test_exec_as_user

    await test_exec_as_user(_InspectView(admin))  # type: ignore[arg-type]
    out, _ = await run(admin, "getent passwd inspect-ai-test-exec-as-user; ls /home; echo done")
    assert out == "done\n", out


async def test_without_the_opt_in_root_cannot_administer(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        out, status = await run(backend, "adduser --disabled-password --comment x someone", user="root")
    assert status.exit_code != 0, out


@pytest.mark.parametrize("user", ["root", "0:0", "0"])
async def test_root_holds_exactly_chown_dac_override_fowner(admin: DockerBackend, user: str) -> None:
    out, _ = await run(admin, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status", user=user)
    assert [line.split()[1] for line in out.splitlines()] == [ADMIN_CAPS] * 5, out


@pytest.mark.parametrize("user", [None, "nobody", "4321"])
async def test_other_users_hold_nothing(admin: DockerBackend, user: str | None) -> None:
    out, _ = await run(admin, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status", user=user)
    assert [line.split()[1] for line in out.splitlines()] == ["0" * 16] * 5, out


async def test_root_cannot_gain_more_capabilities(admin: DockerBackend) -> None:
    """No ambient raise (locked), no setuid/file capability at exec (no_new_privs), no uid change."""
    script = (
        "perl -e 'for $c (5, 6, 7, 12, 19, 21) { print qq{RAISED $c\\n} if syscall(157, 47, 2, $c, 0, 0) == 0 }';"
        " perl -e 'print qq{SETUID\\n} if syscall(105, 1000) == 0';"
        " su -s /bin/sh -c id nobody 2>/dev/null && echo SU; echo done"
    )
    out, _ = await run(admin, script, user="root")
    assert out == "done\n", out


async def test_root_cannot_reach_the_executor_its_runner_or_helper(admin: DockerBackend) -> None:
    """The per-call probes of test_sandbox_escape_docker, plus the executor's I/O descriptor (fd 8)."""
    script = (
        f"EXE={admin.executor_pid}; HELPER=$PPID; read -r s </proc/$PPID/stat; set -- ${{s##*) }}; RUNNER=$2;"
        f" for N in EXE HELPER RUNNER; do eval T=\\${{$N}}; {ATTACK}"
        " ls /proc/$T/fd/8/ >/dev/null 2>&1 && echo OPEN-$N-io; (exec 3</proc/$T/fd/8/executor.sh) 2>/dev/null"
        " && echo OPEN-$N-script; for f in 0 1 8; do readlink /proc/$T/fd/$f 2>/dev/null && echo LINK-$N-$f;"
        " cat /proc/$T/fdinfo/$f 2>/dev/null && echo FDINFO-$N-$f; done; done;"
        " kill -9 -1 2>/dev/null; echo checked"
    )
    out, status = await run(admin, script, user="root")
    # DAC_OVERRIDE lists /proc/<pid>/fd (its mode): the numbers only; every link, open and fdinfo
    # needs ptrace access.
    listed = {f"OPEN-{n}-fd-dir" for n in ("EXE", "HELPER", "RUNNER")}
    assert [line for line in out.splitlines() if line not in listed] == ["checked"], out
    assert status.exit_code == 0, out
    again, _ = await run(admin, "echo alive")
    assert again == "alive\n" and admin.recoveries == []


async def test_root_finds_no_io_directory_request_file_or_fifo(admin: DockerBackend) -> None:
    """Other commands start while a root command searches the whole container for their files."""
    scanner = (
        "ls -A /.shellrt-io; [ -e /.shellrt-priv ] && echo PRIV; grep -c shellrt-io /proc/self/mountinfo;"
        " end=$(($(date +%s) + 3)); while [ $(date +%s) -lt $end ]; do"
        " find / -xdev \\( -name '*.req' -o -name '*.out' -o -name '*.err' -o -name '*.in' -o -name '*.cwd' \\)"
        " -not -path '/proc/*' 2>/dev/null;"
        " for p in /proc/[0-9]*; do grep -Eq '^Uid:.(4000|2147480001)' $p/status 2>/dev/null || continue; echo victim;"
        " ls -l $p/fd/ 2>/dev/null | grep -a -e '->'; timeout 1 cat $p/environ $p/fd/* 2>/dev/null </dev/null"
        " | tr '\\0' '\\n' | grep -a s3[c]r3t; done;"
        " done; echo scanned"
    )
    proc = await admin.exec(
        ExecRequest(argv=("sh", "-c", scanner), cwd="/", env=ENV, merge_stderr=True, user="root")
    )
    for _ in range(25):
        victim = await admin.exec(
            ExecRequest(
                argv=("sh", "-c", "read -r x; echo s3cr3t-out; sleep 0.05"),
                cwd="/",
                env={**ENV, "API_TOKEN": "s3cr3t-env"},
                stdin=True,
                user="4000",
            )
        )
        assert victim.stdin is not None
        await victim.stdin.send(b"input\n")
        await victim.stdin.aclose()
        await victim.wait()
    chunks: list[bytes] = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await proc.stdout.receive())
    await proc.wait()
    lines = b"".join(chunks).decode(errors="replace").splitlines()
    assert "victim" in lines, lines  # the scan did see the other commands' processes
    assert [line for line in lines if line != "victim"] == ["0", "scanned"], lines


async def test_root_tampering_with_the_old_mount_points_changes_nothing(admin: DockerBackend) -> None:
    """/.shellrt-io is an empty directory of the image now; /.shellrt-priv is not there."""
    out, _ = await run(
        admin,
        "chown 1:1 /.shellrt-io; chmod 777 /.shellrt-io; mv /.shellrt-io /io2 && mkdir /.shellrt-io;"
        " mkdir /.shellrt-priv; chmod 777 /.shellrt-priv; echo done",
        user="root",
    )
    assert out.endswith("done\n"), out
    for user in (None, "4000"):
        again, status = await run(admin, 'cd /tmp && pwd -P > "$SHELLRT_CWD_FILE"; echo alive', user, True)
        assert again == "alive\n" and status.cwd == "/tmp", (again, status)


@pytest.mark.parametrize("user", [None, "root", "4000"])
async def test_the_working_directory_is_reported_through_fd_6(admin: DockerBackend, user: str | None) -> None:
    out, status = await run(
        admin,
        'mkdir -p /tmp/w-$$ && cd /tmp/w-$$ && pwd -P > "$SHELLRT_CWD_FILE"; ls /proc/self/fd',
        user,
        True,
    )
    assert status.cwd is not None and status.cwd.startswith("/tmp/w-"), (out, status)
    assert out.split() == ["0", "1", "2", "3", "6"], out  # 3: ls's own directory; nothing of the executor


async def test_the_opt_in_container_is_never_recycled(admin: DockerBackend) -> None:
    reason = admin.reuse_blocker()
    assert reason is not None and "root_can_administer" in reason


def test_the_opt_in_needs_copy_mode() -> None:
    with pytest.raises(pydantic.ValidationError, match="root_can_administer needs workspace_mode 'copy'"):
        DockerConfig(root_can_administer=True, workspace_mode="bind")


async def test_a_root_session_user_administers_too(tmp_path: Path) -> None:
    """The opt-in follows the resolved uid 0, whether the call or the session asked for it."""
    require_docker()
    async with DockerBackend(
        config(DEBIAN, user="0:0", root_can_administer=True), policy(tmp_path)
    ) as backend:
        out, _ = await run(backend, "grep -E '^CapEff' /proc/self/status; touch /etc/edited && echo edited")
    assert out.split() == ["CapEff:", ADMIN_CAPS, "edited"], out
