"""Red team round 9, docker: where the workspace is mounted handed the command the executor.

``DockerConfig.container_workspace`` was any string, and a batch task file may set it (it was no
"widening" key). The workspace is the command's own, writable; mounted over a directory the
executor executes or reads from, the command supplies those files. At ``/usr/local/bin`` (first
on the executor's ``PATH``) a task's ``rm`` ran as the executor's identity, with its
capabilities, when the pool reset the container for the next task (the reset empties /tmp with
``rm``): the executor's uid can trace the executor and holds the channel every later task's
exit codes and files go through. The same at ``/usr/bin``, ``/bin``, the loader's ``/lib*``,
``/etc`` (``ld.so.preload``, and the ``passwd`` per-call users resolve from), ``/`` and shellrt's
own ``/.shellrt-*``. Such a place is now refused before the container is made, naming the key.

Real containers (FAIL, not skip, under CI=true), as root (recycling needs a root host).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, ExecRequest
from sandbox.docker import DockerBackend, ResetError
from tests._docker_support import config, policy, require_docker
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_PLANT = r"""cat > rm <<'EOF'
#!/bin/sh
: > "/.shellrt-priv/ran-as-$(id -u)"
for a; do case $a in /.shellrt-priv/ran-as-*|-*) ;; *) /bin/rm -rf -- "$a" ;; esac; done
EOF
chmod 755 rm && touch /tmp/leftover"""


@pytest.mark.parametrize("place", ["/usr/local/bin", "/etc", "/", "/lib64", "/.shellrt-priv/x", "/usr"])
async def test_the_workspace_cannot_cover_what_the_executor_runs_or_reads(tmp_path: Path, place: str) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    backend = DockerBackend(config(container_workspace=place), policy(tmp_path))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        assert "container_workspace" in str(exc), exc
        return
    async with backend:
        if place != "/usr/local/bin":
            pytest.fail(f"a workspace mounted at {place} was accepted")
        await backend.protect_executor()
        proc = await backend.exec(
            ExecRequest(
                argv=("sh", "-c", _PLANT), cwd=place, env={"PATH": "/usr/bin:/bin"}, merge_stderr=True
            )
        )
        await proc.wait()
        with anyio.fail_after(30):
            try:
                await backend.reset()
            except ResetError as exc:
                if "ran-as-2147480001" in str(exc):
                    pytest.fail(f"the task's rm ran as the executor during the reset: {exc}")
                raise
        pytest.fail(f"a workspace mounted at {place} was accepted")
