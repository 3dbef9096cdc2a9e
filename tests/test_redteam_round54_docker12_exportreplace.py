"""Red team round 54 (docker12): the copy-back removed the host's protected files by replacing their
directory (docs/security.md, "Red team, round 54: docker12").

``export_workspace`` holds back what a later program on the host would obey (``refuse``: agent
settings, git hooks and config...), judging each file, link or special member by its own name, and
a read- or write-denied path also when a member would replace a directory above it. A protected
name had no such rule: a command's ``rm -rf .claude && echo x > .claude`` (or a link there, or the
same one directory up) came out as a file in place of the host's ``.claude/`` directory, which the
extraction removed whole first: the operator's ``settings.json`` (its deny rules and hooks) was
gone, and an agent started there next ran without them. Now a member that is no directory is held
back where the host has a directory holding a name ``refuse`` gives a reason for, at any depth, as
for the policy's denied paths; a directory that holds none is still replaced.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._untar import WorkspaceExportError
from shellrt.supervisor.protect import protected_reason
from tests._docker_support import require_docker, run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_SETTINGS = '{"permissions": {"deny": ["Bash(curl:*)"]}}\n'


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt54exr"):
        yield b


def _host_tree(dest: Path) -> None:
    """The operator's files the export must leave: settings, a nested repository's config, hooks."""
    (dest / ".claude").mkdir(parents=True)
    (dest / ".claude" / "settings.json").write_text(_SETTINGS)
    (dest / "pkg" / ".git" / "hooks").mkdir(parents=True)
    (dest / "pkg" / ".git" / "config").write_text("[core]\n")
    (dest / "pkg" / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (dest / "plain").mkdir()
    (dest / "plain" / "notes.txt").write_text("old\n")


# Each replaces a host directory that holds a protected file with something else.
_REPLACE = {
    "a file": "rm -rf .claude && echo x > .claude",
    "a symbolic link": "rm -rf .claude && mkdir -p elsewhere && ln -s elsewhere .claude",
    "a file one level up": "rm -rf pkg && echo x > pkg",
}


@pytest.mark.parametrize("how", list(_REPLACE))
async def test_an_export_never_removes_a_protected_file_by_replacing_its_directory(
    backend: DockerBackend, tmp_path: Path, how: str
) -> None:
    require_docker()
    dest = tmp_path / "out"
    _host_tree(dest)
    with anyio.fail_after(120):
        reset = "rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; "
        assert await run_sh(
            backend, reset + "mkdir -p .claude pkg/.git/hooks && " + _REPLACE[how] + " && echo ok"
        ) == (
            0,
            "ok\n",
        )
        with pytest.raises(WorkspaceExportError) as caught:
            await backend.export_workspace(dest, refuse=protected_reason)
    assert (dest / ".claude" / "settings.json").read_text() == _SETTINGS
    assert (dest / "pkg" / ".git" / "config").read_text() == "[core]\n"
    assert (dest / "pkg" / ".git" / "hooks" / "pre-commit").exists()
    refused = {name for name, _ in caught.value.refused}
    assert refused & {".claude", "pkg"}, caught.value.refused


async def test_a_directory_without_protected_files_is_still_replaced(
    backend: DockerBackend, tmp_path: Path
) -> None:
    require_docker()
    dest = tmp_path / "out"
    _host_tree(dest)
    with anyio.fail_after(120):
        reset = "rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; "
        assert await run_sh(backend, reset + "echo new > plain && echo ok") == (0, "ok\n")
        await backend.export_workspace(dest, refuse=protected_reason)
    assert (dest / "plain").read_text() == "new\n"
    assert (dest / ".claude" / "settings.json").read_text() == _SETTINGS


async def test_a_directory_never_replaces_a_protected_host_file(
    backend: DockerBackend, tmp_path: Path
) -> None:
    # A worktree's ``.git`` is a file naming the repository git obeys (``gitdir: ...``).
    require_docker()
    dest = tmp_path / "out"
    (dest / "wt").mkdir(parents=True)
    (dest / "wt" / ".git").write_text("gitdir: /srv/repo/.git/worktrees/wt\n")
    with anyio.fail_after(120):
        reset = "rm -rf /workspace/* /workspace/.[!.]* 2>/dev/null; "
        assert await run_sh(backend, reset + "mkdir -p wt/.git && echo x > wt/.git/notes && echo ok") == (
            0,
            "ok\n",
        )
        with pytest.raises(WorkspaceExportError) as caught:
            await backend.export_workspace(dest, refuse=protected_reason)
    assert (dest / "wt" / ".git").read_text() == "gitdir: /srv/repo/.git/worktrees/wt\n"
    assert "wt/.git" in {name for name, _ in caught.value.refused}, caught.value.refused
