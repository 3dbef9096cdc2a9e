"""Attacks on the docker backend's trusted channel, from inside the container; each must fail.

The executor's control channel, its process and the host's reset verdict are
out of the commands' reach (docs/security.md, "The docker backend"): a command cannot forge a
completion record (its own or another's), escape its timeout by faking one,
open, trace or signal the executor, nor answer a reset in the executor's
place. Every probe runs for a non-root command user and for commands run as
root inside the container.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.base import ExitStatus
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, read_to_end, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}

#: Every way a command might reach the executor's channel: the old control FIFOs, the
#: executor's and docker-init's fds (its stdin/stdout are the attach stream).
FORGE = r"""
forge() {
  for t in /.shellrt-io/ctl.out /.shellrt-io/ctl.in /proc/$EXE/fd/0 /proc/$EXE/fd/1 /proc/1/fd/0 /proc/1/fd/1; do
    { printf '%s\n' "$1" >"$t"; } 2>/dev/null && echo "REACHED $t"
  done
  return 0
}
"""


async def _run(backend: DockerBackend, script: str) -> tuple[str, ExitStatus]:
    proc = await backend.exec(
        ExecRequest(
            argv=("sh", "-c", f"EXE={backend.executor_pid}\n{FORGE}\n{script}"),
            cwd="/workspace",
            env=ENV,
            merge_stderr=True,
        )
    )
    out = await read_to_end(proc.stdout)
    return out.decode("utf-8", "replace"), await proc.wait()


@pytest.fixture(params=["65534:65534", "0:0"], ids=["nobody", "root"])
def user(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_forged_completion_records_are_not_believed(tmp_path: Path, user: str) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX, user=user), policy(tmp_path)) as backend:
        records = " ".join(f"'X {n} 0 0'" for n in range(1, 20))
        out, status = await _run(backend, f'for r in {records}; do forge "$r"; done; exit 7')
        assert "REACHED" not in out
        assert status.exit_code == 7 and status.sandbox_failure is None


async def test_faking_completion_does_not_escape_the_timeout(tmp_path: Path, user: str) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX, user=user), policy(tmp_path)) as backend:
        records = " ".join(f"'X {n} 0 0' 'K {n} 0'" for n in range(1, 20))
        proc = await backend.exec(
            ExecRequest(
                argv=(
                    "sh",
                    "-c",
                    f'EXE={backend.executor_pid}\n{FORGE}\nfor r in {records}; do forge "$r"; done; sleep 30',
                ),
                cwd="/workspace",
                env=ENV,
            )
        )
        with anyio.move_on_after(3) as scope:
            await proc.wait()
        assert scope.cancelled_caught, "the command's exit was reported before it ended"
        await proc.kill()
        status = await proc.wait()
        assert status.exit_code == 137 and status.signal == 9


async def test_a_command_cannot_end_or_forge_another(tmp_path: Path, user: str) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX, user=user), policy(tmp_path)) as backend:
        victim = await backend.exec(
            ExecRequest(argv=("sh", "-c", "sleep 2; exit 5"), cwd="/workspace", env=ENV)
        )
        records = " ".join(f"'X {n} 0 0' 'K {n} 0'" for n in range(1, 20))
        out, _ = await _run(backend, f'for r in {records}; do forge "$r"; done')
        assert "REACHED" not in out
        with anyio.fail_after(30):
            status = await victim.wait()
        assert status.exit_code == 5


async def test_the_executor_process_is_closed_to_commands(tmp_path: Path, user: str) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN, user=user), policy(tmp_path)) as backend:
        probe = (
            "for f in mem environ fd/0 fd/1 maps; do"
            " (exec 3</proc/$EXE/$f) 2>/dev/null && echo OPEN $f;"
            " done;"
            " (exec 3<>/proc/$EXE/mem) 2>/dev/null && echo OPEN mem-rw;"
            " ls /proc/$EXE/fd >/dev/null 2>&1 && echo OPEN fd-dir;"
            " ls /.shellrt-io >/dev/null 2>&1 && echo OPEN io-dir;"
            " cat /.shellrt-io/executor.sh >/dev/null 2>&1 && echo OPEN script;"
            " ls /.shellrt-priv >/dev/null 2>&1 && echo OPEN priv-list;"
            " mv /.shellrt-priv /tmp/p 2>/dev/null && echo MOVED priv;"
            " chmod 777 /.shellrt-priv 2>/dev/null && echo CHMOD priv;"
            " grep -h Cap /proc/self/status | grep -v 0000000000000000;"
            " echo checked"
        )
        out, status = await _run(backend, probe)
        assert out == "checked\n", out
        assert status.exit_code == 0


async def test_signals_do_not_reach_the_executor(tmp_path: Path, user: str) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX, user=user), policy(tmp_path)) as backend:
        pid = backend.executor_pid
        out, status = await _run(
            backend,
            "kill -9 $EXE 2>/dev/null && echo KILLED; kill -STOP $EXE 2>/dev/null && echo STOPPED;"
            " for s in TERM INT HUP USR1 QUIT XCPU XFSZ PWR PROF VTALRM 34 40 64; do kill -$s 1 2>/dev/null; done;"
            " kill -9 -1; echo survived",
        )
        assert "KILLED" not in out and "STOPPED" not in out
        await anyio.sleep(0.3)
        again, status = await _run(backend, "echo alive")
        assert again == "alive\n" and status.exit_code == 0
        # The executor ignores every signal; its commands start with the defaults.
        assert (
            await backend.run_capture(["grep", "SigIgn", "/proc/self/status"])
            == "SigIgn:\t0000000000000000\n"
        )
        assert backend.executor_pid == pid and backend.recoveries == []


async def test_a_detached_process_cannot_answer_the_reset_nor_keep_a_secret(tmp_path: Path) -> None:
    """Task A leaves a daemon that forges reset replies and a SysV segment; task B sees neither."""
    require_docker()
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    async with DockerBackend(config(DEBIAN), policy(first)) as backend:
        await backend.protect_executor()
        # The daemon stops the executor, steals the host's reset request from any channel it
        # can read, answers "clean" in the executor's place, lets it go on and exits, so no
        # process of it is left to see.
        daemon = (
            "kill -STOP $EXE; while :; do for src in /.shellrt-io/ctl.in /proc/$EXE/fd/0; do"
            " if read -r op id rest <$src; then [ $op = Z ] && for dst in /.shellrt-io/ctl.out /proc/$EXE/fd/1;"
            ' do printf "Z %s 1 0 1 0 0 0\\n" $id >$dst; done && kill -CONT $EXE && exit 0; fi;'
            " done 2>/dev/null; sleep 0.02; done"
        )
        out, _ = await _run(
            backend,
            # The secret: a file in /dev/shm (round 41: a task that allocates SysV ids, the secret
            # this test kept before, gets no successor at all; test_redteam_round41_docker4_ipcids.py).
            "echo s >/dev/shm/secret;"
            f" (EXE=$EXE setsid sh -c '{daemon}' </dev/null >/dev/null 2>&1 &);"
            " cat /dev/shm/secret",
        )
        assert out.strip() == "s"  # the secret is there
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(second))
        after, _ = await _run(
            backend,
            "[ -e /dev/shm/secret ] && echo kept || echo gone; cat /proc/[0-9]*/cmdline | grep -c 'while [:]'",
        )
        assert after.split() == ["gone", "0"], after  # the secret and the daemon are gone


async def test_reset_discards_when_the_secret_cannot_be_removed(tmp_path: Path) -> None:
    """The host's verdict: a reset whose outside checks fail raises, and the container is not reused."""
    from sandbox.docker import ResetError

    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        await backend.protect_executor()
        await _run(backend, "ipcmk -M 4096 >/dev/null")
        # Someone outside kills the container between tasks: nothing can be verified.
        assert backend.container_id is not None
        await anyio.run_process(["docker", "kill", backend.container_id], check=False)
        with anyio.fail_after(30), pytest.raises(ResetError):
            await backend.reset()


