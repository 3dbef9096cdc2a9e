"""Red team round 16 (part 2), Ray: what a task reaches of the node it runs on.

A real single-node Ray cluster started in this process (``ray.init``) with its temp dir
outside ``/tmp`` (bwrap gives each task a private ``/tmp``, so this is the case where the
node's Ray files are in the task's read-only view of the host), and real bwrap tasks run
through the real driver and node actor (`shellrt.batch.run(..., ray_address=...)`).

- **The node's Ray files were readable from every bwrap task** (round 15 left it open):
  every session's logs (every job's workers' output), other jobs' ``runtime_env`` packages
  and, by default, the spilled objects (other tasks' specs with their ``env``, their results
  and shipped files). The node actor now masks its Ray temp dir (or its session dir when the
  temp dir holds what a sandbox needs) and a spill directory configured elsewhere.
- **A task escaped the per-task limits on Ray** (medium). On a local run the floor refuses a
  task asking more than the machine's share per task; on Ray each node's share is its own, the
  driver's floor had no ceiling at all, and ``"limits": {"pids": 1000000}`` ran as asked on
  every node. Each node now refuses a task above its own share (status ``error``, naming the
  flag that raises it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require

pytestmark = [pytest.mark.ray, pytest.mark.bwrap, pytest.mark.slow, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parent.parent

try:
    import ray

    HAVE_RAY = True
except ImportError:  # pragma: no cover - depends on the extra
    HAVE_RAY = False


@dataclass
class _Node:
    temp_dir: Path
    session_dir: Path
    #: A file beside the temp dir, outside any Ray directory: the task must still read it.
    control: Path


@pytest.fixture(scope="module")
def node() -> Iterator[_Node]:
    require(HAVE_RAY, "ray is not installed (pip install 'shellrt[ray]')")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    require(not ray.is_initialized(), "another test left Ray connected")
    # Outside /tmp (a bwrap task's /tmp is private) and short: Ray's socket paths live below it.
    base = Path(tempfile.mkdtemp(prefix="rt16-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    # ray.init writes a cluster token to ~/.ray/auth_token: in the real home it turned token
    # authentication on for the other workers' Ray tests running meanwhile (CI2: two failed).
    # And ray.init leaves RAY_AUTH_MODE=token in this process's environment after ray.shutdown:
    # every later subprocess of this xdist worker then asked its Ray for a token (CI3).
    saved_environ = dict(os.environ)
    os.environ["HOME"] = str(base / "home")
    (base / "home").mkdir()
    try:
        control = base / "control.txt"
        control.write_text("control-visible\n")
        control.chmod(0o644)
        temp_dir = base / "r"
        ray.init(
            _temp_dir=str(temp_dir),
            num_cpus=2,
            include_dashboard=False,
            logging_level="ERROR",
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}},
        )
        try:
            session = Path(ray._private.worker._global_node.get_session_dir_path())
            yield _Node(temp_dir=temp_dir, session_dir=session, control=control)
        finally:
            ray.shutdown()
    finally:
        os.environ.clear()
        os.environ.update(saved_environ)
        shutil.rmtree(base, ignore_errors=True)


def _run(tasks: list[dict[str, object]], tmp_path: Path) -> dict[str, object]:
    from shellrt.batch import Task, TaskFloor, run_sync

    refused: list[str] = []
    results = run_sync(
        [Task.model_validate(t) for t in tasks],
        ray_address="auto",
        floor=TaskFloor(),  # the CLI's default floor: an untrusted task file
        on_refused=lambda task, _e: refused.append(task.id),
        artifacts_dir=tmp_path / "art",
        ray_options={"node_artifacts_dir": str(tmp_path / "node-art"), "scratch_dir": str(tmp_path / "s")},
    )
    return {"refused": refused, **{r.id: r for r in results}}


def test_a_bwrap_task_cannot_read_the_nodes_ray_files(node: _Node, tmp_path: Path) -> None:
    # What another job left on the node: its workers' logs, its runtime_env package, a spilled object.
    planted = {
        node.session_dir / "logs" / "worker-otherjob.out": "RAYLOG-SECRET-1",
        node.session_dir / "runtime_resources" / "working_dir_files" / "pkg" / "key.txt": "RAYPKG-SECRET-2",
        node.session_dir / "ray_spilled_objects_x" / "obj": "RAYSPILL-SECRET-3",
    }
    for path, text in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        path.chmod(0o644)  # as Ray leaves them (umask 022; its directories are 0777)
    reads = "; ".join(f"cat {p} 2>&1" for p in planted)
    results = _run(
        [
            {
                "id": "peek",
                "sandbox": "bwrap",
                "commands": [f"cat {node.control}", f"{reads}; ls -R {node.temp_dir} 2>&1 | head -50"],
            },
            # Any backend, any temp dir (``/tmp/ray`` too): the node copies a workspace for the task.
            {
                "id": "copy",
                "sandbox": "bwrap",
                "workspace": str(node.session_dir / "ray_spilled_objects_x"),
                "commands": ["cat obj"],
            },
        ],
        tmp_path,
    )
    peek = results["peek"]
    control, probe = peek.commands  # type: ignore[attr-defined]
    # The attack is real: the task sees the host's /var/tmp (the control file beside the Ray dir).
    assert control.exit_code == 0 and control.preview == "control-visible\n", (peek.error, control)  # type: ignore[attr-defined]
    shown = (probe.preview or "") + (probe.stderr or "")
    for text in planted.values():
        assert text not in shown, f"a bwrap task read the node's Ray files: {shown[:500]!r}"
    assert "copy" not in results["refused"], "the driver's floor refused it: the attack did not reach a node"  # type: ignore[operator]
    copy = results["copy"]
    copied = "".join((c.preview or "") + (c.stderr or "") for c in copy.commands)  # type: ignore[attr-defined]
    assert "RAYSPILL-SECRET-3" not in copied, f"a task's workspace copy held the node's Ray files: {copy}"
    assert copy.status == "error" and "masked" in (copy.error or ""), copy  # type: ignore[attr-defined]
    # Nor list them: the session's sockets (raylet, plasma_store) are names a listing would show.
    assert "plasma_store" not in shown and "ray_current_cluster" not in shown, shown[:500]


def test_a_task_cannot_ask_for_more_than_its_nodes_share(node: _Node, tmp_path: Path) -> None:
    from shellrt.batch.ceilings import machine_ceilings

    share = machine_ceilings(2)  # this machine is the node; 2 slots (num_cpus)
    assert share.pids is not None and share.memory_bytes is not None
    results = _run(
        [
            {
                "id": "greedy",
                "sandbox": {"type": "bwrap", "limits": {"pids": share.pids * 50}},
                "commands": ["true"],
            },
            {"id": "modest", "sandbox": {"type": "bwrap", "limits": {"pids": 128}}, "commands": ["true"]},
            {
                "id": "hungry",
                "sandbox": {"type": "bwrap", "limits": {"memory_bytes": share.memory_bytes * 8}},
                "commands": ["true"],
            },
        ],
        tmp_path,
    )
    for name in ("greedy", "hungry"):
        result = results.get(name)
        refused_here = name in results["refused"]  # type: ignore[operator]
        refused_on_node = getattr(result, "status", None) == "error" and "above node" in (
            getattr(result, "error", None) or ""
        )
        assert refused_here or refused_on_node, f"{name} ran with limits above the node's share: {result}"
        if refused_on_node:
            assert ("--pids" if name == "greedy" else "--memory") in result.error  # type: ignore[attr-defined]
    # Tightening stays allowed: the check refuses only what is above the share.
    assert results["modest"].status == "ok", results["modest"]  # type: ignore[attr-defined]


def test_ray_node_paths_fall_back_to_the_session_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No cluster: a temp dir that holds the tasks' scratch (``--temp-dir /tmp``) cannot be masked
    whole; its session dir and a spill directory configured elsewhere still are."""
    require(HAVE_RAY, "ray is not installed (pip install 'shellrt[ray]')")
    from shellrt.batch import ray_runner

    temp = tmp_path / "t"
    session = temp / "session_1"
    spill = tmp_path / "spill"
    for d in (session, spill, temp / "scratch"):
        d.mkdir(parents=True)

    class _FakeNode:
        _config = {
            "object_spilling_config": f'{{"type": "filesystem", "params": {{"directory_path": "{spill}"}}}}'
        }

        def get_temp_dir_path(self) -> str:
            return str(temp)

        def get_session_dir_path(self) -> str:
            return str(session)

    monkeypatch.setattr(ray._private.worker, "_global_node", _FakeNode(), raising=False)
    # The private node is the fallback since round 17 (the public ray.nodes() comes first).
    monkeypatch.setattr(ray_runner, "_public_node_dirs", lambda: (None, None))
    assert ray_runner.ray_node_paths(str(temp / "scratch")) == (str(session), str(spill))
    assert ray_runner.ray_node_paths(str(tmp_path / "elsewhere")) == (str(temp), str(spill))
