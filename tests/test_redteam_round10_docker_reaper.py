"""Red team round 10, docker: the reaper removed a live session of another PID namespace.

Every docker start reaps the containers whose owner is gone, judged by the ``shellrt.owner-pid``
and ``owner-start`` labels when ``owner-host`` is this hostname. Two shellrt processes in two
containers that share the hostname and the daemon (CI jobs run with ``--network host``, which
gives a container the host's name, and the docker socket) have separate PID namespaces: the one
starting looked up the other's pid in its own namespace, found another process or none, and
force-removed the other's running containers (volumes included) in the middle of its run. The
owner is now also named by its boot and PID namespace (``shellrt.owner-ns``); an owner in
another namespace cannot be judged from here and is left alone.

A real container and a real live owner in a new PID namespace (FAIL, not skip, under CI=true);
the test removes only what it made.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.docker._client import connect
from sandbox.docker._gc import reap_orphans
from tests._docker_support import BUSYBOX, require_docker
from tests.conftest import require

pytestmark = [pytest.mark.docker]

_OWNER = (
    "import json, sys, time\n"
    "from sandbox.docker._labels import session_labels\n"
    "print(json.dumps(session_labels(sys.argv[1], '', '')), flush=True)\n"
    "time.sleep(300)\n"
)


def test_a_live_owner_in_another_pid_namespace_keeps_its_container() -> None:
    require_docker()
    require(os.geteuid() == 0, "unshare --pid needs root")
    session = secrets.token_hex(6)
    owner = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable, "-c", _OWNER, session],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    name = f"shellrt-{session}"
    try:
        assert owner.stdout is not None
        labels = json.loads(owner.stdout.readline())
        flags = [f"--label={k}={v}" for k, v in labels.items()]
        subprocess.run(
            ["docker", "run", "-d", "--name", name, "--label", "shellrt-test=rt10-reaper", *flags,
             "--network", "none", BUSYBOX, "sleep", "600"],
            capture_output=True,
            check=True,
            timeout=60,
        )  # fmt: skip
        reap_orphans(connect(None), None)
        alive = subprocess.run(["docker", "inspect", name], capture_output=True, timeout=30)
        assert alive.returncode == 0, (
            "the reaper removed the live container of another PID namespace's shellrt"
        )
    finally:
        owner.kill()
        owner.wait(10)
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