@pytest.mark.parametrize("mode", ["bind", "copy"])
async def test_a_command_cannot_plant_a_setid_program_on_the_host(
    tmp_path: Path, user: str, mode: str
) -> None:
    """Container root's files in a bind-mounted workspace are host root's: a set-id bit there would
    be a set-id-root program on the host. The executor's helper loads the set-id seccomp filter."""
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o777)  # bind mode: the host directory is the workspace, writable by any command user
    (ws / "tool").write_text("#!/bin/sh\n")
    (ws / "tool").chmod(0o666)
    async with DockerBackend(config(BUSYBOX, user=user, workspace_mode=mode), policy(ws)) as backend:
        out, status = await _run(
            backend,
            "cp tool suid; chmod 4755 suid && echo SET-UID; chmod 2755 tool && echo SET-GID; "
            "chmod 755 suid && echo PLAIN-OK; mkdir d && echo MKDIR-OK",
        )
        exported = ws
        if mode == "copy":
            exported = tmp_path / "out"
            await backend.export_workspace(exported)
    assert "SET-UID" not in out and "SET-GID" not in out, out
    assert "PLAIN-OK" in out and "MKDIR-OK" in out, out
    for entry in exported.rglob("*"):
        assert not entry.lstat().st_mode & 0o6000, f"{entry} is {oct(entry.lstat().st_mode)}"


