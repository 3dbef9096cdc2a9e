"""Red team round 27, docker: a background task forged a later command's cwd report.

A command reports its final cwd by writing ``pwd -P`` to ``$SHELLRT_CWD_FILE`` (the shell's
``EXIT`` trap); the session then runs its next command there. Commands of a session share a uid and
the container's pid namespace, so a background task read a later command's
``/proc/<pid>/environ``, found the file (``/.shellrt-priv/<id>.cwd``, writable by that uid; under
``root_can_administer`` ``/proc/self/fd/6``, reached as ``/proc/<pid>/fd/6``) and wrote a directory
the command never entered: the report said ``/workspace/forged`` for a command that did not ``cd``
(round 26 docker "Left"). Now the value reported is read by the kernel, not the file: the command's
helper (`priv.c`, the executor's identity) traces the command's own process for its exit only
(``PTRACE_O_TRACEEXIT``) and reads ``/proc/<pid>/cwd`` there; the file only says whether the
command moved. A forged write can only make the command's real cwd be reported. FAIL, not skip,
under CI=true.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
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

#: Writes /workspace/forged into every cwd file a command published in /tmp/cwdf-TAG-* (round 27's
#: forger found them in every process's environment; since round 28 a command cannot read another
#: command's environ or fds, so the victims hand it their file: what a leak would), once each, for
#: 60 s, then marks that it tried (/tmp/forged-TAG-<step>; under root_can_administer the file is
#: /proc/<pid>/fd/6, which it can no longer open).
_FORGER = (
    'perl -e \'my %done; my $end = time + 60; while (time < $end) { for my $c (glob "/tmp/cwdf-TAG-*") { '
    'next if $done{$c}++; open(my $f, "<", $c) or next; my $l = <$f>; close $f; chomp $l; '
    "my ($pid, $p) = split / /, $l, 2; $p =~ s{^/proc/self/}{/proc/$pid/}; "
    'if (open(my $w, ">", $p)) { print $w "/workspace/forged\\n"; close $w } '
    '(my $m = $c) =~ s{cwdf-}{forged-}; open(my $d, ">", $m); close $d } '
    "select(undef, undef, undef, 0.05) }'"
)
#: Publishes its cwd file, waits (at most 20 s) until the forger has tried it; did not `cd`.
_VICTIM = (
    'echo "$$ $SHELLRT_CWD_FILE" > /tmp/cwdf-TAG-S.n && mv /tmp/cwdf-TAG-S.n /tmp/cwdf-TAG-S; '
    "i=0; while [ ! -e /tmp/forged-TAG-S ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; "
    "test -e /tmp/forged-TAG-S && echo forged-written"
)
#: The same, then a real `cd` (through bash's own trap): its report still comes.
_MOVER = (
    "trap 'pwd -P > \"$SHELLRT_CWD_FILE\"' EXIT; "
    + _VICTIM.replace("-S", "-m")
    + "; mkdir -p /tmp/mv-TAG && cd /tmp/mv-TAG"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt27cwf"):
        yield b


async def _report(backend: DockerBackend, argv: tuple[str, ...], user: str | None) -> tuple[str, str | None]:
    request = ExecRequest(
        argv=argv,
        cwd="/workspace",
        env={"PATH": "/usr/bin:/bin"},
        report_cwd=True,
        user=user,
        merge_stderr=True,
    )
    proc = await backend.exec(request)
    out = await read_to_end(proc.stdout)
    status = await proc.wait()
    return out.decode(errors="replace"), status.cwd


async def _attack(backend: DockerBackend, user: str | None) -> None:
    with anyio.fail_after(150):
        tag = secrets.token_hex(4)
        assert await run_sh(backend, "mkdir -p forged && echo ok") == (
            0,
            "ok\n",
        )  # as the session's user
        forger = await start_sh(backend, _FORGER.replace("TAG", tag), user=user)
        try:
            out, cwd = await _report(
                backend, ("sh", "-c", _VICTIM.replace("TAG", tag).replace("-S", "-v")), user
            )
            assert out == "forged-written\n", out
            # Before: "/workspace/forged", a directory the command never entered.
            assert cwd in (None, "/workspace"), cwd
            out, cwd = await _report(backend, ("bash", "-c", _MOVER.replace("TAG", tag)), user)
            assert out == "forged-written\n" and cwd == f"/tmp/mv-{tag}", (out, cwd)
        finally:
            await forger.kill()


@pytest.mark.parametrize("user", [None, "root"])
async def test_a_background_task_cannot_forge_the_cwd_report(
    backend: DockerBackend, user: str | None
) -> None:
    await _attack(backend, user)


async def test_nor_under_root_can_administer(tmp_path: Path) -> None:
    """Root commands there write their report through fd 6 (``/proc/<pid>/fd/6`` from outside)."""
    require_docker()
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(tmp_path)) as b:
        await _attack(b, "root")


async def test_a_cwd_that_is_not_utf8_is_not_reported_as_another(backend: DockerBackend) -> None:
    """The channel decodes event lines as UTF-8 with replacement: a command's real cwd ``/tmp/\\xff``
    came out as ``/tmp/\\ufffd``, another directory (which a command may also make: the next command
    would start there). Not reported now (the session keeps its cwd)."""
    mover = 'trap \'pwd -P > "$SHELLRT_CWD_FILE"\' EXIT; d=$(printf \'/tmp/\\377\'); mkdir -p "$d" /tmp/\ufffd && cd "$d"'
    with anyio.fail_after(60):
        out, cwd = await _report(backend, ("bash", "-c", mover), None)
    assert out == "" and cwd is None, (out, cwd)


async def test_a_traced_command_is_killed_at_once(backend: DockerBackend) -> None:
    """The helper traces the command for its exit; killed, it stops there too until the helper looks.
    The helper's sweep waited for it meanwhile (5 s, the container then replaced); and job control
    and signals still reach the command as untraced."""
    request = ExecRequest(
        argv=("bash", "-c", "for i in $(seq 50); do sleep 100 & done; echo up; wait"),
        cwd="/workspace",
        env={"PATH": "/usr/bin:/bin"},
        report_cwd=True,
    )
    with anyio.fail_after(60):
        proc = await backend.exec(request)
        assert await proc.stdout.receive() == b"up\n"
        recoveries = list(backend.recoveries)
        started = time.monotonic()
        await proc.kill()
        status = await proc.wait()
        took = time.monotonic() - started
        # Before: the sweep waited 5 s, then the container was replaced (a recovery). Round 49: the
        # replacement is checked as a fact, and the wall-clock bound is 8 s, not 4 s (a loaded lane).
        assert backend.recoveries == recoveries, backend.recoveries
        assert status.signal == 9 and status.sandbox_failure is None and took < 8, (status, took)
        # Resumed by its own child: since round 28 another command may not signal it.
        stop_self = (
            "trap 'echo usr1' USR1; (while :; do case $(cut -d' ' -f3 /proc/$$/stat) in "
            "T|t) kill -CONT $$; exit;; esac; sleep 0.1; done) & kill -STOP $$; kill -USR1 $$; wait; exit 7"
        )
        proc = await backend.exec(
            ExecRequest(argv=("bash", "-c", stop_self), cwd="/workspace", report_cwd=True)
        )
        assert await read_to_end(proc.stdout) == b"usr1\n"
        assert (await proc.wait()).exit_code == 7
