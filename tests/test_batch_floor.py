"""The operator's floor under a task file they did not write: each refusal, via the CLI and the API.

Before, the task file alone chose each task's backend (``local``: no isolation), trust in its
workspace's settings (hooks on the host), backend keys that move the boundary (``sandbox_uid``
of a real user, ``bwrap_path``, ``docker_host``, ``user``) and its limits (none: the host's).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox import ResourceLimits
from shellrt.batch import Task, TaskFloor, TaskRefused, run_sync
from tests._batch_helpers import run_cli


def _cli(
    tmp_path: Path, lines: list[dict[str, object]], *flags: str
) -> tuple[int, str, dict[str, dict[str, object]]]:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines))
    out = tmp_path / "results.jsonl"
    proc = run_cli(
        "run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q", *flags, timeout=120
    )
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    return proc.returncode, proc.stderr, results


def test_cli_sandbox_forces_the_backend_and_refuses_another(tmp_path: Path) -> None:
    lines: list[dict[str, object]] = [
        {"id": "plain", "commands": ["true"]},
        {"id": "local", "sandbox": "local", "commands": ["true"]},
    ]
    code, err, results = _cli(tmp_path, lines, "--sandbox", "bwrap")
    assert code == 1, err
    assert results["plain"]["backend"] == "bwrap" and results["plain"]["status"] == "ok"
    assert "local" not in results
    assert "task local: asks for sandbox 'local' but the operator forces 'bwrap'" in err


def test_cli_no_task_trust_refuses_trust_workspace(tmp_path: Path) -> None:
    lines: list[dict[str, object]] = [
        {"id": "trusting", "trust_workspace": True, "commands": ["true"]},
        {"id": "fine", "commands": ["true"]},
    ]
    for flags in ((), ("--no-task-trust",)):  # the default since round 8; the flag is still accepted
        code, err, results = _cli(tmp_path, lines, *flags)
        assert code == 1 and set(results) == {"fine"}, err
        assert "task trusting: trust_workspace is refused" in err and "--allow-task-trust" in err
        (tmp_path / "results.jsonl").unlink()
    code, err, _ = _cli(tmp_path, lines, "--no-task-trust", "--trust-workspace")
    assert code == 2 and "contradict" in err


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ({"sandbox": {"type": "bwrap", "sandbox_uid": 1000}}, "sandbox_uid"),
        ({"sandbox": {"type": "bwrap", "bwrap_path": "/tmp/evil-bwrap"}}, "bwrap_path"),
        ({"sandbox": {"type": "docker", "docker_host": "tcp://10.0.0.1:2375"}}, "docker_host"),
        ({"sandbox": {"type": "docker", "user": "0"}}, "user"),
        ({"sandbox": {"type": "docker", "root_can_administer": True}}, "root_can_administer"),
        ({"sandbox": {"type": "bwrap", "default_pids": None}}, "default_pids"),
        ({"sandbox": {"type": "bwrap", "default_tmp_bytes": None}}, "default_tmp_bytes"),
        ({"user": "root"}, "user (task or command)"),
        ({"commands": [{"run": "id", "user": "0"}]}, "user (task or command)"),
    ],
)
def test_cli_refuses_widening_backend_keys_by_default(
    tmp_path: Path, line: dict[str, object], named: str
) -> None:
    task = {"id": "wide", "commands": ["true"], **line}
    code, err, results = _cli(tmp_path, [task])
    assert code == 1 and results == {}, err
    assert f"task wide: sets {named}, which can widen" in err and "--allow-task-backend-keys" in err


def test_cli_allow_task_backend_keys_lets_them_through(tmp_path: Path) -> None:
    task: dict[str, object] = {
        "id": "uid",
        "sandbox": {"type": "bwrap", "sandbox_uid": 2_000_000_123},
        "commands": ["true"],
    }
    code, err, results = _cli(tmp_path, [task], "--allow-task-backend-keys")
    assert code == 0, err
    assert results["uid"]["status"] == "ok"


def test_cli_limits_are_a_ceiling_a_task_may_only_lower(tmp_path: Path) -> None:
    lines: list[dict[str, object]] = [
        {"id": "loose", "sandbox": {"type": "bwrap", "limits": {"pids": 100000}}, "commands": ["true"]},
        {"id": "tight", "sandbox": {"type": "bwrap", "limits": {"pids": 64}}, "commands": ["true"]},
        {"id": "none", "commands": ["true"]},
    ]
    code, err, results = _cli(tmp_path, lines, "--pids", "256")
    assert code == 1, err
    assert "task loose: limits.pids=100000 is above the operator's 256" in err
    assert set(results) == {"tight", "none"}


def test_api_floor_refuses_and_reports(tmp_path: Path) -> None:
    tasks = [
        Task.model_validate({"id": "local", "sandbox": "local", "commands": ["true"]}),
        Task.model_validate({"id": "trust", "trust_workspace": True, "commands": ["true"]}),
        Task.model_validate(
            {"id": "uid", "sandbox": {"type": "bwrap", "sandbox_uid": 1000}, "commands": ["true"]}
        ),
        Task.model_validate({"id": "ok", "commands": ["true"]}),
    ]
    seen: list[str] = []
    floor = TaskFloor(sandbox="bwrap", allow_task_trust=False)
    results = run_sync(
        tasks, concurrency=1, prestart=0, floor=floor, on_refused=lambda t, e: seen.append(t.id)
    )
    assert [(r.id, r.backend, r.status) for r in results] == [("ok", "bwrap", "ok")]
    assert sorted(seen) == ["local", "trust", "uid"]


def test_floor_limits_fill_in_and_refuse() -> None:
    floor = TaskFloor(limits=ResourceLimits(memory_bytes=1 << 30, pids=256))
    task = floor.apply(
        Task.model_validate(
            {"id": "t", "sandbox": {"type": "bwrap", "limits": {"pids": 10}}, "commands": ["x"]}
        )
    )
    assert task.sandbox.limits.pids == 10 and task.sandbox.limits.memory_bytes == 1 << 30
    with pytest.raises(TaskRefused, match="memory_bytes"):
        floor.apply(
            Task.model_validate(
                {"id": "t", "sandbox": {"limits": {"memory_bytes": 1 << 40}}, "commands": ["x"]}
            )
        )
