"""Round 27: an artifacts directory another user made first got every task's outputs.

The CLI's artifacts directory is ``<out>.artifacts`` by default: with ``--out
/tmp/results.jsonl`` any local user can make ``/tmp/results.jsonl.artifacts`` before the run
(``mkdir(exist_ok=True)`` took it as it was) and put a link where a task's directory goes. The
harness (root here) then wrote the task's ``cmd-0.out`` where the link pointed, into a directory
of theirs (collected files too: ``files/authorized_keys`` wherever they like), and they read every
task's outputs. The run now makes the directory 0700 or takes it only when it is the caller's and
no one else may write it (`claim_artifacts_dir`): the CLI refuses the run, each task (Python,
Ray nodes) is ``error`` naming ``--artifacts``. Real bwrap, real CLI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shellrt.batch import Task, run_sync
from shellrt.batch.artifacts_dir import claim_artifacts_dir
from tests._batch_helpers import run_cli
from tests._bwrap_session import require_bwrap


def _planted(root: Path, name: str) -> tuple[Path, Path]:
    """``root/name``: a directory anyone may write (another user's when we are root), whose ``a``
    is a link to ``root/elsewhere``."""
    planted, elsewhere = root / name, root / "elsewhere"
    planted.mkdir()
    elsewhere.mkdir(exist_ok=True)
    (planted / "a").symlink_to(elsewhere)
    for path in (planted, elsewhere):
        path.chmod(0o777)
        if os.geteuid() == 0:
            os.chown(path, 65534, 65534)
    return planted, elsewhere


def test_a_planted_artifacts_directory_is_refused(tmp_path: Path) -> None:
    require_bwrap()
    tmp_path.chmod(0o755)
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    tasks.write_text(json.dumps({"id": "a", "commands": ["echo SECRET"], "collect": {"output": "full"}}) + "\n")
    _, elsewhere = _planted(tmp_path, "results.jsonl.artifacts")
    proc = run_cli("run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q")
    assert proc.returncode == 2 and "--artifacts DIR" in proc.stderr, proc.stderr
    assert not out.exists() and list(elsewhere.iterdir()) == []

    # The Python API (and a Ray node) checks it at each task: an error, nothing written.
    planted, _ = _planted(tmp_path, "api-artifacts")
    [result] = run_sync([Task.model_validate(json.loads(tasks.read_text()))], concurrency=1, prestart=0,
                        artifacts_dir=planted)
    assert result.status == "error" and "--artifacts DIR" in (result.error or ""), result
    assert list(elsewhere.iterdir()) == []

    own = tmp_path / "own"
    claim_artifacts_dir(own)  # made 0700, then taken again as it is (--resume)
    claim_artifacts_dir(own)
    assert own.stat().st_mode & 0o777 == 0o700
    (tmp_path / "link").symlink_to(own)
    claim_artifacts_dir(tmp_path / "link")  # the caller's own link to the caller's own directory
    with pytest.raises(PermissionError, match="not a directory"):
        (tmp_path / "file").write_text("")
        claim_artifacts_dir(tmp_path / "file")
