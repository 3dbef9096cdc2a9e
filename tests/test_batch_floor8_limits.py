"""Round 8: default ceilings and a per-run output budget, so one task cannot starve the others.

Before, a task without ``limits`` ran with the host's memory and processes (bwrap as root, docker)
and a docker task's ``/tmp`` was half the RAM; a task could also ask for any limit it liked. Output
spools were bounded per command and per task, never per run: ``collect.output: full`` or large
collected files from many tasks filled the disk. Real runs on bwrap (root: a session cgroup),
docker and local.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sandbox.docker._memsplit import split_memory
from shellrt.batch.ceilings import machine_ceilings
from tests._batch_helpers import run_cli

_CGROUP = (
    "p=$(grep :pids: /proc/self/cgroup | cut -d: -f3); cat /sys/fs/cgroup/pids$p/pids.max; "
    "m=$(grep :memory: /proc/self/cgroup | cut -d: -f3); cat /sys/fs/cgroup/memory$m/memory.limit_in_bytes"
)


def _cli(tmp_path: Path, lines: list[dict[str, Any]], *flags: str) -> tuple[int, str, dict[str, Any]]:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines))
    out = tmp_path / "results.jsonl"
    out.unlink(missing_ok=True)
    proc = run_cli("run", str(tasks), "--out", str(out), "--prestart", "0", "-q", *flags, timeout=180)
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    return proc.returncode, proc.stderr, results


def test_a_bwrap_task_without_limits_gets_the_machines_share(tmp_path: Path) -> None:
    code, err, results = _cli(tmp_path, [{"id": "greedy", "commands": [_CGROUP]}], "-j", "3")
    assert code == 0, err
    pids, memory = results["greedy"]["commands"][0]["preview"].split()
    share = machine_ceilings(3)
    assert pids == str(share.pids)
    assert share.memory_bytes is not None and abs(int(memory) - share.memory_bytes) < 1 << 16  # page-rounded
    # the flags change them
    code, err, results = _cli(
        tmp_path, [{"id": "greedy", "commands": [_CGROUP]}], "-j", "3", "--pids", "300", "--memory", "1g"
    )
    assert code == 0, err
    assert results["greedy"]["commands"][0]["preview"].split() == ["300", str(1 << 30)]


_FORKS = """
import os, signal, time
kids = []
try:
    while len(kids) < 5000:
        pid = os.fork()
        if pid == 0:
            os.close(1); os.close(2); time.sleep(60); os._exit(0)
        kids.append(pid)
except OSError:
    pass
