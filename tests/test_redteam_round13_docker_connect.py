"""Red team round 13, Inspect: the connection shell held the executor's capabilities.

``inspect sandbox connect`` runs the command `ShellrtSandboxEnvironment.connection` gives: it
was ``docker exec -it --user U <container> <shell>``. A ``docker exec`` process runs outside
shellrt's ``priv drop``, so as root it held the container's whole bounding set (the executor's
``CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID, SETPCAP, SYS_PTRACE``: ``CapEff
0x801eb``) and no shellrt seccomp list. With ``root_can_administer`` (Inspect's default when
shellrt runs as root) a root command appended to ``/root/.bashrc``, and that code ran with those
capabilities when the operator connected; ``SYS_PTRACE`` over the executor reaches the control
channel. The shell now starts through the ``priv`` helper like every command: as root under
``root_can_administer`` it holds what a root command holds (``CHOWN, DAC_OVERRIDE, FOWNER``),
otherwise nothing, with the seccomp deny list and no-new-privs.

Real containers and a real terminal (``script``); FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import anyio
import pytest

from sandbox.docker import DockerBackend
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment
from tests._docker_support import DEBIAN, require_docker
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_TASK = "rt13-connect"
#: CAP_KILL, CAP_SETGID, CAP_SETUID, CAP_SETPCAP, CAP_SYS_PTRACE: the executor's, never a command's.
_EXECUTOR_ONLY = (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 19)
_PLANT = "grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status > /workspace/caps.txt; id -u >> /workspace/caps.txt"


async def _connect_and_read(env: ShellrtSandboxEnvironment, user: str | None) -> dict[str, str]:
    connection = await env.connection(user=user)
    # As an operator runs it, on a terminal; the planted start-up file writes what it holds.
    subprocess.run(
        ["script", "-qec", connection.command, "/dev/null"], input=b"exit\n", capture_output=True, timeout=60
    )
    text = await env.read_file("/workspace/caps.txt")
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields["uid"] = text.splitlines()[-1]
    return {k: v.strip() for k, v in fields.items()}


async def _env(admin: bool) -> ShellrtSandboxEnvironment:
    settings = ShellrtSandboxConfig(sandbox="docker", image=DEBIAN, root_can_administer=admin)
    envs = await ShellrtSandboxEnvironment.sample_init(_TASK, settings, {})
    return envs["default"].as_type(ShellrtSandboxEnvironment)


async def test_a_root_plant_in_bashrc_gains_no_executor_capability_on_connect() -> None:
    require_docker()
    require(os.geteuid() == 0, "root_can_administer needs a root host")
    require(shutil.which("script") is not None, "script (util-linux) is needed for a terminal")
    env = await _env(admin=True)
    try:
        planted = await env.exec(["sh", "-c", f'echo "{_PLANT}" >> /root/.bashrc'], user="root")
        assert planted.success, planted.stderr
        seen = await _connect_and_read(env, "root")
        assert seen["uid"] == "0"
        caps = int(seen["CapEff"], 16)
        assert not caps & _EXECUTOR_ONLY, f"the connection shell held CapEff {caps:#x}"
        assert seen["Seccomp"] == "2" and seen["NoNewPrivs"] == "1", seen
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(_TASK, None, {"default": env}, False)


async def test_the_session_users_connection_holds_no_capability() -> None:
    require_docker()
    require(shutil.which("script") is not None, "script (util-linux) is needed for a terminal")
    env = await _env(admin=False)
    try:
        # Its own start-up file: HOME of a uid with no passwd entry is /, so use ENV-free bash's rc
        # through the workspace instead: the shell's first prompt command is the operator's.
        connection = await env.connection()
        probe = subprocess.run(
            ["script", "-qec", connection.command, "/dev/null"],
            input=f"{_PLANT}; exit\n".encode(),
            capture_output=True,
            timeout=60,
        )
        text = await env.read_file("/workspace/caps.txt")
        assert "CapEff:\t0000000000000000" in text, (text, probe.stdout[-500:])
        assert isinstance(env.backend, DockerBackend)
        assert text.splitlines()[-1] == env.backend.user.split(":")[0]
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(_TASK, None, {"default": env}, False)


async def test_a_user_that_names_no_one_is_refused() -> None:
    require_docker()
    env = await _env(admin=False)
    try:
        for user in ("65534$(touch /tmp/x)", "nosuchuser", "root:nosuchgroup", "2147480001"):
            with pytest.raises(ValueError):
                await env.connection(user=user)
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(_TASK, None, {"default": env}, False)


async def test_a_fifo_passwd_does_not_hang_the_connection() -> None:
    """Under ``root_can_administer`` a root command may replace ``/etc/passwd``: a FIFO there is
    read bounded (no name resolves; a uid still connects)."""
    require_docker()
    require(os.geteuid() == 0, "root_can_administer needs a root host")
    env = await _env(admin=True)
    try:
        made = await env.exec(["sh", "-c", "rm /etc/passwd && mkfifo /etc/passwd"], user="root")
        assert made.success, made.stderr
        with anyio.fail_after(30):
            with pytest.raises(ValueError, match="passwd"):
                await env.connection(user="root")
            connection = await env.connection(user="0")
        assert " drop 0 0 " not in connection.command and " admin 0 0 " in connection.command
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(_TASK, None, {"default": env}, False)
