"""Red team round 25 (trusted): a directory the tree digest cannot list is skipped, not refused.

``os.walk`` drops a directory it cannot list without a word: for an operator who is not root, a
command makes ``pkg/`` ``-wx--x--x`` (0311). Python still imports ``pkg`` from it (a package is
found by ``stat``, its ``__init__.py`` opened by name), but the tree digest saw ``pkg`` and none
of its contents: rewriting ``pkg/__init__.py`` between two listings-proof chmods kept the digest.
Runs the digest as ``nobody`` (a real forked child): root lists every directory.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _as_nobody(ws: Path) -> list[object]:
    """In a forked child that dropped to ``nobody``: the digest before and after a rewrite inside
    an unlistable ``pkg/``, and what Python imports from it."""
    from shellrt.permissions.hook_files import workspace_tree_digest

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            pkg = ws / "pkg"
            pkg.mkdir()
            (pkg / "__init__.py").write_text("X = 1\n")
            pkg.chmod(0o311)
            first = workspace_tree_digest(ws)
            pkg.chmod(0o755)
            (pkg / "__init__.py").write_text("X = 2\n")
            pkg.chmod(0o311)
            second = workspace_tree_digest(ws)
            spec = importlib.machinery.PathFinder.find_spec("pkg", [str(ws)])
            loaded = None
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                loaded = module.X
            os.write(write, json.dumps([first, second, loaded]).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and data, "the child failed"
    return list(json.loads(data))


@pytest.fixture
def shared_ws() -> Iterator[Path]:
    """A workspace ``nobody`` owns, in a directory it may enter (pytest's tmp_path is root's 0700)."""
    top = Path(tempfile.mkdtemp(prefix="shellrt-r25-"))
    try:
        top.chmod(0o755)
        ws = top / "ws"
        ws.mkdir()
        os.chown(ws, 65534, 65534)
        yield ws
    finally:
        for d in top.rglob("*"):
            if d.is_dir() and not d.is_symlink():
                d.chmod(0o755)
        shutil.rmtree(top)


def test_an_unlistable_directory_fails_the_digest_closed(shared_ws: Path) -> None:
    """Failed 1 of 1 before: both digests ``sha256:`` and equal while ``pkg/__init__.py`` (which
    Python imported from the unlistable directory) changed."""
    assert os.geteuid() == 0, "run as root: the test drops to nobody"
    first, second, loaded = _as_nobody(shared_ws)
    assert loaded == 2, "Python imports from the unlistable directory (the attack needs it)"
    assert not str(first).startswith("sha256:") and not str(second).startswith("sha256:"), (
        f"a tree whose directory could not be listed was vouched for: {first} / {second}"
    )