#: What a command tries against a process of shellrt's (`$T`): signals, its /proc files, its fds,
#: and a real PTRACE_ATTACH (perl's syscall: 101 = ptrace, 16 = PTRACE_ATTACH on x86-64).
ATTACK = (
    "kill -9 $T 2>/dev/null && echo KILLED-$N; kill -STOP $T 2>/dev/null && echo STOPPED-$N;"
    " for f in mem environ fd/0 fd/1 fd/2 maps; do (exec 3</proc/$T/$f) 2>/dev/null && echo OPEN-$N-$f; done;"
    " (exec 3<>/proc/$T/mem) 2>/dev/null && echo OPEN-$N-mem-rw;"
    " ls /proc/$T/fd >/dev/null 2>&1 && echo OPEN-$N-fd-dir;"
    " perl -e 'exit(syscall(101, 16, $ARGV[0] + 0, 0, 0) == 0 ? 0 : 1)' $T && echo TRACED-$N;"
)


@pytest.mark.parametrize("call_user", ["root", "0:0", "nobody", "4321"])
async def test_a_per_call_user_cannot_reach_the_executor_nor_its_helpers(
    tmp_path: Path, call_user: str
) -> None:
    """Per-call users (root included) against the executor, the runner that started them and the
    helper that supervises them (their parent, which keeps the executor's identity)."""
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        script = (
            f"EXE={backend.executor_pid}; HELPER=$PPID; read -r s </proc/$PPID/stat; set -- ${{s##*) }}; RUNNER=$2;"
            " [ $RUNNER != $EXE ] || echo SAME;"
            f" for N in EXE HELPER RUNNER; do eval T=\\${{$N}}; {ATTACK} done;"
            " kill -9 -1 2>/dev/null; echo checked"
        )
        proc = await backend.exec(
            ExecRequest(
                argv=("sh", "-c", script), cwd="/workspace", env=ENV, merge_stderr=True, user=call_user
            )
        )
        out = await read_to_end(proc.stdout)
        status = await proc.wait()
        assert out.decode() == "checked\n" and status.exit_code == 0, out
        again, status = await _run(backend, "echo alive")
        assert again == "alive\n" and backend.recoveries == []


async def test_a_command_cannot_read_another_commands_environment(tmp_path: Path) -> None:
    """The helper that supervises a command lives as long as it: its command line must not carry the
    command's environment (cmdline, unlike environ, is readable by every process)."""
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        victim = await backend.exec(
            ExecRequest(argv=("sleep", "20"), cwd="/", env={**ENV, "API_TOKEN": "s3cr3t-value"}, user="4000")
        )
        await anyio.sleep(0.3)
        proc = await backend.exec(
            ExecRequest(
                argv=(
                    "sh",
                    "-c",
                    "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'",
                ),
                cwd="/",
                env=ENV,
                user="root",
            )
        )
        seen = await read_to_end(proc.stdout)
        await proc.wait()
        assert b"sleep" in seen and b"s3cr3t" not in seen
        await victim.kill()


async def test_a_command_never_sees_another_commands_environment_while_it_starts(tmp_path: Path) -> None:
    """The environment reaches the helper in its own environment (closed to other identities),
    never on a command line, not even for the instant before the command runs."""
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        scanner = await backend.exec(
            ExecRequest(
                argv=(
                    "sh",
                    "-c",
                    "end=$(($(date +%s) + 4)); while [ $(date +%s) -lt $end ]; do"
                    " cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 's3[c]r3t';"
                    " done | sort -u",
                ),
                cwd="/",
                env=ENV,
                user="root",
            )
        )
        for _ in range(40):
            proc = await backend.exec(
                ExecRequest(argv=("true",), cwd="/", env={**ENV, "API_TOKEN": "s3cr3t-value"}, user="4000")
            )
            await proc.wait()
        seen = await read_to_end(scanner.stdout)
        await scanner.wait()
        assert seen == b"0\n", seen
