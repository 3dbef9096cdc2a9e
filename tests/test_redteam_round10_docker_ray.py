"""Red team round 10, Ray: one node's malformed answer ended the whole run, or wrote what it liked.

The driver turned each payload into a result with no guard: a payload that was not a result
(``{"result": "x"}``), a shipped file named ``.`` or a name that is both a file and a
directory raised out of the receive loop, so one node (escaped, or of another version) ended
the whole batch with an exception and every other task's result was lost. A payload could also
ship files its result never listed, and more bytes than the run's ``max_export_bytes``: the
driver wrote them all to its disk. Now a payload is checked whole before anything is written:
any fault is an error result for the task its call was for, only the files the result lists
are written, each a plain relative name, at most ``max_export_bytes`` in all.

No cluster is needed: the payload goes through the driver's real receive path.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from shellrt.batch.results import TaskResult
from shellrt.batch.tasks import Task
from tests.conftest import require

_NODE = "n" * 32


def _receive(tmp_path: Path, payload: dict[str, Any], max_export_bytes: int = 1 << 20) -> TaskResult:
    require(find_spec("ray") is not None, "ray is not installed")
    from shellrt.batch.ray_runner import RayRunner, _Node

    runner = RayRunner("auto", artifacts_dir=tmp_path / "artifacts", max_export_bytes=max_export_bytes)
    task = Task.model_validate({"id": "a", "commands": ["true"]})
    return runner._receive(payload, task, 1, _Node(node_id=_NODE, label=None, slots=1, actor=None))


def _result(files: list[str]) -> dict[str, Any]:
    made = TaskResult(
        id="a", status="ok", backend="docker", node=_NODE, started_at=1.0, ended_at=2.0, files=files
    )
    return made.model_dump(mode="json")


@pytest.mark.parametrize(
    "payload",
    [
        {"result": "not a result"},
        {},
        {"result": _result(["."]), "files": {".": b"x"}},
        {"result": _result(["d", "d/e"]), "files": {"d": b"x", "d/e": b"y"}},
        {"result": _result(["f"]), "files": {"f": "text, not bytes"}},
        {"result": _result(["f"]), "files": ["f"]},
    ],
    ids=["not-a-result", "empty", "dot", "file-and-dir", "str-data", "files-a-list"],
)
def test_a_malformed_payload_is_an_error_result_not_the_end_of_the_run(
    tmp_path: Path, payload: dict[str, Any]
) -> None:
    result = _receive(tmp_path, payload)
    assert result.id == "a" and result.status == "error"
    assert "node nnnnnnnnnnnn" in (result.error or "")


def test_only_the_files_a_result_lists_are_written_within_the_export_bound(tmp_path: Path) -> None:
    files = {"listed.txt": b"ok\n", "extra/unlisted.bin": b"x" * 100}
    result = _receive(tmp_path, {"result": _result(["listed.txt"]), "files": files})
    assert result.status == "error" and "unlisted" in (result.error or "")
    assert not (tmp_path / "artifacts" / "a" / "files" / "extra").exists()

    big = {"result": _result(["big"]), "files": {"big": b"y" * 2000}}
    result = _receive(tmp_path, big, max_export_bytes=1000)
    assert result.status == "error" and "1000" in (result.error or "")
    assert not (tmp_path / "artifacts" / "a" / "files" / "big").exists()

    good = _receive(tmp_path, {"result": _result(["listed.txt"]), "files": {"listed.txt": b"ok\n"}})
    assert good.status == "ok"
    assert (tmp_path / "artifacts" / "a" / "files" / "listed.txt").read_bytes() == b"ok\n"
