"""Round 8's open gap: a running command's text was in ``bash -c`` argv, which every local user reads.

``/proc/<pid>/cmdline`` is world-readable (unless ``/proc`` is mounted ``hidepid=2``); a
command may carry a secret (``curl -H 'Authorization: ...'``) or tell what the agent does.
The text now travels in the shell's environment (readable by the same uid only) and is unset
before it runs. Checked on every backend while the command runs: no process on the host has
the text in its argv, the shell's own environment shows it to its owner, the command's
children do not inherit it, and the shell's semantics are those of ``bash -c``.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, DockerConfig, LocalConfig, SandboxConfig, SandboxPolicy
from sandbox.errors import BackendUnavailableError
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require

pytestmark = pytest.mark.anyio

CONFIGS: dict[str, SandboxConfig] = {
    "local": LocalConfig(),
    "bwrap-session": BwrapConfig(),
    "bwrap-per-command": BwrapConfig(persistent=False),
    "docker": DockerConfig(image="shellrt-test-debian"),
}


@pytest.fixture(params=sorted(CONFIGS))
async def sup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Supervisor]:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = create_backend(CONFIGS[request.param], SandboxPolicy(workspace=ws))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"{request.param} backend unavailable: {exc}")
    try:
        async with Supervisor(backend, session_dir=tmp_path / "s") as supervisor:
            yield supervisor
    finally:
        await backend.close()


def _host_pids_with(needle: bytes, part: str) -> list[int]:
    """Host pids whose ``/proc/<pid>/<part>`` holds ``needle``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if needle in Path(f"/proc/{entry}/{part}").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


async def test_a_running_commands_text_is_in_no_host_processs_argv(sup: Supervisor) -> None:
    secret = f"s3cr3t-{secrets.token_hex(6)}"
    task = await sup.start_background(f"echo {secret} >/dev/null; sleep 30; : {secret}")
    try:
        shown: list[int] = []
        with anyio.fail_after(30):
            while not shown:  # the command runs
                shown = _host_pids_with(secret.encode(), "environ") + _host_pids_with(
                    secret.encode(), "cmdline"
                )
                await anyio.sleep(0.05)
        assert _host_pids_with(secret.encode(), "cmdline") == []
        # The shell holds it in its environment, where its owner (root here) can look.
        assert _host_pids_with(secret.encode(), "environ")
    finally:
        await sup.tasks.stop(task.id)
    # The operator's listing still names what runs.
    assert secret in sup.tasks.get(task.id).command


async def test_the_command_runs_as_bash_c_ran_it(sup: Supervisor) -> None:
    first = await sup.run('echo "$0"; env | grep -c "^SHELLRT_COMMAND=" || :', timeout_s=60)
    assert first.preview.split() == [first.preview.split()[0], "0"], first.preview  # not inherited
    assert first.preview.split()[0] in ("bash", "/bin/bash", "sh", "/bin/sh"), first.preview
    assert (await sup.run("exit 7", timeout_s=60)).exit_code == 7
    set_e = await sup.run("set -e\nfalse\necho not-reached", timeout_s=60)
    assert set_e.exit_code == 1 and "not-reached" not in set_e.preview
    heredoc = await sup.run("cat <<'E'\nline $HOME\nE\necho $LINENO", timeout_s=60)
    assert heredoc.preview == "line $HOME\n4\n", heredoc.preview
    broken = await sup.run("echo before\nif", timeout_s=60)
    assert broken.exit_code == 2 and "syntax error" in broken.preview, broken.preview
    moved = await sup.run("cd / && pwd", timeout_s=60)
    assert moved.exit_code == 0 and moved.preview.strip() == "/"


async def test_an_operator_can_put_the_text_back_in_argv(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = create_backend(LocalConfig(), SandboxPolicy(workspace=ws))
    marker = f"shown-{secrets.token_hex(6)}"
    async with backend, Supervisor(backend, session_dir=tmp_path / "s", command_in_argv=True) as sup:
        task = await sup.start_background(f"sleep 30; : {marker}")
        try:
            with anyio.fail_after(30):
                while not _host_pids_with(marker.encode(), "cmdline"):
                    await anyio.sleep(0.05)
        finally:
            await sup.tasks.stop(task.id)
