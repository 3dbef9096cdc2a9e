"""Round 27: a failed check was reported ``ok`` (the Bash tool's exit meanings in a harness).

A batch shell command failed only when its exit was not one of the Bash tool's documented
"answers" (grep/diff/cmp 1, test/[ 1), judged by the *name* of the last program in the
command's text. For a benchmark that is the wrong rule: ``grep -q PASSED log``, ``diff
expected actual`` and ``test -f done`` are how harnesses score, and exit 1 is the failed
verdict. A task whose solution failed was ``ok`` (``is_error`` false, later commands of a
``stop_on_failure`` task still ran), and a hostile repository's own script named ``test``
(``./test``: only the basename counted) exiting 1 was ``ok`` too. A batch shell command now
fails on any non-zero exit (``ok`` means every command exited 0, as docs/batch.md says).
Real bwrap, real CLI.
"""

from __future__ import annotations

from pathlib import Path

from tests._batch_helpers import run_tasks
from tests._bwrap_session import require_bwrap


def test_a_failed_check_is_not_ok(tmp_path: Path) -> None:
    require_bwrap()
    tasks = [
        {"id": "grep", "commands": ["echo 'tests FAILED' > log; grep -q PASSED log"]},
        {"id": "diff", "commands": ["echo 1 > want; echo 2 > got; diff want got"],
         "stop_on_failure": True},
        {"id": "repo-test", "commands": ["printf '#!/bin/sh\\nexit 1\\n' > test; chmod +x test; ./test",
                                         {"argv": ["test", "-f", "passed"]}, "echo later"],
         "stop_on_failure": True},
    ]
    proc, results = run_tasks(tmp_path, tasks, jobs=2)
    assert proc.returncode == 0, proc.stderr
    for task_id in ("grep", "diff", "repo-test"):
        result = results[task_id]
        assert result["status"] == "failed", result
        first = result["commands"][0]
        assert first["exit_code"] == 1 and first["is_error"], first
    assert len(results["diff"]["commands"]) == 1
    assert len(results["repo-test"]["commands"]) == 1  # stop_on_failure stopped at ./test
