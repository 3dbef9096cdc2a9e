"""A batch task must not read another running task's private directory (workspace, spools).

Each task works in a 0700 directory of its own under the run's ``scratch_dir`` (the Python API's
`LocalRunner` and the Ray runner take one). bwrap shows the host read-only and a non-root caller's
tasks all run as its uid, so with a ``scratch_dir`` outside the temp dir a task read every other
running task's workspace copy: its hidden tests, its answers (red team round 20). bwrap hides /tmp
and the host's temp dir from every sandbox, so a scratch dir there is out of reach; one elsewhere
is now refused for a non-root caller's bwrap tasks, with what to do instead.

Non-root only (a root caller's tasks run as leased uids, which cannot enter root's 0700
directories): the attack runs as uid 65534 in the prepared tree of `tests._nonroot`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from tests import _nonroot
from tests.conftest import require

_SECRET = "HIDDEN-TESTS-OF-TASK-A-5207"

#: Run as uid 65534: task A keeps a secret in its workspace while task B looks for it below the
#: scratch dir; once with a scratch dir outside the temp dir, once under /tmp.
_PROBE = r"""
import json, sys, tempfile
from pathlib import Path
import anyio
from shellrt.batch import Task
from shellrt.batch.local import LocalRunner

SECRET, OUTSIDE = sys.argv[1], Path(sys.argv[2])

def tasks(scratch):
    spy = (f"for i in $(seq 20); do cat {scratch}/shellrt-batch-a-*/workspace/answer.txt 2>/dev/null"
           " && break; sleep 0.1; done; echo spied")
    return [
        Task.model_validate({"id": "a", "sandbox": "bwrap",
                             "commands": [f"echo {SECRET} > answer.txt; sleep 2; cat answer.txt"]}),
        Task.model_validate({"id": "b", "sandbox": "bwrap", "commands": [spy]}),
    ]

async def one(scratch):
    runner = LocalRunner(concurrency=2, prestart=0, scratch_dir=scratch)
    out = {}
    async with runner.open(tasks(scratch)) as results:
        async for r in results:
            out[r.id] = {"error": r.error, "previews": [c.preview for c in r.commands]}
    return out

async def main():
    inside = Path(tempfile.mkdtemp(prefix="shellrt-r20-scratch-", dir="/tmp"))
    print(json.dumps({"outside": await one(OUTSIDE), "inside": await one(inside)}))

anyio.run(main)
"""


def test_a_task_cannot_read_another_tasks_scratch_as_nonroot() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed (util-linux)")
    outside = Path(tempfile.mkdtemp(prefix="shellrt-r20-scratch-", dir="/var/tmp"))
    outside.chmod(0o1777)
    dists = _nonroot.with_requirements(_nonroot.loaded_distributions() + ["anyio", "pydantic"])
    try:
        with _nonroot.shared_run(dists) as run:
            proc = run.python(
                _PROBE.replace("sys.argv[1], Path(sys.argv[2])", f"{_SECRET!r}, Path({str(outside)!r})")
            )
            # Its /tmp scratch dirs are uid 65534's: removed with the run's own files below.
            for left in Path("/tmp").glob("shellrt-r20-scratch-*"):
                shutil.rmtree(left, ignore_errors=True)
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    spied = seen["outside"]["b"]
    # Before: B printed A's secret (read through the host view of the scratch dir).
    assert not any(_SECRET in p for p in spied["previews"]), spied
    for task in ("a", "b"):
        error = seen["outside"][task]["error"] or ""
        assert "scratch_dir" in error and "TMPDIR" in error, seen["outside"]
    # Under /tmp (bwrap's own /tmp in every sandbox) tasks run, and still see nothing of each other.
    inside = seen["inside"]
    assert inside["a"]["error"] is None and _SECRET in inside["a"]["previews"][0], inside
    assert inside["b"]["error"] is None and inside["b"]["previews"][0].strip() == "spied", inside
