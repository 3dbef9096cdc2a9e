"""Red team, round 28 (supbatch): a full disk under the results file crashed the batch run.

A task fills the disk that also holds ``--out`` (one /tmp for the temp dir and the results: the
round 27 "Left"). Appending the next result line then failed: the run ended in a traceback
(``ExceptionGroup ... OSError: [Errno 28] No space left on device``), leaving the part of the line
that fitted. The writer now takes that part back out and raises `ResultsWriteError`, which says
what happened and what to do (free space, then ``--resume``); ``shellrt batch run`` prints it and
exits 1. Root only (tmpfs of the test's own); FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.batch import ResultWriter, TaskResult
from shellrt.batch.results import ResultsWriteError
from tests._local_session import mount_tmpfs
from tests.conftest import require


def test_a_result_line_on_a_full_disk_is_taken_back_and_said(tmp_path: Path) -> None:
    """Failed before (1 of 1): a bare ``OSError: [Errno 28]`` and a partial line left in the file."""
    require(os.geteuid() == 0, "mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "size=64k")
    try:
        out = disk / "results.jsonl"
        big = TaskResult.model_validate({"id": "big", "status": "ok", "error": "x" * 200_000})
        with ResultWriter(out) as writer:
            writer.write(TaskResult.model_validate({"id": "first", "status": "ok"}))
            kept = out.read_bytes()
            with pytest.raises(ResultsWriteError) as caught:
                writer.write(big)
        message = str(caught.value)
        assert "results.jsonl" in message and "No space left" in message and "--resume" in message, message
        assert out.read_bytes() == kept  # the part that fitted was taken back: the file stays valid
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
