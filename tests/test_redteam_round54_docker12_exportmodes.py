"""Red team round 54 (docker12): the copy-back opened the operator's private directories to other
host users (docs/security.md, "Red team, round 54: docker12").

The export applies each directory member's mode (its owner bits kept, no group or other write) and
time once everything below it is written. A directory the host already had took the container's
mode too: a command's ``chmod 755 .git`` (its own copy, copied in at 0700) came out as the host's
``.git`` at 0755, and every local user could list it and read what its files' own modes allow
(``config``, with a token in a remote's URL, is 0644 as git writes it). Now a directory that
existed on the host keeps its own mode bits but those the container's member also clears: an
export never opens a host directory wider than it was; one the export makes takes the member's
mode, as before.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from shellrt.supervisor.protect import protected_reason
from tests._docker_support import require_docker, run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt54exm"):
        yield b


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


async def test_an_export_never_opens_a_host_directory_wider(backend: DockerBackend, tmp_path: Path) -> None:
    require_docker()
    dest = tmp_path / "out"
    (dest / ".git").mkdir(parents=True)
    (dest / ".git" / "config").write_text("[remote]\n")
    (dest / "private").mkdir()
    os.chmod(dest / ".git", 0o700)
    os.chmod(dest / "private", 0o750)
    with anyio.fail_after(120):
        reset = "rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; "
        script = "mkdir -p .git private fresh && chmod 755 .git private && chmod 705 fresh && echo ok"
        assert await run_sh(backend, reset + script) == (0, "ok\n")
        await backend.export_workspace(dest, refuse=protected_reason)
    assert _mode(dest / ".git") == 0o700
    assert _mode(dest / "private") == 0o750
    assert _mode(dest / "fresh") == 0o705  # made by the export: the member's mode, as before


async def test_an_export_may_still_close_a_host_directory(backend: DockerBackend, tmp_path: Path) -> None:
    require_docker()
    dest = tmp_path / "out"
    (dest / "shared").mkdir(parents=True)
    os.chmod(dest / "shared", 0o755)
    with anyio.fail_after(120):
        reset = "rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; "
        assert await run_sh(backend, reset + "mkdir -p shared && chmod 700 shared && echo ok") == (0, "ok\n")
        await backend.export_workspace(dest, refuse=protected_reason)
    assert _mode(dest / "shared") == 0o700


async def test_an_export_never_opens_a_host_file_wider(backend: DockerBackend, tmp_path: Path) -> None:
    require_docker()
    dest = tmp_path / "out"
    dest.mkdir()
    for name, mode in (("notes.txt", 0o600), ("run.sh", 0o644), ("open.txt", 0o644)):
        (dest / name).write_text(f"{name}\n")
        os.chmod(dest / name, mode)
    with anyio.fail_after(120):
        reset = "rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; "
        script = (
            "echo notes.txt > notes.txt && chmod 644 notes.txt && echo run.sh > run.sh && chmod 755 run.sh && "
            "echo open.txt > open.txt && chmod 600 open.txt && echo new > new.txt && chmod 644 new.txt && "
            "ln notes.txt copy.txt 2>/dev/null; echo ok"
        )
        assert await run_sh(backend, reset + script) == (0, "ok\n")
        await backend.export_workspace(dest, refuse=protected_reason)
    assert _mode(dest / "notes.txt") == 0o600  # the host's private bytes stay private
    assert _mode(dest / "run.sh") == 0o744  # the owner's chmod +x comes out, no wider for others
    assert _mode(dest / "open.txt") == 0o600  # closing still comes out
    assert _mode(dest / "new.txt") == 0o644  # a name the host did not have: the member's mode
