"""Red team, round 13: a "read-only" ``git status`` rewrote ``.git/index``.

``git status`` refreshes the index's cached stat data when a work-tree file was touched: it
takes ``.git/index.lock`` and writes ``.git/index``. Judged read-only, it ran without asking and
beside other calls of its message, so two such commands raced on ``index.lock`` and a
command judged read-only changed a file (and made a concurrent ``git add`` of a background task
fail on the lock). Every command now runs with ``GIT_OPTIONAL_LOCKS=0`` (git then skips that
opportunistic write), set by each backend's environment builder over whatever the caller gave.

Real git in a temporary repository, through the Bash tool of a real session (local and bwrap),
and the variable itself in every backend (the docker test image has no git).

``git diff`` comparing with the work tree still refreshes the index in git 2.39 whatever the
variable says (``refresh_index_quietly`` ignores it): see docs/security.md, round 13.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import BwrapConfig, ExecRequest, LocalConfig, SandboxPolicy
from sandbox._collect import run_collected
from sandbox.docker import DockerBackend
from sandbox.factory import create_backend
from tests._docker_support import config as docker_config
from tests._docker_support import require_docker
from tests._git import git_in
from tests.conftest import require

pytestmark = pytest.mark.anyio


def _repo(tmp_path: Path) -> Path:
    """A repository whose committed files were touched since (same bytes, a newer mtime): git's
    cached stat data is stale, so a status that may write refreshes ``.git/index``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git_in(ws, "init", "-q")
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text(f"{name}\n")
    git_in(ws, "add", ".")
    git_in(ws, "commit", "-qm", "init")
    later = (ws / "a.txt").stat().st_mtime + 5
    for name in ("a.txt", "b.txt"):
        os.utime(ws / name, (later, later))
    return ws


def _index(ws: Path) -> tuple[int, int, int]:
    st = (ws / ".git" / "index").stat()
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


def test_git_status_writes_the_index_without_the_variable(tmp_path: Path) -> None:
    """The premise, on this machine's git: without ``GIT_OPTIONAL_LOCKS=0`` the index is rewritten."""
    ws = _repo(tmp_path)
    before = _index(ws)
    env = {k: v for k, v in os.environ.items() if k != "GIT_OPTIONAL_LOCKS"}
    subprocess.run(["git", "status"], cwd=ws, env=env, check=True, capture_output=True)
    assert _index(ws) != before


def _sandbox(name: str) -> Any:
    if name == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        return "bwrap"
    return "local"


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
async def test_read_only_git_status_leaves_the_index_alone(tmp_path: Path, sandbox: str) -> None:
    """Three ``git status`` in one message (read-only: they run side by side): the index is the
    same file with the same bytes and time after. (Five side by side on bwrap failed 2 runs in ~25
    with anyio's BusyResourceError, a separate race of the bwrap session; the old code failed
    2 of its first 3 runs of that test too, error not kept, then none in 21: reported.)"""
    ws = _repo(tmp_path)
    before = _index(ws)
    blocks = [
        {"type": "tool_use", "id": f"s{i}", "name": "Bash", "input": {"command": command}}
        for i, command in enumerate(["git status", "git status --short", "git status"])
    ]
    async with shellrt.Runtime(workspace=ws, sandbox=_sandbox(sandbox), session_dir=tmp_path / "s") as rt:
        user = await rt.run(blocks)
    results = user["content"]
    assert not [r for r in results if r.get("is_error")], results
    assert "nothing to commit" in _text(results[0]), _text(results[0])
    assert _index(ws) == before
    assert not (ws / ".git" / "index.lock").exists()


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
async def test_an_approved_git_status_leaves_the_index_alone(tmp_path: Path, sandbox: str) -> None:
    """A command not judged read-only (its output goes to a file) got no git overlay: its
    ``git status`` rewrote the index, racing a background ``git add`` on the lock."""
    ws = _repo(tmp_path)
    before = _index(ws)
    block = {"type": "tool_use", "id": "w", "name": "Bash", "input": {"command": "git status > status.txt"}}
    async with shellrt.Runtime(
        workspace=ws, sandbox=_sandbox(sandbox), session_dir=tmp_path / "s", mode="bypassPermissions"
    ) as rt:
        user = await rt.run([block])
    assert not user["content"][0].get("is_error"), user
    assert "status.txt" in (ws / "status.txt").read_text()  # git ran (and saw its own output file)
    assert _index(ws) == before


async def _variable(backend: Any, cwd: str) -> str:
    """``$GIT_OPTIONAL_LOCKS`` as a command of ``backend`` sees it, the caller having set it to 1."""
    await backend.start()
    try:
        request = ExecRequest(
            argv=("/bin/sh", "-c", 'printf "[%s]" "${GIT_OPTIONAL_LOCKS-unset}"'),
            cwd=cwd,
            env={"PATH": "/usr/bin:/bin", "GIT_OPTIONAL_LOCKS": "1"},
        )
        done = await run_collected(backend, request, timeout_s=60)
        return done.stdout.decode()
    finally:
        await backend.close()


@pytest.mark.parametrize("kind", ["local", "bwrap", "bwrap-persistent", "docker"])
async def test_every_backend_sets_the_variable_over_the_callers(tmp_path: Path, kind: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws)
    if kind == "docker":
        require_docker()
        backend: Any = DockerBackend(docker_config(), policy)
        cwd = "/workspace"
    elif kind.startswith("bwrap"):
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        backend = create_backend(BwrapConfig(persistent=kind.endswith("persistent")), policy)
        cwd = str(ws)
    else:
        backend = create_backend(LocalConfig(), policy)
        cwd = str(ws)
    assert await _variable(backend, cwd) == "[0]"
