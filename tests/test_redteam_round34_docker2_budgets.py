"""Red team, round 34 (docker): host-wide kernel budgets reached from a container.

The kernel counts ptys for the whole host: ``kernel.pty.max`` (4096) less ``kernel.pty.reserve``
(1024) for every devpts instance but the host's own -- each container's, each bwrap sandbox's.
Docker (runc) gives a container a devpts with no ``max=``: a command opening ``/dev/ptmx`` until it
failed held every pty of every other container and sandbox on the host (round 33 capped bwrap's;
its Left named docker's). The host now mounts a devpts of at most `PTY_MAX` over the container's
``/dev/pts`` before anything of the image runs (`sandbox.docker._ptys`), so the executor's shell
and every command, the per-call root one included, share 64.

``io_setup(nr_events)`` reserves events against ``fs.aio-max-nr``, one host counter. Commands were
already refused it (the command filter, round 33); the executor's shell, which is the image's own
``/bin/sh`` (round 33 docker: a hostile image's author), ran under docker's profile and the set-id
rules alone, and one ``io_setup(65536)`` took the host's whole budget. ``priv`` now answers it
ENOSYS for the executor and everything it starts.

Real containers of the test images and a static probe built here with gcc (FAIL, not skip, under
CI=true).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox._devtree import PTY_MAX
from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_sh
from tests._rt11_hostile import build_hostile
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: ``aio``: one io_setup of the host's whole default budget. ``pty``: ptys opened until the first
#: failure (at most 400: far above the cap, far below the host's pool), then one pty, both ends,
#: once they are closed.
_PROBE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "aio")) {
        unsigned long ctx = 0;
        long r = syscall(SYS_io_setup, 65536, &ctx);
        printf("SETUP %s\n", r == 0 ? "ok" : strerrorname_np(errno));
        return 0;
    }
    if (argc != 2 || strcmp(argv[1], "pty")) return 2;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    static int held[400];
    int n = 0;
    const char *why = "none";
    while (n < 400) {
        int fd = open("/dev/ptmx", O_RDWR | O_NOCTTY);
        if (fd < 0) { why = strerrorname_np(errno); break; }
        held[n++] = fd;
    }
    printf("HELD %d\nWHY %s\n", n, why);
    for (int i = 0; i < n; i++) close(held[i]);
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    int ok = m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0;
    char *name = ok ? ptsname(m) : NULL;
    int t = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    char buf[4] = {0};
    ok = ok && t >= 0 && write(m, "hi\n", 3) == 3 && read(t, buf, 3) == 3 && !strncmp(buf, "hi", 2);
    printf("AGAIN %s\n", ok ? "True" : "False");
    return 0;
}
"""

#: The executor's shell (the image's own) runs the probe before the real executor, from the
#: workspace, and keeps what it said in /tmp for a command to show.
_PRE = "[ -e /tmp/rt34-aio ] || { /workspace/probe aio >/tmp/rt34-aio 2>&1; /workspace/probe pty >/tmp/rt34-pty 2>&1; }"


def _workspace_with_probe(tmp_path: Path) -> Path:
    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc builds the static probe (apt-get install gcc libc6-dev)")
    assert gcc is not None
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "probe.c").write_text(_PROBE)
    made = subprocess.run([gcc, "-O1", "-static", "-o", str(ws / "probe"), str(tmp_path / "probe.c")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stderr
    return ws


def _said(out: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _assert_capped(out: str) -> None:
    said = _said(out)
    assert said.get("AGAIN") == "True", out
    assert 1 <= int(said.get("HELD", "0")) <= PTY_MAX, out
    assert said.get("WHY") == "ENOSPC", out


async def test_a_command_holds_at_most_its_share_of_the_hosts_ptys(tmp_path: Path) -> None:
    """Failed before: HELD 400 (the bound; the host's pool is 3071), as the session's user and as
    a per-call root command, 2 of 2."""
    require_docker()
    require(os.geteuid() == 0, "the host mounts the capped devpts in the container only as root")
    ws = _workspace_with_probe(tmp_path)
    async with DockerBackend(config(), policy(ws)) as backend:
        for user in (None, "root"):
            code, out = await run_sh(backend, "./probe pty; ./probe aio", user=user)
            assert code == 0, out
            _assert_capped(out)
            assert _said(out).get("SETUP") == "ENOSYS", out  # held since round 33 (the command filter)


async def test_a_hostile_images_shell_takes_neither_budget(tmp_path: Path) -> None:
    """Failed before: SETUP ok (one io_setup(65536): the host's whole fs.aio-max-nr) and HELD 400."""
    require(os.geteuid() == 0, "the host mounts the capped devpts in the container only as root")
    image = build_hostile("shellrt-test-rt34-budgets", pre=_PRE)
    ws = _workspace_with_probe(tmp_path)
    async with DockerBackend(config(image), policy(ws)) as backend:
        code, out = await run_sh(backend, "cat /tmp/rt34-aio /tmp/rt34-pty")
    assert code == 0, out
    assert _said(out).get("SETUP") == "ENOSYS", out
    _assert_capped(out)
