"""Batch container recycling on a real Docker daemon: isolation between tasks, fail-closed discards, opt-out, teardown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from shellrt.batch import Task, TaskResult, run

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


def _docker(**extra: Any) -> dict[str, Any]:
    from tests._docker_support import DEBIAN

    return {"type": "docker", "image": DEBIAN, **extra}


def _task(task_id: str, commands: list[str], **extra: Any) -> Task:
    sandbox = extra.pop("sandbox", _docker())
    return Task.model_validate({"id": task_id, "sandbox": sandbox, "commands": commands, **extra})


async def _run(tasks: list[Task], **options: Any) -> tuple[dict[str, TaskResult], Any]:
    batch = run(tasks, **options)
    results = {r.id: r async for r in batch}
    return results, batch.pool_stats


_PROCS = "for d in /proc/[0-9]*; do tr '\\0' ' ' <$d/cmdline 2>/dev/null; echo; done"


async def test_a_recycled_container_shows_nothing_of_the_previous_task(tmp_path: Path) -> None:
    from tests._docker_support import container_exists, require_docker

    require_docker()
    mine = tmp_path / "second-ws"
    mine.mkdir()
    (mine / "mine.txt").write_text("second\n")
    first = _task(
        "dirty",
        [
            "echo x >/tmp/x; echo y >/dev/shm/y; : >/dev/mqueue/q; echo z >z; mkdir -p /tmp/locked/in; chmod 000 /tmp/locked",
            # No SysV ids: since round 41 (docker4) a task that allocates any gets no successor in
            # its container (`_ipcseq`); test_redteam_round41_docker4_ipcids.py has that case.
            "true",
            # Leftovers die when their command ends (as on bwrap): this one looks while they run.
            "setsid sleep 1000 </dev/null >/dev/null 2>&1 & nohup sleep 1001 </dev/null >/dev/null 2>&1 &"
            f" sleep 0.2; {_PROCS}; wc -l </proc/sysvipc/shm; ls /tmp /workspace; [ -e /dev/mqueue/q ] && echo mq-made",
        ],
    )
    second = _task(
        "clean",
        [
            # /dev/shm (round 30) and /dev/mqueue (round 31) are 1733: no command lists them; the
            # objects are looked for by name.
            'ls -A /tmp /workspace; [ ! -e /dev/shm/y ] || echo "shm: y"; [ ! -e /dev/mqueue/q ] || echo "mq: q"',
            _PROCS,
            "cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem",
            "cat mine.txt",
        ],
        workspace=str(mine),
    )
    results, stats = await _run([first, second], concurrency=1, prestart=0)
    dirty, clean = results["dirty"], results["clean"]
    assert dirty.status == "ok", dirty
    left_behind = dirty.commands[2].preview or ""
    assert "sleep 1000" in left_behind and "sleep 1001" in left_behind  # they really were running
    assert "x\n" in left_behind and "z\n" in left_behind and "mq-made" in left_behind

    assert clean.status == "ok", clean
    assert clean.recycled and clean.container == dirty.container and clean.container_use == 2
    assert not dirty.recycled and dirty.container_use == 1
    listing = clean.commands[0].preview or ""
    assert listing == "/tmp:\n\n/workspace:\nmine.txt\n"
    assert "sleep 100" not in (clean.commands[1].preview or "")
    ipc = (clean.commands[2].preview or "").splitlines()
    assert len(ipc) == 3 and all(line.split()[0] == "key" for line in ipc)  # headers only
    assert clean.commands[3].preview == "second\n"
    assert stats.created == 1 and stats.recycled == 1 and stats.discarded == 0
    assert dirty.container is not None
    assert not container_exists(dirty.container)  # removed (and gone) when the run returns


async def test_a_task_cannot_kill_the_executor_and_its_container_is_recycled_cleanly(tmp_path: Path) -> None:
    from tests._docker_support import require_docker

    require_docker()
    # Every process but PID 1 and ourselves: kill it; signal docker-init too (it forwards).
    kill_everything = (
        "for s in TERM INT HUP; do kill -$s 1; done 2>/dev/null; kill -9 -1;"
        " for d in /proc/[0-9]*; do kill -9 ${d#/proc/}; done 2>/dev/null; true"
    )
    tasks = [_task("saboteur", [kill_everything]), _task("after", ["hostname"])]
    results, stats = await _run(tasks, concurrency=1, prestart=0)
    saboteur, after = results["saboteur"], results["after"]
    assert after.status == "ok", (saboteur, after)  # the saboteur killed itself too (kill -9 -1)
    assert after.recycled and after.container == saboteur.container and after.container_use == 2
    assert stats.discarded == 0 and stats.created == 1


async def test_a_container_that_fails_its_reset_is_discarded_and_replaced(tmp_path: Path) -> None:
    """The container is killed from outside during a task: the task says so, the reset refuses it."""
    import os
    import subprocess

    import anyio

    from tests._docker_support import owned_containers, require_docker

    require_docker()

    def ours() -> set[str]:
        return set(owned_containers(os.getpid(), running=True))

    earlier = ours()  # containers of earlier tests still being removed are not the victim's

    async def kill_our_container() -> None:
        while True:
            found = sorted(ours() - earlier)
            # Only once the victim's command runs (a kill during the start would be retried).
            top = found and subprocess.run(
                ["docker", "top", found[0]], capture_output=True, text=True, timeout=30
            )
            if top and "sleep 20" in top.stdout:
                subprocess.run(["docker", "kill", *found], capture_output=True, timeout=60)
                return
            await anyio.sleep(0.1)

    tasks = [
        _task("victim", ["sleep 20"]),
        _task("after", ["hostname"]),
        _task("again", ["hostname"]),
    ]
    async with anyio.create_task_group() as tg:
        tg.start_soon(kill_our_container)
        results, stats = await _run(tasks, concurrency=1, prestart=0)
    victim, after, again = results["victim"], results["after"], results["again"]
    assert victim.status != "ok", victim
    assert after.status == "ok" and again.status == "ok", (after, again)
    assert after.container != victim.container and after.container_use == 1 and not after.recycled
    assert again.recycled and again.container == after.container and again.container_use == 2
    assert stats.discarded == 1 and stats.created == 2


async def test_reuse_never_and_unrecyclable_sandboxes_get_a_container_per_task(tmp_path: Path) -> None:
    from tests._docker_support import container_exists, require_docker

    require_docker()
    plain = [_task(f"n{i}", ["hostname"]) for i in range(3)]
    results, stats = await _run(plain, concurrency=1, prestart=0, reuse="never")
    assert len({r.container for r in results.values()}) == 3
    assert all(r.container_use == 1 and not r.recycled for r in results.values())
    assert stats.recycled == 0
    # Per task: "reuse": "never" in the sandbox.
    per_task = [_task(f"p{i}", ["true"], sandbox=_docker(reuse="never")) for i in range(2)]
    results, _ = await _run(per_task, concurrency=1, prestart=0)
    assert len({r.container for r in results.values()}) == 2
    # A root user is never recycled, whatever the option says.
    as_root = [_task(f"r{i}", ["id -u"], sandbox=_docker(user="0:0")) for i in range(2)]
    results, stats = await _run(as_root, concurrency=1, prestart=0)
    assert all(r.commands[0].preview == "0\n" for r in results.values())
    assert len({r.container for r in results.values()}) == 2 and stats.not_reusable == 2
    assert "runs as root" in stats.reasons
    assert not any(container_exists(r.container or "-") for r in results.values())


async def test_only_identical_sandboxes_share_a_container(tmp_path: Path) -> None:
    from tests._docker_support import require_docker

    require_docker()
    tasks = [
        _task(
            f"t{i}",
            ["cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max"],
            sandbox=_docker(limits={"pids": 64 if i % 2 else 128}),
        )
        for i in range(4)
    ]
    results, stats = await _run(tasks, concurrency=1, prestart=0)
    by_container: dict[str | None, set[str]] = {}
    for r in results.values():
        assert r.status == "ok", r
        by_container.setdefault(r.container, set()).add((r.commands[0].preview or "").strip())
    assert all(len(limits) == 1 for limits in by_container.values())  # never mixed
    assert stats.recycled == 0  # capacity 1 and alternating configs: each idle one is evicted


async def test_leaving_a_recycled_run_early_removes_every_container(tmp_path: Path) -> None:
    from tests._docker_support import managed_container_ids, require_docker

    require_docker()
    before = managed_container_ids(owner_pid=os.getpid())
    tasks = [_task(f"q{i}", ["true"]) for i in range(6)] + [_task(f"s{i}", ["sleep 1000"]) for i in range(4)]
    seen: list[TaskResult] = []
    running: set[str] = set()
    async with run(tasks, concurrency=2, prestart=1) as results:
        async for result in results:
            seen.append(result)
            running |= managed_container_ids(owner_pid=os.getpid()) - before
            if sum(r.recycled for r in seen) >= 2:
                break
    assert any(r.recycled for r in seen)
    assert running, "the owner filter saw none of this run's containers: the leak check would be empty"
    assert managed_container_ids(owner_pid=os.getpid()) - before == set()
