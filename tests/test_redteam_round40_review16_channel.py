"""Red team round 40, review16: the executor's channel through the ``fd`` directory bound back.

Round 40 docker3 covers ``/proc/<executor>`` but binds the executor's own ``fd`` directory back
on top (it names its detached I/O directory ``/proc/self/fd/8``). The original report was docker
commands forging exit codes through the executor's channel: fd 0/1 (the ``docker attach`` stream:
requests in, ``X <id> <rc>`` events out), fd 8 (the detached I/O directory) under
``root_can_administer``. Whoever opens one of them for writing forges an exit code or a request.
Also reachable: the command's own parent (``priv``) and runner, which inherit the same
descriptors, and the same entries through ``/proc/<pid>/root/proc/...`` and ``task/<tid>/fd``.

Held (no finding): every one is the executor's uid with capabilities no command holds, so the
kernel's ptrace check refuses the magic links to every identity (the session's, per-call root,
root_can_administer's root with DAC_OVERRIDE, nobody). Pinned here, opened for append with no byte
written. A real container (FAIL, not skip, under CI=true), as root (the cover needs a root host).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Every fd (0-31) of the executor ($E), this command's priv helper and its runner, by four paths,
#: opened for append (nothing is written), read and listed; prints what opened.
_PROBE = (
    'P=$PPID; R=$(cut -d" " -f4 /proc/$P/stat); n=0;'
    " while [ $n -lt 32 ]; do for q in $E $P $R; do"
    " for f in /proc/$q/fd/$n /proc/$q/task/$q/fd/$n /proc/self/root/proc/$q/fd/$n /proc/$$/root/proc/$q/fd/$n; do"
    ' ( : >>"$f" ) 2>/dev/null && echo "wrote $f"; ( : <"$f" ) 2>/dev/null && echo "read $f";'
    " done; done; n=$((n+1)); done;"
    ' for q in $E $P $R; do readlink /proc/$q/fd/1 2>/dev/null && echo "followed $q"; done;'
    " echo done"
)


@pytest.mark.parametrize(("image", "admin"), [(DEBIAN, False), (BUSYBOX, False), (BUSYBOX, True)])
async def test_no_command_opens_the_executors_channel(tmp_path: Path, image: str, admin: bool) -> None:
    require_docker()
    require(os.geteuid() == 0, "the /proc cover and root_can_administer need a root host")
    async with DockerBackend(config(image, root_can_administer=admin), policy(tmp_path)) as backend:
        executor = backend.executor_pid
        assert executor is not None
        for user in (None, "root", "nobody"):
            code, said = await run_sh(backend, f"E={executor}; {_PROBE}", user=user)
            assert (code, said) == (0, "done\n"), (user, said)
        # The probe sees what opens: the command's own descriptors do.
        code, said = await run_sh(backend, f"E=$$; {_PROBE}")
        assert "wrote /proc/" in said and said.endswith("done\n"), said
        # The channel still works: the executor's exit codes are the commands' own.
        code, said = await run_sh(backend, "echo ok; exit 7")
        assert (code, said) == (7, "ok\n")
