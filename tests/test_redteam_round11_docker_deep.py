"""Red team round 11, docker: a directory tree 5,000 levels deep broke the host's cleanup.

A command owns its workspace and can nest directories as deep as it likes (``mkdir -p`` a few
hundred levels, then ``mv`` whole chains under each other: no path ever gets long). On Python
3.11 ``shutil.rmtree``, ``os.walk``, ``shutil.copytree``, ``Path.mkdir(parents=True)`` and a
recursive glob recurse once per level: a reset (emptying the workspace), the reaper and ``gc``
(removing a dead session's host directory), an export over an older one, the Inspect leftovers
cleanup and the batch ``out/**`` collection raised `RecursionError` and left the tree (and
whatever came after it) behind. They now remove and walk with fds or an explicit stack, and a
workspace deeper than `MAX_COPY_DEPTH` is refused at copy-in with an error that says so.

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from inspect_ai._util.error import PrerequisiteError

from sandbox import BackendUnavailableError
from sandbox._deeptree import MAX_COPY_DEPTH, WorkspaceTooDeepError, check_copy_depth, walk
from sandbox._scratch import remove_tree
from sandbox.docker import DockerBackend
from sandbox.docker._gc import remove_io_dir
from shellrt.batch.worker import _copy_matches
from shellrt.integrations._inspect_leftovers import PREFIX, cleanup_leftovers
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment
from tests._docker_support import config, policy, require_docker, reset_workspaces, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

DEPTH = 5000
_SEG = "d/" * 200
#: 25 chains of 200 directories, each moved under the next one's bottom: 5,025 levels, a leaf file.
_DEEP_IN_CONTAINER = (
    f"cd /workspace && mkdir -p c0/{_SEG} && echo leaf > c0/{_SEG}leaf && i=1 && "
    f'while [ "$i" -lt 25 ]; do mkdir -p c$i/{_SEG} && mv c$((i - 1)) c$i/{_SEG} || exit 7; i=$((i + 1)); done'
    " && mv c24 deep && echo made"
)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@pytest.fixture(autouse=True)
def _no_deep_leftovers(tmp_path: Path) -> Iterator[None]:
    """pytest's own cleanup of old temp dirs is ``shutil.rmtree``: it must never meet these trees."""
    yield
    remove_tree(tmp_path)


def _deep_on_host(top: Path, depth: int = DEPTH) -> None:
    """A chain ``top/d/d/...`` ``depth`` levels deep with a file at the bottom (made through fds)."""
    fd = os.open(top, _DIR)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", _DIR, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    finally:
        os.close(fd)


async def _make_deep(backend: DockerBackend) -> None:
    code, out = await run_sh(backend, _DEEP_IN_CONTAINER)
    assert code == 0 and "made" in out, out


async def test_a_reset_empties_a_workspace_holding_a_deep_tree(tmp_path: Path) -> None:
    require_docker()
    first, second = reset_workspaces(tmp_path)
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        await _make_deep(backend)
        with anyio.fail_after(120):
            await backend.reset()
        await backend.reuse_for(policy(second))
        code, out = await run_sh(backend, "ls -A /workspace")
        assert (code, out) == (0, "mine.txt\n")


async def test_gc_removes_a_dead_sessions_host_dir_holding_a_deep_tree(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(), policy(tmp_path)) as backend:
        await _make_deep(backend)
        host_dir = backend._host_dir
        assert host_dir is not None
        remove_io_dir(host_dir)  # what the reaper and `shellrt sandbox gc` do for a dead owner
        assert not os.path.exists(host_dir)


@pytest.mark.slow  # 25 s in CI56: its file is handed out first (tests/conftest.py)
async def test_an_export_replaces_a_deep_directory_with_the_containers_file(tmp_path: Path) -> None:
    require_docker()
    dest = tmp_path / "out"
    (dest / "x").mkdir(parents=True)
    _deep_on_host(dest / "x")  # a previous export's tree
    ws = tmp_path / "ws"
    ws.mkdir()
    async with DockerBackend(config(), policy(ws)) as backend:
        code, out = await run_sh(backend, "echo now-a-file > /workspace/x")
        assert code == 0, out
        await backend.export_workspace(dest)
    assert (dest / "x").read_text() == "now-a-file\n"


async def test_a_workspace_too_deep_to_copy_is_refused_clearly(tmp_path: Path) -> None:
    require_docker()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README").write_text("hi\n")
    _deep_on_host(repo, 600)
    with pytest.raises(BackendUnavailableError, match=f"more than {MAX_COPY_DEPTH} levels deep"):
        async with DockerBackend(config(), policy(repo)):
            pass
    # Through Inspect (its own copy of the task's workspace), the same refusal.
    settings = ShellrtSandboxConfig(sandbox="docker", workspace=repo)
    with pytest.raises((PrerequisiteError, ValueError), match="levels deep"):
        await ShellrtSandboxEnvironment.sample_init("rt11-deep", settings, {})


@pytest.mark.slow  # 24 s in CI56: its file is handed out first (tests/conftest.py)
def test_the_inspect_leftovers_cleanup_removes_a_deep_sample_dir() -> None:
    sample = Path(tempfile.mkdtemp(prefix=PREFIX))
    (sample / ".owner.lock").touch()  # its owner is gone: the lock is free
    (sample / "workspace").mkdir()
    _deep_on_host(sample / "workspace")
    old = time.time() - 60
    os.utime(sample, (old, old))
    removed = cleanup_leftovers(sample.name)
    assert removed and not sample.exists()


def test_the_batch_collection_of_out_globstar_survives_a_deep_tree(tmp_path: Path) -> None:
    root, dest = tmp_path / "ws", tmp_path / "collected"
    (root / "out").mkdir(parents=True)
    dest.mkdir()
    (root / "out" / "report.txt").write_text("report\n")
    _deep_on_host(root / "out", 1500)  # a path short enough to name: collected too
    (root / "out" / "z").mkdir()
    _deep_on_host(root / "out" / "z")  # deeper than any path can name: left out, nothing breaks
    copied = _copy_matches(root, ("out/**",), dest, 1 << 20)
    assert "out/report.txt" in copied and (dest / "out" / "report.txt").read_text() == "report\n"
    assert "out/" + "d/" * 1500 + "leaf" in copied


def test_walk_and_depth_check_have_no_recursion_limit(tmp_path: Path) -> None:
    _deep_on_host(tmp_path)
    # Path-based: it lists what a path can name (about 2,000 levels of "d/" here), and never
    # raises however deep the tree goes.
    assert sum(1 for _ in walk(str(tmp_path))) > 1500
    with pytest.raises(WorkspaceTooDeepError):
        check_copy_depth(str(tmp_path))
    check_copy_depth(str(tmp_path), limit=DEPTH)
