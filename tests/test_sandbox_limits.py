"""Limits are enforced or refused, never ignored: bwrap through a session cgroup, local refuses.

Real bwrap, real cgroups, real ``python -m shellrt`` processes. Each attack
(a memory hog, a fork loop, a CPU spinner) ran unbounded before this change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import BwrapConfig, LocalConfig, ResourceLimits, SandboxPolicy, SandboxPolicyError
from sandbox._cgroup import CGROUP_PREFIX, SessionCgroup, cgroup_unavailable_reasons, sweep_orphans
from sandbox.bwrap import BwrapBackend
from sandbox.factory import create_backend
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent


def _bwrap_limits() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    require(not cgroup_unavailable_reasons(), f"no writable cgroups here: {cgroup_unavailable_reasons()}")


def _shellrt(
    cwd: Path, *args: str, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "shellrt", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _run_json(cwd: Path, *args: str) -> dict[str, Any]:
    proc = _shellrt(cwd, "run", "--json", *args)
    assert proc.stdout.strip(), proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    report["_rc"] = proc.returncode
    return report


HOG = ["--", "python3", "-c", "'bytearray(300*2**20)'"]


def test_memory_limit_ooms_on_bwrap(tmp_path: Path) -> None:
    _bwrap_limits()
    report = _run_json(tmp_path, "--sandbox", "bwrap", "--memory", "64m", *HOG)
    assert report["_rc"] == 137
    assert report["exit_code"] == 137
    assert report["oom_killed"] is True
    assert report["sandbox"] == "bwrap"


def test_auto_picks_bwrap_and_enforces_memory(tmp_path: Path) -> None:
    _bwrap_limits()
    report = _run_json(tmp_path, "--memory", "64m", *HOG)
    assert report["sandbox"] == "bwrap"
    assert report["oom_killed"] is True


def test_without_limit_the_same_allocation_succeeds(tmp_path: Path) -> None:
    """The control: the hog is killed by the limit, not by the machine."""
    _bwrap_limits()
    report = _run_json(tmp_path, "--sandbox", "bwrap", *HOG)
    assert report["exit_code"] == 0
    assert report["oom_killed"] is False


def test_pids_limit_stops_a_fork_loop(tmp_path: Path) -> None:
    _bwrap_limits()
    loop = "sh -c 'for i in $(seq 200); do sleep 5 & done; echo survived'"
    report = _run_json(tmp_path, "--sandbox", "bwrap", "--pids", "50", "--timeout", "60", "--", loop)
    assert "fork" in report["output"].lower(), report["output"]
    assert "survived" not in report["output"]
    assert report["exit_code"] != 0


def _cpu_share(tmp_path: Path, *limit: str) -> float:
    spin = (
        "python3 -c 'import time\n"
        "t=time.monotonic(); c=time.process_time()\n"
        "while time.monotonic()-t < 1.5: pass\n"
        "print((time.process_time()-c)/(time.monotonic()-t))'"
    )
    report = _run_json(tmp_path, "--sandbox", "bwrap", *limit, "--", spin)
    assert report["exit_code"] == 0, report
    return float(report["output"].strip().splitlines()[0])


def test_cpu_limit_throttles(tmp_path: Path) -> None:
    _bwrap_limits()
    limited = _cpu_share(tmp_path, "--cpus", "0.1")
    free = _cpu_share(tmp_path)
    # 0.1 core: the spinner gets about a tenth of a core however idle the machine is.
    assert limited < 0.3, (limited, free)
    assert free > 1.5 * limited, (limited, free)


def test_bwrap_session_cgroup_holds_every_command_and_is_removed(tmp_path: Path) -> None:
    _bwrap_limits()
    import anyio

    from sandbox import ExecRequest

    async def main() -> tuple[list[str], list[str]]:
        policy = SandboxPolicy(workspace=tmp_path, limits=ResourceLimits(pids=64, memory_bytes=256 << 20))
        backend = create_backend(BwrapConfig(persistent=True), policy)
        assert isinstance(backend, BwrapBackend)
        async with backend:
            group = backend._cgroup
            assert group is not None
            dirs = [str(d) for d, _ in group.dirs]
            seen = []
            for _ in range(2):
                proc = await backend.exec(ExecRequest(argv=("cat", "/proc/self/cgroup"), cwd=str(tmp_path)))
                seen.append((await proc.stdout.receive()).decode())
                await proc.wait()
        return dirs, seen

    dirs, seen = anyio.run(main)
    # Each sandbox's cgroup namespace is rooted at the session cgroup (round 17): a command in it
    # reads "/", one anywhere else a path with "..".
    assert dirs and all({ln.split(":", 2)[2] for ln in text.splitlines()} == {"/"} for text in seen), seen
    assert not any(Path(d).exists() for d in dirs), "the session cgroup outlived close()"


def test_orphaned_cgroup_of_a_dead_owner_is_swept(tmp_path: Path) -> None:
    _bwrap_limits()
    dead = subprocess.Popen(["true"])
    dead.wait()
    group = SessionCgroup.create(ResourceLimits(pids=10))
    assert group is not None
    try:
        directory, _ = group.dirs[0]
        orphan = directory.parent / f"{CGROUP_PREFIX}{dead.pid}-deadbeef"
        orphan.mkdir()
        live = directory.parent / f"{CGROUP_PREFIX}{os.getpid()}-cafe0000"
        live.mkdir()
        # A session of a shellrt in another pid namespace: its owner's pid means nothing here.
        foreign = directory.parent / f"{CGROUP_PREFIX}{dead.pid}-f0f0f0f0-n1"
        foreign.mkdir()
        try:
            assert sweep_orphans() >= 1
            assert not orphan.exists()
            assert live.exists(), "a cgroup whose owner is alive was swept"
            assert foreign.exists(), "a cgroup of another pid namespace was swept"
            assert group.name.endswith(f"-n{os.stat('/proc/self/ns/pid').st_ino}")
        finally:
            live.rmdir()
            foreign.rmdir()
    finally:
        group.remove()


# --- refusals ---------------------------------------------------------------------------


def test_local_refuses_limits_through_run(tmp_path: Path) -> None:
    proc = _shellrt(tmp_path, "run", "--sandbox", "local", "--memory", "64m", "--", "true")
    assert proc.returncode == 125
    assert "cannot enforce" in proc.stderr and "memory" in proc.stderr and "--sandbox docker" in proc.stderr


def test_local_refuses_limits_through_serve(tmp_path: Path) -> None:
    proc = _shellrt(tmp_path, "serve", "--jsonl", "--sandbox", "local", "--pids", "50", stdin="")
    assert proc.returncode != 0
    assert "cannot enforce" in proc.stderr and "pids" in proc.stderr


def test_local_refuses_limits_through_batch(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    task = {"id": "t1", "sandbox": {"type": "local", "limits": {"cpus": 0.5}}, "commands": ["echo ran"]}
    tasks.write_text(json.dumps(task) + "\n")
    out = tmp_path / "out.jsonl"
    # --allow-task-local: a task file may not choose local without it (round 8)
    proc = _shellrt(tmp_path, "batch", "run", "--quiet", "--allow-task-local", "--out", str(out), str(tasks))
    assert proc.returncode == 1, proc.stderr
    [result] = [json.loads(line) for line in out.read_text().splitlines()]
    assert result["status"] == "error"
    assert "cannot enforce" in result["error"] and "cpus" in result["error"]


@pytest.mark.anyio
async def test_local_refuses_limits_through_runtime(tmp_path: Path) -> None:
    policy = SandboxPolicy(workspace=tmp_path, limits=ResourceLimits(memory_bytes=64 << 20))
    runtime = shellrt.Runtime(tmp_path, "local", policy=policy, session_dir=tmp_path / ".s")
    with pytest.raises(SandboxPolicyError, match="memory"):
        await runtime.start()
    await runtime.close()


def test_create_backend_is_the_one_check(tmp_path: Path) -> None:
    policy = SandboxPolicy(workspace=tmp_path, limits=ResourceLimits(tmp_bytes=1 << 20))
    with pytest.raises(SandboxPolicyError, match="tmp"):
        create_backend(LocalConfig(), policy)
    if os.geteuid() == 0:  # root: a sized tmpfs on the session's /tmp (sandbox._tmpcap, red team 13)
        assert "tmp" in create_backend(BwrapConfig(), policy).enforces()
        return
    with pytest.raises(SandboxPolicyError, match="tmp"):
        create_backend(BwrapConfig(), policy)  # a non-root caller's /tmp is a host directory: no size to set


def test_zygote_session_reports_oom_and_not_a_plain_sigkill(tmp_path: Path) -> None:
    _bwrap_limits()
    import anyio

    from sandbox import ExecRequest, ExitStatus

    async def main() -> tuple[ExitStatus, ExitStatus, bool]:
        policy = SandboxPolicy(workspace=tmp_path, limits=ResourceLimits(memory_bytes=128 << 20))
        async with create_backend(BwrapConfig(persistent=True), policy) as backend:
            assert isinstance(backend, BwrapBackend)
            hog = await backend.exec(
                ExecRequest(argv=("python3", "-c", "bytearray(300*2**20)"), cwd=str(tmp_path))
            )
            oom = await hog.wait()
            kill = await backend.exec(ExecRequest(argv=("sh", "-c", "kill -9 $$"), cwd=str(tmp_path)))
            return oom, await kill.wait(), backend.persistent

    oom, plain, persistent = anyio.run(main)
    assert persistent, "the session zygote did not start"
    assert oom.exit_code == 137 and oom.oom_killed
    assert plain.exit_code == 137 and not plain.oom_killed


_AS_NOBODY = """
import importlib.util, json, sys, types
spec = importlib.util.spec_from_file_location("cg", sys.argv[1])
cg = importlib.util.module_from_spec(spec); sys.modules["cg"] = cg; spec.loader.exec_module(cg)
reasons = cg.cgroup_unavailable_reasons()
try:
    cg.SessionCgroup.create(types.SimpleNamespace(memory_bytes=1 << 26, pids=None, cpus=None))
    made = True
