"""Red team round 9, docker: attempts that held (each a test that would fail if it worked).

* Device nodes in a bind-mounted workspace (a host ``mknod``, a root-extracted tarball): the
  mount is not ``nodev``, but docker's device cgroup refuses every device outside its short list
  (``/dev/mem``'s 1:1, a loop device 7:0, char and block): EPERM at ``open``.
* Signals a root command sends to docker-init that keep their default action there (SEGV, ABRT,
  BUS, FPE, ILL, TRAP, SYS, TTIN, TTOU) or that it forwards: the kernel drops the first from
  inside the namespace, the executor ignores the rest; the session goes on.
* An image's labels naming shellrt's keys: the container's own labels win, the owner is this
  process.

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, build_image, config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_device_nodes_in_a_bound_workspace_cannot_be_opened(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "mknod needs root")
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, kind, dev in (
        ("mem", 0o020000, (1, 1)),
        ("loopc", 0o020000, (7, 0)),
        ("loopb", 0o060000, (7, 0)),
    ):
        os.mknod(ws / name, kind | 0o666, os.makedev(*dev))
        os.chmod(ws / name, 0o666)
    async with DockerBackend(config(workspace_mode="bind"), policy(ws)) as backend:
        for name in ("mem", "loopc", "loopb"):
            code, out = await run_sh(backend, f"head -c 1 {name} >/dev/null && echo OPENED")
            assert "OPENED" not in out and "not permitted" in out, (name, code, out)


async def test_signals_to_docker_init_leave_the_session_running(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(user="0:0"), policy(tmp_path)) as backend:
        signals = "SEGV ABRT BUS FPE ILL TRAP SYS TTIN TTOU TERM INT HUP USR1 QUIT"
        code, out = await run_sh(backend, f"for s in {signals}; do kill -$s 1; done; sleep 1; echo alive")
        assert out.strip().endswith("alive"), out
        assert await run_sh(backend, "echo still") == (0, "still\n")
        assert backend.recoveries == []


async def test_an_images_labels_cannot_claim_shellrts(tmp_path: Path) -> None:
    require_docker()
    image = "shellrt-test-rt9-labelled"
    dockerfile = (
        f'FROM {BUSYBOX}\nLABEL shellrt.owner-pid="1" shellrt.session="forged" shellrt.io-dir="/etc"\n'
    )
    build_image(image, dockerfile)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        assert backend.container_id is not None
        labels = json.loads(
            subprocess.run(
                ["docker", "inspect", "-f", "{{json .Config.Labels}}", backend.container_id],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout
        )
        assert labels["shellrt.owner-pid"] == str(os.getpid())
        assert labels["shellrt.session"] == backend.session_id
        assert labels["shellrt.io-dir"] != "/etc"
