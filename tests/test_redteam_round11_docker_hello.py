"""Red team round 11, docker: the executor's hello named a shell that reached a host command line.

The executor announces itself with ``H <version> <pid> <setsid> <shell path>``; the host kept the
shell path as `DockerBackend.shell_path`, and the Inspect provider's ``connection()`` built the
``docker exec ... <shell>`` command an operator runs on the host (``inspect sandbox connect``) by
joining words with spaces. The executor is a script the image's own ``/bin/sh`` interprets, so a
hostile image writes whatever hello it likes: ``/bin/sh;touch${IFS}/tmp/x`` (one word on the
channel) became a second host command in that line. The hello's shell is now one of the paths the
executor itself chooses from (else the start fails, naming it escaped), the connection command is
``shlex.join``-ed, and an ``E`` reason (also the image's words) is shown escaped in the refusal.

Real containers of locally built images (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, ExecRequest, SandboxExecError
from sandbox.docker import DockerBackend
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment
from tests._docker_support import DEBIAN, config, managed_container_ids, policy, require_docker
from tests._rt11_hostile import build_hostile

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_FORGED_SHELLS = {
    "semicolon": "/bin/sh;touch${IFS}/tmp/shellrt-rt11-pwned",
    "substitution": "$(touch${IFS}/tmp/shellrt-rt11-pwned)",
    "escape": "/bin/sh\x1b]52;c;cHduZWQ=\x07",
    "unknown-path": "/opt/evil/sh",
}


@pytest.mark.parametrize("case", sorted(_FORGED_SHELLS))
async def test_a_forged_hello_shell_fails_the_start(tmp_path: Path, case: str) -> None:
    shell = _FORGED_SHELLS[case]
    # The real hello, its shell replaced (its pid kept: everything else about it is true).
    filt = (
        'case $l in "H "*) set -- $l; printf "H 2 %s %s %s\\n" "$3" "$4" ' + shlex.quote(shell) + " ;;\n"
        '*) printf "%s\\n" "$l" ;; esac'
    )
    image = build_hostile(f"shellrt-test-rt11-hello-{case}", filter=filt)
    before = managed_container_ids(owner_pid=os.getpid())
    backend = DockerBackend(config(image), policy(tmp_path))
    try:
        with pytest.raises(BackendUnavailableError) as caught:
            await backend.start()
    finally:
        await backend.close()
    text = str(caught.value)
    assert "shell" in text and "hello" in text, text
    assert not any(c in text for c in "\x1b\x07"), f"control characters in the error: {text!r}"
    assert backend.shell_path == "/bin/sh"  # never the forged one
    assert managed_container_ids(owner_pid=os.getpid()) <= before  # the container is gone


async def test_the_real_executors_hello_still_names_bash_or_sh(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        assert backend.shell_path in ("/bin/bash", "/usr/bin/bash") and backend.has_bash


async def _inspect_env() -> ShellrtSandboxEnvironment:
    envs = await ShellrtSandboxEnvironment.sample_init(
        "rt11-hello", ShellrtSandboxConfig(sandbox="docker", image=DEBIAN), {}
    )
    return envs["default"].as_type(ShellrtSandboxEnvironment)


async def test_the_inspect_connection_command_is_quoted_word_by_word(tmp_path: Path) -> None:
    require_docker()
    marker = tmp_path / "pwned"
    user = f"65534$(touch {marker});touch {marker}"
    env = await _inspect_env()
    try:
        # Since round 13 the user is resolved to numbers first: one naming no one is refused.
        with pytest.raises(ValueError):
            await env.connection(user=user)
        connection = await env.connection()
        words = shlex.split(connection.command)
        assert words[:8] == [
            "docker", "exec", "-it", "--user", "0", "-w", "/workspace", env.backend.container_id,
        ], connection.command  # fmt: skip
        assert words[-3:-1] == [env.backend.shell_path, "-c"], connection.command
        # As an operator runs it: through a shell (no TTY here, so docker itself refuses at once).
        subprocess.run(
            ["sh", "-c", connection.command], stdin=subprocess.DEVNULL, capture_output=True, timeout=60
        )
        assert not marker.exists(), f"the connection command ran a second command: {connection.command}"
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup("rt11-hello", None, {"default": env}, False)


async def test_an_executor_refusal_reason_is_shown_escaped(tmp_path: Path) -> None:
    filt = (
        'case $l in "E "*) set -- $l; printf "E %s \\033]52;c;cHduZWQ=\\007\\033[2Jforged\\n" "$2" ;;\n'
        '*) printf "%s\\n" "$l" ;; esac'
    )
    image = build_hostile("shellrt-test-rt11-reason", filter=filt)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        with pytest.raises(SandboxExecError) as caught:
            await backend.exec(ExecRequest(argv=("true",), cwd="/no/such/dir"))
    text = str(caught.value)
    assert "forged" in text, text
    assert not any(c in text for c in "\x1b\x07"), f"control characters in the refusal: {text!r}"
