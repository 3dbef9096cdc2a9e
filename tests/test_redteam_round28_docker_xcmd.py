"""Red team round 28, docker: one command's processes reached another command's of the same uid.

Commands of a session share a uid and the container's pid namespace, so a background task (a
command still running) opened a later command's ``/proc/<pid>/mem`` read-write (its code and
stack: it could make it do anything), read its ``environ``, followed its ``cwd``, ``root`` and
``fd/1`` links and signalled it (round 27 docker "Left"). Now every command runs in a Landlock
domain of its own (``priv.c``, scoped for signals): the kernel refuses ptrace access (which every
one of those ``/proc`` entries and ``pidfd_getfd``/``process_vm_*`` check) and signals from a
process of one domain to any process outside it, while a command keeps all of that over its own
children. The calls the kernel allows on a matching uid alone (no ptrace check, no Landlock hook)
set another command's ``RLIMIT_NOFILE``, CPU affinity, ``SCHED_IDLE`` and idle I/O class by pid: a
third filter refuses them for any pid but the caller's own (0). Leased uid, per-call root and root
under ``root_can_administer``. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import (
    DEBIAN,
    config,
    policy,
    read_to_end,
    require_docker,
    run_sh,
    shared_backend,
    start_sh,
)

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Every way of reaching process $p that was open to the same uid; prints what worked.
_REACH = (
    "my $p = shift; my @got; "
    'push @got, "mem" if open(my $m, "+<", "/proc/$p/mem"); '
    'push @got, "environ" if open(my $e, "<", "/proc/$p/environ"); '
    'push @got, "cwd" if defined readlink("/proc/$p/cwd"); '
    'push @got, "root" if defined readlink("/proc/$p/root"); '
    'push @got, "fd" if defined readlink("/proc/$p/fd/1"); '
    'push @got, "signal" if kill(0, $p); '
    'push @got, "cont" if kill("CONT", $p); '
    # Not ptrace-checked: the kernel compares uids alone (x86_64 numbers; the test host's).
    'my ($l, $c, $s) = (pack("QQ", 64, 64), pack("Q", 1), pack("i", 0)); '
    'push @got, "prlimit" if syscall(302, $p, 7, $l, 0) == 0; '
    'push @got, "affinity" if syscall(203, $p, 8, $c) == 0; '
    'push @got, "sched" if syscall(144, $p, 5, $s) == 0; '
    'push @got, "ioprio" if syscall(251, 1, $p, 3 << 13) == 0; '
    'print join(",", @got) || "none", "\\n";'
)
#: Started first: waits (at most 30 s) for the later command's pid, then tries to reach it, and
#: its own child too (still allowed).
_ATTACKER = (
    "i=0; while [ ! -s /tmp/v-TAG ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
    "perl -e 'REACH' \"$(cat /tmp/v-TAG)\"; sleep 30 & perl -e 'REACH' $!; kill $!"
)
#: The later command: publishes its pid, then sleeps as that pid.
_VICTIM = "echo $$ > /tmp/v-TAG.n && mv /tmp/v-TAG.n /tmp/v-TAG && exec sleep 60"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt28xcmd"):
        yield b


async def _attack(backend: DockerBackend, user: str | None) -> None:
    tag = secrets.token_hex(4)
    reach = _REACH.replace("'", "'\\''")
    with anyio.fail_after(120):
        attacker = await start_sh(backend, _ATTACKER.replace("REACH", reach).replace("TAG", tag), user=user)
        victim = await start_sh(backend, _VICTIM.replace("TAG", tag), user=user)
        try:
            out = (await read_to_end(attacker.stdout)).decode(errors="replace")
            await attacker.wait()
        finally:
            await victim.kill()
            await victim.wait()
    # Before: "mem,environ,cwd,root,fd,signal,cont,prlimit,affinity,sched,ioprio" for the other command.
    other, own = out.splitlines()[:2]
    assert other == "none", out
    assert own.startswith("mem,environ,cwd,root,fd,signal,cont"), out


@pytest.mark.parametrize("user", [None, "root"])
async def test_a_command_cannot_reach_another_commands_processes(
    backend: DockerBackend, user: str | None
) -> None:
    await _attack(backend, user)


async def test_nor_under_root_can_administer(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(tmp_path)) as b:
        await _attack(b, "root")


async def test_a_command_still_signals_its_own(backend: DockerBackend) -> None:
    """Job control inside one command is unchanged: it stops, resumes and kills its children; and
    it still sets its own affinity, I/O class and limits (pid 0) and moves files between
    directories."""
    script = (
        "taskset -c 0 true && ionice -c3 true && prlimit --nofile=100:100 true && (ulimit -n 50) && echo own-limits; "
        # The domain handles REFER (granted everywhere): renames and links across directories as before.
        "mkdir -p a b /tmp/c && echo x > a/f && mv a/f b/f && ln b/f a/g && mv b/f /tmp/c/f && "
        "mv /tmp/c/f /tmp/f && mv a b/a && echo moved; "
        "sleep 30 & p=$!; kill -STOP $p && kill -CONT $p && kill $p; wait $p; echo $?"
    )
    with anyio.fail_after(60):
        rc, out = await run_sh(backend, script)
    assert rc == 0 and out.startswith("own-limits\nmoved\n") and out.endswith("143\n"), out
