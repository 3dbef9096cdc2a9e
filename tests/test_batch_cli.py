"""`shellrt batch run` as a real subprocess: bad lines, --resume after SIGKILL, Ctrl-C teardown."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests._batch_helpers import processes_with_marker, run_cli, start_cli


def _write_tasks(path: Path, tasks: list[dict[str, object]], extra_lines: tuple[str, ...] = ()) -> None:
    with path.open("w") as fh:
        for task in tasks:
            fh.write(json.dumps(task) + "\n")
        for line in extra_lines:
            fh.write(line + "\n")


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def _wait_gone(marker: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = processes_with_marker(marker)
        if not left:
            return []
        time.sleep(0.1)
    return processes_with_marker(marker)


def test_bad_line_reported_and_skipped_rest_run(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    _write_tasks(
        tasks,
        [{"id": "a", "commands": ["echo a"]}, {"id": "b", "commands": ["exit 2"]}],
        extra_lines=('{"id": "c", "commands": "not-a-list", "oops": 1}', "{broken"),
    )
    out = tmp_path / "results.jsonl"
    proc = run_cli("run", str(tasks), "--out", str(out), "-j", "2")
    assert proc.returncode == 1, proc.stderr  # an invalid line means a task did not run
    assert f"{tasks}:3: invalid task" in proc.stderr
    assert f"{tasks}:4: not valid JSON" in proc.stderr
    assert "finished 2 task(s)" in proc.stderr and "skipped 2 invalid task line(s)" in proc.stderr
    results = {json.loads(line)["id"]: json.loads(line) for line in out.read_text().splitlines()}
    assert results["a"]["status"] == "ok" and results["b"]["status"] == "failed"


def test_exit_zero_when_every_task_ran_even_if_commands_failed(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    _write_tasks(
        tasks,
        [{"id": "f", "commands": ["false"]}, {"id": "t", "commands": [{"run": "sleep 5", "timeout": 0.3}]}],
    )
    out = tmp_path / "results.jsonl"
    proc = run_cli("run", str(tasks), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(_ids(out)) == ["f", "t"]


@pytest.mark.slow  # 46 s in CI56: its file is handed out first (tests/conftest.py)
def test_resume_after_sigkill_finishes_the_rest_exactly_once(tmp_path: Path) -> None:
    marker = f"resume-{uuid.uuid4().hex}"
    n = 40  # the kill comes at 8 results (-j 4): 32 are left to resume
    tasks = tmp_path / "tasks.jsonl"
    _write_tasks(
        tasks, [{"id": f"r{i:02d}", "commands": ["sleep 0.3"], "env": {"M": marker}} for i in range(n)]
    )
    out = tmp_path / "results.jsonl"
    proc = start_cli("run", str(tasks), "--out", str(out), "-j", "4")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_bytes().splitlines()) >= 8:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = _ids(out)
    assert 8 <= len(first) < n
    with out.open("ab") as fh:  # and the crash left half a line behind
        fh.write(b'{"id": "r%02d", "status": "ok", "comm' % (n - 1))
    assert _wait_gone(marker) == []  # the orphaned 0.3 s sleeps end by themselves
    proc2 = run_cli("run", str(tasks), "--out", str(out), "-j", "8", "--resume", timeout=120)
    assert proc2.returncode == 0, proc2.stderr
    assert f"{len(first)} skipped" in proc2.stderr
    ids = _ids(out)
    assert Counter(ids) == Counter({f"r{i:02d}": 1 for i in range(n)})
    assert ids[: len(first)] == first


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_tears_everything_down_and_exits_130(tmp_path: Path, signum: int) -> None:
    marker = f"sigint-{uuid.uuid4().hex[:12]}"
    tasks = tmp_path / "tasks.jsonl"
    _write_tasks(
        tasks,
        [{"id": "quick", "commands": ["true"]}]
        + [
            {"id": f"{marker}-{i}", "commands": [f"sleep 1000 # {marker}"], "env": {"M": marker}}
            for i in range(20)
        ],
    )
    out = tmp_path / "results.jsonl"
    # local: the tasks are found by their command line (the test's task file is ours)
    proc = start_cli("run", str(tasks), "--out", str(out), "-j", "4", "--allow-task-local")
    try:
        deadline = time.monotonic() + 30
        while len(processes_with_marker(marker)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(processes_with_marker(marker)) >= 4, "tasks never started"
        time.sleep(0.3)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr.decode()
    assert b"tearing down" in stderr and b"interrupted after" in stderr
    assert processes_with_marker(marker) == []  # immediately, not after a grace period
    assert _ids(out) == ["quick"]  # finished results kept; unfinished ones not written
    assert list(Path(tempfile.gettempdir()).glob(f"shellrt-batch-{marker}*")) == []  # temp dirs removed


def _container_of(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return None
    found = re.search(r"[0-9a-f]{64}", text)
    return found.group(0) if found else None


def _interrupt_once_running(proc: subprocess.Popen[bytes], marker: str) -> tuple[set[str], bytes]:
    """Ctrl-C the batch CLI once two containers run ``marker``'s tasks; their ids and its stderr.

    Asserts it exits 130 (interrupted).
    """
    containers: set[str] = set()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            containers |= {c for c in map(_container_of, processes_with_marker(marker)) if c}
            if len(containers) >= 2:
                break
            time.sleep(0.1)
        assert len(containers) >= 2, "docker tasks never started"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr.decode()
    return containers, stderr


@pytest.mark.docker
def test_ctrl_c_with_docker_removes_every_container(tmp_path: Path) -> None:
    from tests._docker_support import DEBIAN, container_exists, require_docker

    require_docker()
    marker = f"dsig-{uuid.uuid4().hex[:12]}"
    tasks = tmp_path / "tasks.jsonl"
    _write_tasks(
        tasks,
        [
            {
                "id": f"{marker}-{i}",
                "sandbox": {"type": "docker", "image": DEBIAN},
                "commands": [f"M={marker} sleep 1000"],
            }
            for i in range(6)
        ],
    )
    out = tmp_path / "results.jsonl"
    proc = start_cli(
        "run", str(tasks), "--out", str(out), "-j", "2", "--prestart", "2", "--allow-image", DEBIAN
    )
    containers, stderr = _interrupt_once_running(proc, marker)
    assert [c for c in containers if container_exists(c)] == []
    assert processes_with_marker(marker) == []


@pytest.mark.serial  # compares every managed container on the machine before and after
@pytest.mark.docker
def test_ctrl_c_during_a_recycled_docker_run_removes_every_container(tmp_path: Path) -> None:
    """Containers recycled from finished tasks (and idle ones in the pool) are all removed on Ctrl-C."""
    from tests._docker_support import DEBIAN, managed_container_ids, require_docker

    require_docker()
    before = managed_container_ids()
    marker = f"rsig-{uuid.uuid4().hex[:12]}"
    sandbox = {"type": "docker", "image": DEBIAN}
    tasks = tmp_path / "tasks.jsonl"
    _write_tasks(
        tasks,
        [{"id": f"quick{i}", "sandbox": sandbox, "commands": ["true"]} for i in range(6)]
        + [
            {"id": f"{marker}-{i}", "sandbox": sandbox, "commands": [f"M={marker} sleep 1000"]}
            for i in range(4)
        ],
    )
    out = tmp_path / "results.jsonl"
    proc = start_cli(
        "run", str(tasks), "--out", str(out), "-j", "2", "--prestart", "1", "--allow-image", DEBIAN
    )
    _containers, stderr = _interrupt_once_running(proc, marker)
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"] for r in results} <= {f"quick{i}" for i in range(6)}  # no sleeper finished
    assert any(r["recycled"] for r in results)  # containers were recycled before the interrupt
    assert b"on recycled containers" in stderr and b"discarded after a failed reset" in stderr
    assert managed_container_ids() - before == set()
    assert processes_with_marker(marker) == []


@pytest.mark.docker
def test_docker_reuse_never_on_the_command_line(tmp_path: Path) -> None:
    from tests._docker_support import DEBIAN, require_docker

    require_docker()
    tasks = tmp_path / "tasks.jsonl"
    _write_tasks(
        tasks,
        [
            {"id": f"n{i}", "sandbox": {"type": "docker", "image": DEBIAN}, "commands": ["true"]}
            for i in range(3)
        ],
    )
    out = tmp_path / "results.jsonl"
    proc = run_cli(
        "run",
        str(tasks),
        "--out",
        str(out),
        "-j",
        "1",
        "--prestart",
        "0",
        "--docker-reuse",
        "never",
        "--allow-image",
        DEBIAN,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({r["container"] for r in results}) == 3 and not any(r["recycled"] for r in results)
    assert "docker: 3 container(s) for 3 task(s) (0 on recycled containers)" in proc.stderr
