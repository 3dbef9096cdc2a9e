"""Red team round 49 (hostread): the batch floor's refusal of a private workspace advised a fix that fixes nothing.

A root harness refuses a task whose workspace holds what some user cannot read (`TaskFloor`,
`sandbox._private_source.first_private`, which since round 48 reads the owning group and ACLs as
the kernel does). Its text still said "chmod -R o+rX" (round 48 perms8's Left): a 0604 file whose
group is the sandbox user's stays closed to that group after it, so an operator who followed the
advice got the same refusal again. The test follows the advice literally, then asks again.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.batch.floor import TaskFloor, TaskRefused
from shellrt.batch.tasks import Task
from tests.conftest import require

U = 0x7E00014A  # a uid (and gid) of the lease pool's kind: the sandbox user's group owns the file


@pytest.fixture
def top() -> Iterator[Path]:
    require(os.geteuid() == 0, "only a root harness copies with more rights than its sandbox user")
    where = Path(tempfile.mkdtemp(prefix="rt49-hostread-floor-", dir="/var/tmp"))
    try:
        where.chmod(0o755)
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _judged(ws: Path) -> str | None:
    task = Task.model_validate({"id": "t1", "workspace": str(ws), "commands": ["true"], "sandbox": "bwrap"})
    try:
        TaskFloor(allow_private_workspace=False).apply(task)
    except TaskRefused as exc:
        return str(exc)
    return None


def test_following_the_refusals_advice_opens_a_group_closed_file(top: Path) -> None:
    """Failed before: the advice (`chmod -R o+rX`) left the 0604 file closed to its group; refused again."""
    ws = top / "ws"
    ws.mkdir(mode=0o755)
    secret = ws / "data.txt"
    secret.write_text("row\n")
    os.chown(secret, 0, U)
    secret.chmod(0o604)  # the owning group (the sandbox user's) gets ---
    said = _judged(ws)
    assert said is not None and "data.txt" in said, said
    commands = re.findall(r"\bchmod [^)`;]+", said)
    assert commands, f"the refusal names no chmod to run: {said}"
    for command in commands:
        argv = shlex.split(command)
        if not any(a.startswith("/") for a in argv):
            argv.append(str(ws))  # advice without a path: applied to the workspace
        subprocess.run(argv, check=True, cwd=top)
    again = _judged(ws)
    assert again is None, f"the advised fix did not open the workspace: {again}"
