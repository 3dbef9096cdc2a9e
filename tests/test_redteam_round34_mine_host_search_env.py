"""Red team round 34 (lead): the host programs the file tools start inherited the operator's
start-up variables whole.

Round 34 (hostenv) cleaned what hooks inherit; its Left named the file tools' own host programs:
Glob and Grep run ripgrep on the host for a local session (`shellrt.tools._search`), from the
directory searched -- the workspace -- and git queries (`shellrt.tools._gitrepo`) likewise. An
operator's ``LD_PRELOAD=./preload.so`` or ``LD_LIBRARY_PATH=:/opt/lib`` (an empty entry is the cwd)
then loads a library a sandboxed command planted in the workspace, on the host, as the operator.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from shellrt.tools import _gitrepo
from shellrt.tools._search import list_files, ripgrep_binary, search
from shellrt.tools._search_types import GrepQuery
from tests.conftest import require

_PLANT = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
    int fd = open(MARK, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) { write(fd, "loaded\n", 7); close(fd); }
}
"""


def test_the_host_ripgrep_loads_nothing_the_workspace_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: the planted library ran in the host's ripgrep (listing and search).

    The host ripgrep serves a local session without masks (`ripgrep_mode` "host"), which a Runtime
    with shellrt's own state masked rarely is, but the Python API's tools may be: called here at
    the module the tools use."""
    cc = shutil.which("cc") or shutil.which("gcc")
    require(cc is not None, "needs a C compiler")
    require(ripgrep_binary() is not None, "needs ripgrep on the host (CI installs it)")
    assert cc is not None
    ws, mark = tmp_path / "ws", tmp_path / "LOADED"
    ws.mkdir()
    (ws / "a.txt").write_text("needle\n")
    source = tmp_path / "plant.c"
    source.write_text(_PLANT)
    # What a sandboxed command could leave in the workspace: a library under a relative name.
    subprocess.run(
        [cc, "-shared", "-fPIC", f'-DMARK="{mark}"', "-o", str(ws / "preload.so"), str(source)], check=True
    )
    monkeypatch.setenv("LD_PRELOAD", "./preload.so")  # the operator's, relative: resolved from the cwd
    monkeypatch.setenv("LD_LIBRARY_PATH", ":/nonexistent-lib")  # an empty entry: the cwd
    monkeypatch.delenv("SHELLRT_NO_RIPGREP", raising=False)

    async def main() -> tuple[list[str], dict[str, object]]:
        fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
        try:
            listed = await list_files(ws, fd, use_rg=True)
            hits = await search(GrepQuery(pattern="needle", root=ws, root_fd=fd), use_rg=True)
        finally:
            os.close(fd)
        return listed, dict(hits)

    listed, hits = anyio.run(main)
    assert "a.txt" in listed and hits, (listed, hits)
    assert not mark.exists(), "a library the workspace holds was loaded by the file tools' host ripgrep"


def test_the_git_queries_of_the_file_tools_load_nothing_the_repository_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: git's host queries (`shellrt.tools._gitrepo`) run in the repository with the
    operator's environment, where only PATH was cleaned."""
    cc = shutil.which("cc") or shutil.which("gcc")
    require(cc is not None and shutil.which("git") is not None, "needs a C compiler and git")
    assert cc is not None
    ws, mark = tmp_path / "ws", tmp_path / "LOADED"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    source = tmp_path / "plant.c"
    source.write_text(_PLANT)
    subprocess.run(
        [cc, "-shared", "-fPIC", f'-DMARK="{mark}"', "-o", str(ws / "preload.so"), str(source)], check=True
    )
    monkeypatch.setenv("LD_PRELOAD", "./preload.so")
    done = _gitrepo._git(["git", "rev-parse", "--git-dir"], ws, dict(os.environ))
    assert done.returncode == 0 and done.stdout.strip() == b".git", done
    assert not mark.exists(), "a library the repository holds was loaded by a host git query"

