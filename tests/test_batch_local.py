"""The local runner on real processes: 200 mixed tasks, collection, tool_use tasks, teardown."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import anyio
import pytest

from shellrt.batch import Task, TaskResult, default_concurrency, run, run_sync

pytestmark = pytest.mark.anyio


def _kind(i: int) -> str:
    return ("pass", "fail", "timeout", "heavy")[i % 4]


def _task(i: int) -> Task:
    kind = _kind(i)
    commands: list[object] = [f"echo task-{i}"]
    if kind == "fail":
        commands.append("echo oops >&2; exit 3")
    elif kind == "timeout":
        commands.append({"run": "sleep 30", "timeout": 0.5})
    elif kind == "heavy":
        commands.append("seq 1 200000")  # ~1.3 MB of output
    return Task.model_validate(
        {"id": f"t{i:03d}", "commands": commands, "collect": {"preview_bytes": 400}, "env": {"N": str(i)}}
    )


@pytest.mark.slow  # 10-25 s in CI: handed out first (tests/conftest.py)
async def test_200_mixed_tasks_give_200_correct_results(tmp_path: Path) -> None:
    results: list[TaskResult] = []
    async with run([_task(i) for i in range(200)], concurrency=8, out=tmp_path / "r.jsonl") as stream:
        async for result in stream:
            results.append(result)
    assert len(results) == 200
    assert sorted(r.id for r in results) == [f"t{i:03d}" for i in range(200)]
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 200
    expected = {"pass": "ok", "fail": "failed", "timeout": "timeout", "heavy": "ok"}
    for r in results:
        i = int(r.id[1:])
        kind = _kind(i)
        assert r.status == expected[kind], r
        assert r.commands[0].preview == f"task-{i}\n"
        assert r.node.startswith("local:") and r.hostname
        assert r.duration_s > 0
        second = r.commands[1] if len(r.commands) > 1 else None
        if kind == "fail":
            assert second is not None and second.exit_code == 3 and second.stderr == "oops\n"
            assert second.preview == "" and second.stderr_bytes == 5 and second.stdout_bytes == 0
        elif kind == "timeout":
            assert second is not None and second.timed_out and second.duration_s < 15
        elif kind == "heavy":
            assert second is not None and second.exit_code == 0
            assert second.total_bytes == len("".join(f"{n}\n" for n in range(1, 200001)))
            assert second.truncated and len(second.preview or "") < 2_000
            assert second.output_path is None  # preview only: the spool went with the sandbox
    assert Counter(r.status for r in results) == {"ok": 100, "failed": 50, "timeout": 50}


async def test_each_task_gets_a_fresh_private_workspace(tmp_path: Path) -> None:
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "input.txt").write_text("seed\n")
    tasks = [
        Task.model_validate(
            {
                "id": f"w{i}",
                "workspace": str(fixture),
                "commands": [f"cat input.txt; ls; echo {i} > mine.txt; pwd"],
            }
        )
        for i in range(6)
    ]
    results = [r async for r in run(tasks, concurrency=3)]
    workspaces = set()
    for r in results:
        assert r.status == "ok", r
        text = r.commands[0].preview or ""
        assert text.startswith("seed\ninput.txt\n")  # no other task's mine.txt
        workspaces.add(text.splitlines()[-1])
        assert not Path(text.splitlines()[-1]).exists()  # removed at teardown
    assert len(workspaces) == 6
    assert (fixture / "input.txt").read_text() == "seed\n" and sorted(os.listdir(fixture)) == ["input.txt"]


async def test_full_output_and_exported_files(tmp_path: Path) -> None:
    task = Task.model_validate(
        {
            "id": "art",
            "commands": [
                "seq 1 50000",
                "mkdir -p out/sub && echo r > out/report.txt && echo s > out/sub/x.log",
            ],
            "collect": {"output": "full", "files": ["out/*.txt", "out/sub"], "preview_bytes": 100},
        }
    )
    [result] = [r async for r in run([task], artifacts_dir=tmp_path / "art")]
    assert result.status == "ok", result
    full = Path(result.commands[0].output_path or "")
    assert full.read_text() == "".join(f"{n}\n" for n in range(1, 50001))
    assert result.files == ["out/report.txt", "out/sub/x.log"]
    assert result.artifacts_dir == str(tmp_path / "art" / "art")
    assert (tmp_path / "art" / "art" / "files" / "out" / "report.txt").read_text() == "r\n"


async def test_setup_error_and_stop_on_failure(tmp_path: Path) -> None:
    tasks = [
        Task.model_validate({"id": "nows", "workspace": str(tmp_path / "missing"), "commands": ["true"]}),
        Task.model_validate({"id": "stop", "stop_on_failure": True, "commands": ["false", "echo never"]}),
    ]
    results = {r.id: r async for r in run(tasks)}
    assert results["nows"].status == "error" and "missing" in (results["nows"].error or "")
    assert results["stop"].status == "failed" and len(results["stop"].commands) == 1


async def test_tool_use_task_runs_through_the_runtime(tmp_path: Path) -> None:
    task = Task.model_validate(
        {
            "id": "tools",
            "commands": [
                {
                    "type": "tool_use",
                    "id": "tu1",
                    "name": "Bash",
                    "input": {"command": "echo from-bash > f.txt; cat f.txt"},
                },
                {"type": "tool_use", "id": "tu2", "name": "NoSuchTool", "input": {}},
            ],
        }
    )
    [result] = [r async for r in run([task])]
    assert result.commands[0].command == "Bash:tu1"
    assert "from-bash" in (result.commands[0].preview or ""), result
    assert not result.commands[0].is_error
    assert result.commands[1].is_error
    assert result.status == "failed"


async def test_leaving_early_tears_everything_down(tmp_path: Path) -> None:
    marker = f"early-{os.getpid()}-{id(tmp_path)}"
    tasks = [Task.model_validate({"id": "quick", "commands": ["true"]})] + [
        Task.model_validate({"id": f"slow{i}", "commands": [f"sleep 300 # {marker}"], "env": {"M": marker}})
        for i in range(4)
    ]
    from tests._batch_helpers import processes_with_marker

    async with run(tasks, concurrency=5) as stream:
        async for result in stream:
            assert result.id == "quick"
            with anyio.fail_after(10):
                while len(processes_with_marker(marker)) < 4:
                    await anyio.sleep(0.05)
            break
    assert processes_with_marker(marker) == []


def test_run_sync_and_default_concurrency(tmp_path: Path) -> None:
    seen: list[str] = []
    results = run_sync(
        [Task.model_validate({"id": f"s{i}", "commands": ["true"]}) for i in range(5)],
        on_result=lambda r: seen.append(r.id),
        concurrency=2,
    )
    assert sorted(seen) == sorted(r.id for r in results) == [f"s{i}" for i in range(5)]
    assert default_concurrency("local", cpus=2) == 4
    assert default_concurrency("docker", cpus=64) == 16
    assert default_concurrency("local", cpus=1) == 2


async def test_memory_stays_bounded_with_a_lazy_source() -> None:
    pulled = 0

    def source():  # type: ignore[no-untyped-def]
        nonlocal pulled
        for i in range(50):
            pulled += 1
            yield Task.model_validate({"id": f"lazy{i}", "commands": ["sleep 0.2"]})

    async with run(source(), concurrency=2, prestart=1) as stream:
        first = await stream.__anext__()
        assert first.id.startswith("lazy")
        assert pulled <= 2 + 1 + 2  # window + the one being handed over, not the whole source
        async for _ in stream:
            pass
    assert pulled == 50
    await anyio.sleep(0)


@pytest.mark.docker
async def test_docker_tasks_get_fresh_containers_and_export_files(tmp_path: Path) -> None:
    from tests._docker_support import DEBIAN, container_exists, require_docker

    require_docker()
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "in.txt").write_text("seed\n")
    tasks = [
        Task.model_validate(
            {
                "id": f"dk{i}",
                "sandbox": {"type": "docker", "image": DEBIAN, "limits": {"pids": 64}, "reuse": "never"},
                "workspace": str(fixture),
                "commands": ["cat in.txt; ls; hostname", f"echo {i} > out.txt"],
                "collect": {"files": ["out.txt"]},
            }
        )
        for i in range(3)
    ]
    results = [r async for r in run(tasks, concurrency=2, artifacts_dir=tmp_path / "art")]
    hostnames = set()
    for r in results:
        assert r.status == "ok", r
        lines = (r.commands[0].preview or "").splitlines()
        assert lines[:2] == ["seed", "in.txt"]  # fresh copy: no other task's out.txt
        hostnames.add(lines[2])
        i = r.id[2:]
        assert (tmp_path / "art" / r.id / "files" / "out.txt").read_text() == f"{i}\n"
    assert len(hostnames) == 3  # three distinct containers
    assert all(r.container_use == 1 and not r.recycled and r.container for r in results)
    assert not any(container_exists(h) for h in hostnames)  # each removed after its task
    assert sorted(p.name for p in fixture.iterdir()) == ["in.txt"]


async def test_finished_task_hands_its_slot_on_before_teardown(tmp_path: Path) -> None:
    """A slow teardown does not hold the window: the next task starts while the previous sandbox is removed,
    and the run still ends only after every teardown finished."""
    from shellrt.batch import worker

    closing: list[str] = []
    closed: list[str] = []
    started_while_closing: list[str] = []
    original_close = worker.TaskRun.close
    original_prepare = worker.TaskRun.prepare

    async def slow_close(self: worker.TaskRun) -> None:
        closing.append(self.task.id)
        await anyio.sleep(0.5)
        await original_close(self)
        closed.append(self.task.id)

    async def watching_prepare(self: worker.TaskRun) -> None:
        if len(closing) > len(closed):
            started_while_closing.append(self.task.id)
        await original_prepare(self)

    tasks = [Task.model_validate({"id": f"t{i}", "commands": ["true"]}) for i in range(3)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(worker.TaskRun, "close", slow_close)
        mp.setattr(worker.TaskRun, "prepare", watching_prepare)
        results = [r async for r in run(tasks, concurrency=1, prestart=0, artifacts_dir=tmp_path / "a")]
    assert sorted(r.id for r in results) == ["t0", "t1", "t2"]
    assert all(r.status == "ok" for r in results)
    assert started_while_closing == ["t1", "t2"]
    assert sorted(closed) == ["t0", "t1", "t2"]  # every teardown finished before the run ended
