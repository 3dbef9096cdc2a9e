"""Red team round 37, docker: the image's shell flooding the executor's stderr kept a host core busy.

The control channel's reader (round 36) bounds what the executor writes on the events' stream that
is no event (16 MiB a session) and the events nobody took (8 MiB), but the attach stream's other
half, the executor's stderr (its shell's complaints, docker-init's), was read as fast as it came
and only its last 8 KiB kept: an image whose ``/bin/sh`` writes stderr without end had the host
parse frames for as long as any waiter read the channel, i.e. every running command's life (round
36's Left). The honest executor writes (almost) nothing there: every fork and removal it makes is
``2>/dev/null``. Now stderr counts against the same budget as the events' stream's noise: past it
the session fails closed, saying so.

A real container of a hostile image built from busybox (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, ExecRequest, SandboxError
from sandbox.docker import DockerBackend, _channel, _imagebudget
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, read_to_end, require_docker, run_sh
from tests._rt11_hostile import build_hostile

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture(autouse=True)
def _fresh_image_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no image remembered as failed: an image's budget is the process's
    since round 38, and these tests make the same images fail on purpose."""
    monkeypatch.setattr(_imagebudget, "_budgets", {})

#: Only the executor's shell (its first word is the executor's script) floods, in the background,
#: 5 s after its start (the hello is out by then): commands run `sleep` directly, not this shell.
_FLOOD = "case $1 in *executor.sh) (sleep 5; yes 'no event, a complaint without end') >&2 & ;; esac"


async def test_a_stderr_flood_ends_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flood comes through the daemon at ~1-3 MB/s here (load ~8): the budget is lowered to
    1 MiB so that the test ends in seconds (the real one, 16 MiB, takes ~10 s of commands)."""
    monkeypatch.setattr(_channel, "MAX_STDERR_BYTES", 1 << 20)
    image = build_hostile("shellrt-test-rt37-stderr3", pre=_FLOOD)
    failure = ""
    backend = DockerBackend(config(image), policy(tmp_path))
    try:
        await backend.start()
    except BackendUnavailableError as exc:  # a start slower than 5 s (load) met the flood: as good
        failure = str(exc)
    else:
        try:
            with anyio.move_on_after(60):
                while not failure:
                    try:
                        proc = await backend.exec(ExecRequest(argv=("sleep", "2"), cwd="/workspace"))
                        await read_to_end(proc.stdout)
                        status = await proc.wait()
                    except SandboxError as exc:
                        failure = str(exc)
                        break
                    failure = status.sandbox_failure or ""
        finally:
            await backend.close()
    assert failure, "the host read the executor's stderr flood for 60 s and the session went on"
    assert "stderr" in failure and "plain POSIX shell" in failure, failure


@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
async def test_the_honest_executor_writes_next_to_nothing_to_stderr(tmp_path: Path, image: str) -> None:
    """What the budget must never meet: commands that fail to start, exit non-zero, or are killed,
    or leave things in their TMPDIR leave the executor's stderr (almost)
    empty."""
    require_docker()
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        session = backend._session
        assert session is not None
        for command in (
            "exit 3",
            "echo x > $TMPDIR/left; mkdir $TMPDIR/d; touch $TMPDIR/d/y",
            "kill -9 $$",
            "for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; exit 0",
        ):
            await run_sh(backend, command)
        with pytest.raises(SandboxError):
            await backend.exec(ExecRequest(argv=("true",), cwd="/nonexistent"))
        proc = await backend.exec(ExecRequest(argv=("sleep", "30"), cwd="/workspace"))
        await proc.kill()
        await proc.wait()
        await run_sh(backend, "echo end")
        assert session.channel.budget.stderr < 4096, session.channel.stderr_text


async def test_a_session_closed_for_its_image_starts_no_second_container(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the channel failed for what the image's shell wrote, the next exec got a new container
    of the same image (one `recoveries` entry each), with fresh budgets and a fresh 30 s start
    deadline: the image did it again, a session at a time for ever. Now the session refuses."""
    monkeypatch.setattr(_channel, "MAX_STDERR_BYTES", 1 << 20)
    image = build_hostile("shellrt-test-rt37-stderr3", pre=_FLOOD)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        first = backend.container_id
        with anyio.move_on_after(60):
            while backend._session is not None and backend._session.alive:
                try:
                    proc = await backend.exec(ExecRequest(argv=("sleep", "2"), cwd="/workspace"))
                except SandboxError:  # the failure met while this one started
                    break
                await read_to_end(proc.stdout)
                await proc.wait()
        assert backend._session is not None and not backend._session.alive, "no failure in 60 s"
        with anyio.fail_after(20), pytest.raises(SandboxError, match="stderr") as caught:
            await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
        assert "no new container" in str(caught.value), caught.value
        assert backend.recoveries == [] and backend.container_id == first, backend.recoveries