print(len(kids), flush=True)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
"""


def test_the_default_pids_ceiling_holds_against_a_fork_loop(tmp_path: Path) -> None:
    # -j 64: the share is below 4096; the task's processes stop at it (memory raised so that the
    # pids ceiling, not the memory one, is what stops it).
    share = machine_ceilings(64).pids
    assert share is not None and share < 4096
    task = {"id": "forks", "commands": [{"argv": ["python3", "-c", _FORKS]}]}
    code, err, results = _cli(tmp_path, [task], "-j", "64", "--memory", "6g")
    assert code == 0, err
    started = int(results["forks"]["commands"][0]["preview"])
    assert 0 < started < share, started


def test_a_task_may_not_ask_for_more_than_the_default(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {
            "id": "huge",
            "sandbox": {"type": "bwrap", "limits": {"memory_bytes": 1 << 50}},
            "commands": ["true"],
        },
        {"id": "small", "sandbox": {"type": "bwrap", "limits": {"pids": 50}}, "commands": [_CGROUP]},
    ]
    code, err, results = _cli(tmp_path, lines, "-j", "2")
    assert code == 1 and set(results) == {"small"}, err
    assert (
        "task huge: limits.memory_bytes=1125899906842624 is above the operator's" in err and "--memory" in err
    )
    pids, memory = results["small"]["commands"][0]["preview"].split()
    assert pids == "50" and int(memory) < 1 << 50  # its own pids, the default memory
    code, err, results = _cli(tmp_path, lines, "-j", "2", "--trust-task-file")
    assert code == 0 and set(results) == {"huge", "small"}, err


def test_local_and_docker_get_what_they_enforce(tmp_path: Path) -> None:
    docker_probe = (
        "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; "
        "df -k /tmp | tail -1 | awk '{print $2}'"
    )
    lines: list[dict[str, Any]] = [
        {"id": "local", "sandbox": "local", "commands": ["echo ran"]},  # local enforces nothing: still runs
        {
            "id": "docker",
            "sandbox": {"type": "docker", "image": "shellrt-test-busybox", "reuse": "never"},
            "commands": [docker_probe],
        },
    ]
    code, err, results = _cli(
        tmp_path, lines, "-j", "2", "--allow-task-local", "--allow-image", "shellrt-test-busybox"
    )
    assert code == 0, err
    assert results["local"]["status"] == "ok"
    memory, tmp_kib = results["docker"]["commands"][0]["preview"].split()
    share = machine_ceilings(2)
    assert share.memory_bytes is not None and share.tmp_bytes is not None
    assert abs(int(memory) - share.memory_bytes) < 1 << 16
    # /tmp is what the share asks, cut to leave the executor its reserve (round 24, `_memsplit`)
    expected_tmp = split_memory(share.memory_bytes, share.tmp_bytes).tmp_bytes
    assert abs(int(tmp_kib) * 1024 - expected_tmp) < 1 << 20


def test_the_run_output_budget_bounds_kept_outputs(tmp_path: Path) -> None:
    noisy = "head -c 600000 /dev/zero | tr '\\0' x"
    lines = [{"id": f"n{i}", "commands": [noisy], "collect": {"output": "full"}} for i in range(3)]
    code, err, results = _cli(tmp_path, lines, "-j", "1", "--output-budget", "1m")
    assert code == 1, err  # a loss the run's budget caused is no verdict: `error` (round 23)
    kept = sum(Path(r["commands"][0]["output_path"]).stat().st_size for r in results.values())
    assert kept <= 1 << 20
    lost = [r["commands"][0]["output_lost"] for r in results.values() if r["commands"][0]["output_lost"]]
    assert lost and all("--output-budget" in why for why in lost), results
    cut = [r for r in results.values() if r["commands"][0]["output_lost"]]
    assert all(r["status"] == "error" and "--output-budget" in r["error"] for r in cut), results
    assert all(r["commands"][0]["total_bytes"] == 600000 for r in results.values()), results  # counted


def test_spools_give_their_bytes_back_when_not_kept(tmp_path: Path) -> None:
    noisy = "head -c 600000 /dev/zero | tr '\\0' x"
    lines = [{"id": f"p{i}", "commands": [noisy]} for i in range(4)]  # previews only: spools deleted
    code, err, results = _cli(tmp_path, lines, "-j", "1", "--output-budget", "1m")
    assert code == 0, err
    assert [r["commands"][0]["output_lost"] for r in results.values()] == [None] * 4


def test_collected_files_take_from_the_run_budget(tmp_path: Path) -> None:
    lines = [
        {"id": "big", "commands": ["head -c 2000000 /dev/zero > blob"], "collect": {"files": ["blob"]}},
        {"id": "fits", "commands": ["head -c 1000 /dev/zero > blob"], "collect": {"files": ["blob"]}},
    ]
    code, err, results = _cli(tmp_path, lines, "-j", "1", "--output-budget", "1m")
    assert code == 1, err
    assert results["big"]["status"] == "error" and "--output-budget" in results["big"]["error"]
    assert results["fits"]["status"] == "ok" and results["fits"]["files"] == ["blob"]


def test_a_local_start_leaves_live_bwrap_session_cgroups_alone() -> None:
    """Every bwrap task now has a session cgroup; a local sandbox start (another task of the run, or
    any shellrt on the host) swept every ``shellrt-*`` pids cgroup whose name did not end in its
    owner's start time as dead: it SIGKILLed a live bwrap session's commands and removed its cgroup
    (the task failed with ``cannot create .../cgroup.procs: Directory nonexistent``)."""
    from sandbox import ResourceLimits
    from sandbox._cgroup import SessionCgroup
    from sandbox._ownerguard import sweep_orphan_cgroups

    group = SessionCgroup.create(ResourceLimits(pids=50))
    assert group is not None
    try:
        swept = sweep_orphan_cgroups()
        assert all(directory.exists() for directory, _ in group.dirs), swept
    finally:
        group.remove()


def test_a_kept_tool_result_takes_from_the_run_budget(tmp_path: Path) -> None:
    call = {"type": "tool_use", "id": "toolu_f8_budget_1", "name": "Bash", "input": {"command": "seq 1 5000"}}
    task = {"id": "tool", "commands": [call], "collect": {"output": "full"}}
    code, err, results = _cli(tmp_path, [task], "-j", "1", "--output-budget", "1k")
    assert code == 1, err  # the run's budget cut it: `error`, no verdict (round 23)
    assert results["tool"]["status"] == "error" and "--output-budget" in results["tool"]["error"]
    outcome = results["tool"]["commands"][0]
    assert outcome["output_path"] is None and "--output-budget" in outcome["output_lost"], outcome
    code, err, results = _cli(tmp_path, [task], "-j", "1")
    outcome = results["tool"]["commands"][0]
    assert outcome["output_lost"] is None and Path(outcome["output_path"]).stat().st_size > 1024, outcome
