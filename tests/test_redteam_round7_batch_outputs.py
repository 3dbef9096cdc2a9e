"""Red team round 7: a bwrap task read the run's own files -- other tasks' results, artifacts, the task file.

bwrap shows the host read-only. A batch's results file (every earlier task's output previews),
its artifacts directory (collected files, full outputs) and the task file (every task's commands
and ``env``) are shellrt's own files on the host, readable by the sandbox uid (root caller: files
0644, directories 0755) or by the caller's uid itself (non-root caller): a task read the answers
another task printed, its collected files, and the environment given to the others. Like
shellrt's state directories (round 5), they are now masked in every task's sandbox: the results
file, the artifacts directory, and the task file when the CLI reads one (``hidden_paths``).

Each test failed before the fix.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from shellrt.batch import Task, run_sync
from tests._batch_helpers import run_cli
from tests.conftest import require

_SECRET = "ANSWER-rt7-4242"


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A directory the sandbox uid can reach (pytest's base temp dir is 0700, bwrap's /tmp private)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="shellrt-rt7-out-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _tasks(base: Path) -> list[dict[str, object]]:
    out = base / "results.jsonl"
    spy = (
        f"cat {out} {out}.artifacts/first/files/answer.txt {base}/tasks.jsonl 2>/dev/null"
        f" | grep -c {_SECRET} || true"
    )
    return [
        {
            "id": "first",
            "sandbox": "bwrap",
            "env": {"GRADER_KEY": _SECRET},
            "commands": [f"echo {_SECRET} | tee answer.txt"],
            "collect": {"files": ["answer.txt"]},
        },
        {"id": "second", "sandbox": "bwrap", "commands": [spy]},
    ]


def _seen(results: list[dict[str, object]]) -> str:
    [second] = [r for r in results if r["id"] == "second"]
    commands = second["commands"]
    assert isinstance(commands, list)
    return str(commands[0]["preview"]).strip()


def test_a_task_cannot_read_earlier_results_or_artifacts(reachable: Path) -> None:
    tasks = [Task.model_validate(t) for t in _tasks(reachable)]
    results = run_sync(tasks, concurrency=1, prestart=0, out=reachable / "results.jsonl")
    assert [r.status for r in results] == ["ok", "ok"], results
    assert (reachable / "results.jsonl.artifacts/first/files/answer.txt").read_text().strip() == _SECRET
    assert _seen([r.model_dump() for r in results]) == "0"


def test_a_task_cannot_read_the_task_file(reachable: Path) -> None:
    tasks = reachable / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in _tasks(reachable)))
    tasks.chmod(0o644)
    out = reachable / "results.jsonl"
    proc = run_cli("run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q", timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert _seen(results) == "0"


def test_the_run_s_own_files_are_left_out_of_a_workspace_copy(tmp_path: Path) -> None:
    """``"workspace": "."`` beside the task file and ``--out``: the host's copy of the workspace
    carried the task file, the results file and the artifacts into every task (any backend)."""
    (tmp_path / "src.txt").write_text("code\n")
    first = {
        "id": "first",
        "workspace": ".",
        "env": {"GRADER_KEY": _SECRET},
        "commands": [f"echo {_SECRET} > answer.txt"],
        "collect": {"files": ["answer.txt"]},
    }
    spy = {
        "id": "second",
        "workspace": ".",
        "commands": [f"ls -a; grep -rc {_SECRET} . | grep -v ':0$' || true"],
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(first) + "\n" + json.dumps(spy) + "\n")
    out = tmp_path / "results.jsonl"
    proc = run_cli("run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q", timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    listing = _seen(results)
    assert "src.txt" in listing  # the workspace itself is there
    assert _SECRET not in listing and "tasks.jsonl" not in listing and "results.jsonl" not in listing, listing


def test_a_ray_node_masks_the_drivers_files(reachable: Path) -> None:
    """With Ray the results file and the task file are the driver's: each node actor is given
    them (and the driver's artifacts directory) and masks them as a local run does."""
    from importlib.util import find_spec

    require(find_spec("ray") is not None, "Ray is not installed (pip install 'shellrt[ray]')")
    from shellrt.batch.ray_runner import RayRunner, ShellrtNodeActor

    out = reachable / "results.jsonl"
    out.write_text(json.dumps({"id": "earlier", "status": "ok", "preview": _SECRET}) + "\n")
    runner = RayRunner("auto", artifacts_dir=reachable / "driver-art", hidden_paths=(out,))
    assert str(out) in runner.hidden_paths and str(reachable / "driver-art") in runner.hidden_paths
    actor = ShellrtNodeActor(
        "node-1", None, str(reachable / "node-art"), None, 1, "auto", runner.hidden_paths
    )
    task = Task.model_validate(
        {"id": "spy", "sandbox": "bwrap", "commands": [f"cat {out} 2>/dev/null | grep -c {_SECRET} || true"]}
    )

    async def main() -> dict[str, object]:
        return await actor.run(task.model_dump(mode="json"), 1, 1 << 20)

    payload = anyio.run(main)
    result = payload["result"]
    assert isinstance(result, dict) and result["commands"][0]["preview"].strip() == "0", result


def test_the_default_artifacts_directory_is_private(tmp_path: Path) -> None:
    """Without ``out`` or ``artifacts_dir`` the artifacts went to ``/tmp/shellrt-batch/artifacts-<pid>``:
    a name any local user can guess under a directory any local user may create first (after a
    reboot) -- and then own: read every task's outputs, or swap a task's directory for a symlink
    so that the caller (root) writes a task's collected files where the link points. It is now a
    fresh 0700 directory of its own (``mkdtemp``) right in the temp directory."""
    import os
    import stat
    import tempfile

    task = Task.model_validate({"id": "p", "commands": ["echo hi > f.txt"], "collect": {"files": ["f.txt"]}})
    [result] = run_sync([task])
    assert result.status == "ok" and result.artifacts_dir is not None, result
    artifacts = Path(result.artifacts_dir).parent
    try:
        assert artifacts.parent == Path(tempfile.gettempdir()), artifacts
        info = artifacts.stat()
        assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700, oct(info.st_mode)
        assert str(os.getpid()) not in artifacts.name
    finally:
        if artifacts.parent == Path(tempfile.gettempdir()):
            shutil.rmtree(artifacts, ignore_errors=True)
