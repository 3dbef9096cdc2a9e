"""Red team, round 16 part 2: what ``cat <&3`` / ``head /dev/fd/3`` can reach, on every backend.

The classifier judges ``cat <&3`` read-only (``head /dev/fd/3`` and ``cat /proc/self/fd/3`` too, until
round 51 made descriptor paths fail closed): what a descriptor leads to is the runtime's to keep
empty, not the analysis's to guess. So on every backend
(local, bwrap session, bwrap per command, docker) a command's shell holds fds 0, 1 and 2 only, plus
the one documented descriptor (docker: fd 6, the write-only cwd report file named by
``SHELLRT_CWD_FILE``), even when the embedding program left descriptors of its own inheritable
(an MCP client's pipe, a log file). Reading fd 3 fails; reading fd 6 yields nothing.
FAIL, not skip, under CI=true when bwrap or docker is missing.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, LocalConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.docker import DockerBackend
from sandbox.factory import create_backend
from sandbox.local import LocalBackend
from shellrt.analysis import analyze
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap, supervised
from tests._docker_support import DEBIAN, config, policy, require_docker

pytestmark = pytest.mark.anyio

#: The shell's own fds, listed by a child writing to a file (a pipe or ``$(...)`` would add the
#: shell's end of it), then what fd 3 and fd 6 give to a read.
_PROBE = (
    "ls -l /proc/$$/fd > .rt16fds.$$; sed -n 's/.* \\([0-9]*\\) -> \\(.*\\)/FD \\1 \\2/p' .rt16fds.$$; "
    "rm -f .rt16fds.$$; cat <&3 2>/dev/null; echo \"CAT3=$?\"; head -c 64 /dev/fd/3 2>/dev/null; "
    "echo \"HEAD3=$?\"; echo \"READ6=$(head -c 64 <&6 2>/dev/null | wc -c)\"; "
    "(exec 3</etc/shadow && echo SHADOW-OPEN) 2>/dev/null; echo PROBE-END"
)


def test_the_probe_forms_are_judged_read_only() -> None:
    """The premise: the analysis leaves descriptors to the runtime. A redirection from one stays
    read-only; a *path* naming one (``/dev/fd/3``, ``/proc/self/fd/3``) is not read-only since red
    team round 51 (analysis11: what it leads to may be a device or a FIFO; fail closed). The
    runtime's promise below holds either way: there is no fd 3 to read."""
    assert analyze("cat <&3").read_only
    for command in ("head /dev/fd/3", "cat /proc/self/fd/3"):
        assert not analyze(command).read_only, command


@pytest.fixture(params=["local", "bwrap-session", "bwrap-per-command", "docker"])
async def sup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Supervisor]:
    ws = tmp_path / "ws"
    ws.mkdir()
    kind = request.param
    if kind == "local":
        backend = create_backend(LocalConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as s:
                yield s
        finally:
            await backend.close()
    elif kind.startswith("bwrap"):
        require_bwrap()
        bwrap = BwrapBackend(BwrapConfig(persistent=kind == "bwrap-session"), SandboxPolicy(workspace=ws))
        async with supervised(bwrap, tmp_path / "session") as s:
            yield s
    else:
        require_docker()
        docker = DockerBackend(config(DEBIAN), policy(ws))
        async with docker, Supervisor(docker, session_dir=tmp_path / "session") as s:
            yield s


async def test_a_command_inherits_only_stdio_and_the_documented_fds(sup: Supervisor) -> None:
    sandboxed = not isinstance(sup.backend, LocalBackend)
    read_end, write_end = os.pipe()
    log = os.open("/etc/hostname", os.O_RDONLY)
    for fd in (read_end, write_end, log):
        os.set_inheritable(fd, True)
    try:
        result = await sup.run(_PROBE, timeout_s=30)
        task = await sup.start_background(_PROBE)
        with anyio.fail_after(30):
            await sup.tasks.wait(task.id)
        background = (await sup.tasks.read_new(task.id)).text
    finally:
        for fd in (read_end, write_end, log):
            os.close(fd)
    for out in (result.preview, background):
        fds = dict(re.findall(r"^FD (\d+) (.*)$", out, re.M))
        assert {"0", "1", "2"} <= set(fds), out  # the listing itself worked
        extra = {fd: target for fd, target in fds.items() if fd not in ("0", "1", "2")}
        assert set(extra) <= {"6"}, out
        if "6" in extra:  # docker's cwd report: a file of its own, written once, nothing to read
            # (a `.cwd` file; since round 32 dockerexit `.shellrt-cwd` in the command's own TMPDIR slot)
            assert extra["6"].endswith((".cwd", "/.shellrt-cwd")), out
        assert "CAT3=1" in out and "HEAD3=1" in out and "READ6=0" in out and "PROBE-END" in out, out
        if sandboxed:  # `exec 3</etc/shadow`: the sandbox's uid cannot open it (local is no sandbox)
            assert "SHADOW-OPEN" not in out, out
