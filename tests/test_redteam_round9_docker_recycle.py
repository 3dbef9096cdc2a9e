"""Red team round 9, docker: what one task leaves on a recycled container for the next.

A reset kills every process, empties /tmp, /dev/shm, /dev/mqueue, the executor's tmpfs, SysV
IPC and the workspace, and judges the rest from outside. One inode survives it: the workspace
root itself (the bind mount's source; only what is *in* it is removed). Its owner is the
command user, so a task could leave data on it that no wipe touched: extended attributes
(``user.*``, and POSIX ACLs, which are ``system.*`` xattrs) and inode flags (``chattr``). The
next task on the same container read them: a storage channel from one benchmark task to the
next (answers, a dataset's labels). Now the host returns that inode to the state it had when
it was made (xattrs, inode flags) and refuses the container if it cannot.

Real containers (FAIL, not skip, under CI=true), as root: recycling needs a root host.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_argv
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_SET = r"""$p="/workspace"; $n="user.rt9"; $v="ANSWER-42"; print syscall(188, $p, $n, $v, 9, 0), "\n";"""
_GET = r"""$b="\0" x 64; $p="/workspace"; $n="user.rt9"; $r=syscall(191, $p, $n, $b, 64);
print "xattr[", ($r > 0 ? substr($b, 0, $r) : ""), "]\n";"""


async def test_the_workspace_root_carries_nothing_to_the_next_task(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        assert (await run_argv(backend, "perl", "-e", _SET)).strip() == "0", "setxattr on /workspace failed"
        # Round 14: the commands' filter refuses setting inode flags (`sandbox._seccomp`); set one
        # from outside it (docker exec as root) so that the reset's restore is still exercised.
        refused = await run_argv(backend, "sh", "-c", "chattr +d /workspace")
        assert "Operation not permitted" in refused, refused
        subprocess.run(
            ["docker", "exec", "--user", "0", str(backend.container_id), "chattr", "+d", "/workspace"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        flags = await run_argv(backend, "lsattr", "-d", "/workspace")
        assert "d" in flags.split()[0], flags
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(second))
        seen = await run_argv(backend, "perl", "-e", _GET)
        assert seen.strip() == "xattr[]", f"the next task read the previous task's xattr: {seen!r}"
        left = await run_argv(backend, "lsattr", "-d", "/workspace")
        assert "d" not in left.split()[0], f"the next task saw the previous task's inode flags: {left!r}"
        # The container still serves the next task normally.
        assert (await run_argv(backend, "sh", "-c", "echo ok > f && cat f")) == "ok\n"
