"""Red team round 36 (hostenv): a submodule path that leaves the repository.

`repo_code_keys` lists the index's gitlinks (``git ls-files --stage``) and runs host git in each
populated one. git refuses to write an index path with ``..``, but reads whatever a crafted
index holds: ``160000 <sha> 0\t../other`` made the check run host git in ``../other`` (any
directory the repository names, ``../../home/op/project`` as well) and put that repository's
configuration keys in the answer; a gitlink whose path is a symlink to a directory outside did the
same. Now such a gitlink fails closed with a reason, and no host git runs there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from shellrt.tools._gitrepo import repo_code_keys
from tests._git import git_in
from tests.conftest import require


def _index_with_gitlink(repo: Path, path: str) -> None:
    """Writes ``repo``'s index as one gitlink entry at ``path`` (as git would not)."""
    sha = bytes.fromhex(
        subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )
    name = path.encode()
    entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o160000, 0, 0, 0) + sha + struct.pack(">H", len(name))
    entry += name
    entry += b"\0" * (8 - len(entry) % 8)
    body = b"DIRC" + struct.pack(">II", 2, 1) + entry
    (repo / ".git" / "index").write_bytes(body + hashlib.sha1(body).digest())


def _repos(tmp_path: Path) -> tuple[Path, Path]:
    require(shutil.which("git") is not None, "needs git on the host")
    ws, other = tmp_path / "ws", tmp_path / "other"
    for r in (ws, other):
        r.mkdir()
        git_in(r, "init", "-q")
        git_in(r, "commit", "-q", "--allow-empty", "-m", "x")
    return ws, other


@pytest.mark.parametrize("path", ["../other", "sub/../../other", "ABSOLUTE"])
def test_a_gitlink_leaving_the_repository_is_not_inspected(tmp_path: Path, path: str) -> None:
    ws, other = _repos(tmp_path)
    _index_with_gitlink(ws, str(other) if path == "ABSOLUTE" else path)
    keys = repo_code_keys(str(ws))
    assert len(keys) == 1 and "leaves the repository" in keys[0], keys


def test_a_gitlink_through_a_symlink_out_is_not_inspected(tmp_path: Path) -> None:
    ws, other = _repos(tmp_path)
    os.symlink(other, ws / "sub")
    _index_with_gitlink(ws, "sub")
    keys = repo_code_keys(str(ws))
    assert len(keys) == 1 and "leaves the repository" in keys[0], keys


def test_a_submodule_inside_is_still_inspected(tmp_path: Path) -> None:
    ws, _other = _repos(tmp_path)
    sub = ws / "sub"
    sub.mkdir()
    git_in(sub, "init", "-q")
    git_in(sub, "commit", "-q", "--allow-empty", "-m", "x")
    git_in(sub, "config", "filter.x.clean", "sh evil.sh")
    _index_with_gitlink(ws, "sub")
    keys = repo_code_keys(str(ws))
    assert keys and "filter.x.clean" in keys[0] and "in submodule" in keys[0], keys
