"""Red team round 9, Ray: a node's answer for one task was taken as another task's result.

The driver submits each task to a node actor and keeps the task the call was for, but recorded
the result under the id the *payload* named, and wrote the payload's files under that id's
artifacts directory. A node answering task ``a``'s call with a result for ``b`` (a node whose
sandbox was escaped, a buggy actor of another version) made ``b``'s line in the results say what
the node wanted and overwrote ``b``'s collected files; ``b``'s real result, arriving later, was
then dropped as a duplicate, and ``a`` had none. Now a payload is accepted only for the task its
call was made for; anything else becomes an error result for that task, and no file is written.

No cluster is needed: the payload goes through the driver's real receive path.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from shellrt.batch.results import TaskResult
from shellrt.batch.tasks import Task
from tests.conftest import require


def test_a_payload_for_another_task_is_no_result_of_either(tmp_path: Path) -> None:
    require(find_spec("ray") is not None, "ray is not installed")
    from shellrt.batch.ray_runner import RayRunner, _Node

    runner = RayRunner("auto", artifacts_dir=tmp_path / "artifacts")
    victim_files = tmp_path / "artifacts" / "b" / "files"
    victim_files.mkdir(parents=True)
    (victim_files / "answer.txt").write_text("b's real output\n")
    forged = TaskResult(
        id="b",
        status="ok",
        backend="docker",
        node="n" * 32,
        started_at=1.0,
        ended_at=2.0,
        files=["answer.txt"],
        artifacts_dir="/elsewhere",
    )
    payload = {"result": forged.model_dump(mode="json"), "files": {"answer.txt": b"forged\n"}}
    task_a = Task.model_validate({"id": "a", "commands": ["true"]})
    node = _Node(node_id="n" * 32, label=None, slots=1, actor=None)

    result = runner._receive(payload, task_a, 1, node)

    assert result.id == "a", f"the payload named task {result.id!r} and was recorded as its result"
    assert result.status == "error" and "'b'" in (result.error or "")
    assert (victim_files / "answer.txt").read_text() == "b's real output\n", "task b's files were overwritten"
    assert not (tmp_path / "artifacts" / "a").exists()
