"""Red team round 38, docker: the image's budgets on the control channel were per container, and
ending its own container (or only the session) gave the image a fresh one.

Round 37 capped what the image's ``/bin/sh`` may write to the executor's stderr (16 MiB) and as
noise on the events' stream (16 MiB), and refused a second container once a channel failed for it.
Both were the channel's, i.e. one container's: an image that writes just under the cap and then
kills its own container (no channel failure: "the container died") was replaced on the next exec
with fresh budgets, for every exec, for ever; a replacement whose start failed for the flood left
no session to refuse, so the next exec replaced again; a forged pid, exit or kill count ended the
session without a channel failure, so the next exec replaced too; and a recycled container's next
task started with fresh budgets. The budgets and the refusal are now the backend's
(`ChannelBudget`): one per session whatever the image ends, restarts or recycles.

Real containers of hostile images built from busybox (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, ExecRequest, SandboxError
from sandbox.docker import DockerBackend, _channel, _imagebudget
from tests._docker_support import config, policy, read_to_end
from tests._rt11_hostile import build_hostile

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture(autouse=True)
def _fresh_image_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no image remembered as failed: an image's budget is the process's
    since round 38, and these tests make the same images fail on purpose."""
    monkeypatch.setattr(_imagebudget, "_budgets", {})


#: The executor's shell writes 0.7 MiB of stderr at once (under the test's 1 MiB budget), then
#: kills its own container 6 s later (past its hello): a container that "died".
_FLOOD_THEN_DIE = "case $1 in *executor.sh) head -c 700000 /dev/zero >&2 & (sleep 6; kill -9 $$) & ;; esac"
#: The executor's shell writes 0.7 MiB of stderr at once, every container, and nothing more.
_FLOOD_ONCE = "case $1 in *executor.sh) head -c 700000 /dev/zero >&2 & ;; esac"
#: The executor's shell forges the pid of every command it starts (the real executor runs on).
_FORGE_PID = 'case "$l" in "S "*) set -- $l; printf "S %s 1x\\n" "$2" ;; *) printf "%s\\n" "$l" ;; esac'


async def _exec_until_refused(backend: DockerBackend, seconds: float) -> str:
    """Run `sleep 1` over and over; the first refusal that says no new container is started."""
    with anyio.move_on_after(seconds):
        while True:
            try:
                proc = await backend.exec(ExecRequest(argv=("sleep", "1"), cwd="/workspace"))
            except SandboxError as exc:
                if "no new container" in str(exc):
                    return str(exc)
                continue  # a start or an exec the flood met: the next exec says what follows
            await read_to_end(proc.stdout)
            await proc.wait()
    return ""


async def test_an_image_that_floods_then_kills_its_container_gets_no_fresh_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_channel, "MAX_STDERR_BYTES", 1 << 20)
    image = build_hostile("shellrt-test-rt38-flood-die", pre=_FLOOD_THEN_DIE)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        refusal = await _exec_until_refused(backend, 60)
        assert refusal, (
            f"60 s of commands and no refusal: {len(backend.recoveries)} containers, each with a fresh "
            f"1 MiB stderr budget the image spent 0.7 MiB of ({backend.recoveries[:2]})"
        )
        assert "stderr" in refusal, refusal
        assert len(backend.recoveries) <= 2, backend.recoveries


async def test_a_forged_pid_starts_no_second_container(tmp_path: Path) -> None:
    """A forged line ended the session without failing its channel: the next exec replaced it."""
    image = build_hostile("shellrt-test-rt38-forge-pid", filter=_FORGE_PID)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        with pytest.raises(SandboxError, match="not a pid"):
            await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
        with anyio.fail_after(30), pytest.raises(SandboxError) as caught:
            await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
        assert "no new container" in str(caught.value), caught.value
        assert backend.recoveries == [], backend.recoveries


async def test_the_budget_is_the_backends_across_channels() -> None:
    """Unit view of the same class: a second channel of one budget starts where the first ended,
    and a recycle's `drop_mail` gives no budget back."""
    import os

    first_r, first_w = os.pipe()
    budget = _channel.ChannelBudget(stderr=_channel.MAX_STDERR_BYTES - 10)
    channel = _channel.ControlChannel(first_r, budget)
    channel.drop_mail()
    assert channel.budget.stderr == _channel.MAX_STDERR_BYTES - 10
    frame = b"\x02\x00\x00\x00" + (20).to_bytes(4, "big") + b"x" * 20
    os.write(first_w, frame)
    with pytest.raises(_channel.ExecutorGoneError, match="stderr"):
        await channel.wait("H", "1", within=5)
    assert budget.failure and "stderr" in budget.failure
    os.close(first_w)


async def test_a_new_session_of_an_image_that_lied_starts_no_container(tmp_path: Path) -> None:
    """A batch's next task, a ``serve`` process's next session: a new backend of the same image
    started it again (its lines met anew, its budgets fresh). Now the start is refused before
    anything of the image runs, naming what it did."""
    image = build_hostile("shellrt-test-rt38-forge-pid", filter=_FORGE_PID)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        with pytest.raises(SandboxError, match="not a pid"):
            await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
    second = DockerBackend(config(image), policy(tmp_path))
    with anyio.fail_after(30), pytest.raises(BackendUnavailableError, match="not a pid") as caught:
        await second.start()
    assert "met earlier in this process" in str(caught.value), caught.value
    await second.close()


async def test_the_image_budget_goes_on_in_a_new_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Flooding just under the budget in each session, one session after another: the second's
    flood is counted on top of the first's."""
    monkeypatch.setattr(_channel, "MAX_STDERR_BYTES", 1 << 20)
    image = build_hostile("shellrt-test-rt38-flood-once", pre=_FLOOD_ONCE)
    failure = ""
    for _ in range(3):
        backend = DockerBackend(config(image), policy(tmp_path))
        try:
            await backend.start()
            proc = await backend.exec(ExecRequest(argv=("sleep", "2"), cwd="/workspace"))
            await read_to_end(proc.stdout)
            status = await proc.wait()
            failure = status.sandbox_failure or ""
        except SandboxError as exc:
            failure = str(exc)
        finally:
            await backend.close()
        if failure:
            break
    assert "stderr" in failure, f"three sessions each read 0.7 MiB of the image's stderr: {failure!r}"