except cg.CgroupUnavailableError:
    made = False
print(json.dumps({"reasons": reasons, "made": made}))
"""


def test_non_root_without_delegation_cannot_make_the_cgroup() -> None:
    """As an unprivileged uid the v1 hierarchies are not writable: every limit has a reason, nothing is made."""
    require(
        os.geteuid() == 0 and shutil.which("setpriv") is not None, "needs root and setpriv to become nobody"
    )
    python = "/usr/bin/python3"
    require(os.access(python, os.X_OK), "no system python3 for uid 65534")
    cgroup_module = str(ROOT / "sandbox" / "_cgroup.py")
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            python,
            "-c",
            _AS_NOBODY,
            cgroup_module,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result["reasons"]) == {"memory", "pids", "cpus"}, result
    assert result["made"] is False


def test_batch_bwrap_task_enforces_memory(tmp_path: Path) -> None:
    _bwrap_limits()
    tasks = tmp_path / "tasks.jsonl"
    task = {
        "id": "hog",
        "sandbox": {"type": "bwrap", "limits": {"memory_bytes": 64 << 20}},
        "commands": ["python3 -c 'bytearray(300*2**20)'", "echo after"],
    }
    tasks.write_text(json.dumps(task) + "\n")
    out = tmp_path / "out.jsonl"
    proc = _shellrt(tmp_path, "batch", "run", "--quiet", "--out", str(out), str(tasks))
    assert proc.returncode == 0, proc.stderr
    [result] = [json.loads(line) for line in out.read_text().splitlines()]
    hog, after = result["commands"]
    assert hog["exit_code"] == 137 and hog["oom_killed"] is True
    assert after["exit_code"] == 0 and "after" in after["preview"]


@pytest.mark.anyio
async def test_runtime_auto_picks_bwrap_and_enforces(tmp_path: Path) -> None:
    _bwrap_limits()
    policy = SandboxPolicy(workspace=tmp_path, limits=ResourceLimits(pids=30))
    async with shellrt.Runtime(tmp_path, "auto", policy=policy, session_dir=tmp_path / ".s") as rt:
        assert rt.backend is not None and rt.backend.name == "bwrap"
        assert rt.supervisor is not None
        result = await rt.supervisor.run(
            "sh -c 'for i in $(seq 100); do sleep 3 & done; echo survived'", timeout_s=60
        )
    assert result.exit_code != 0
