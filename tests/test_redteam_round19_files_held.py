"""Red team, round 19 (files): attacks that held, pinned so a later change cannot reopen them.

- Hard links: a sandboxed command links ``x`` to ``.git/config``, a git hook and
  ``.claude/settings.json``; Edit of ``x`` replaces the name ``x`` (temp file + rename), so the
  protected file keeps its content and the link is broken (an in-place write would change it).
- Races: a thread swaps a directory on the way for a symlink to outside (``os.rename`` +
  ``os.symlink``, as ``ln -sfn`` loops do) while 1,000 anchored reads, and while the fd-based
  walker Glob and Grep use on docker and masked local views lists and searches the tree: nothing
  outside is ever read or listed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import confine
from sandbox.confine import Mount, View
from shellrt.tools._grep_python import python_list_files, python_search
from shellrt.tools._search_types import GrepQuery
from tests._calls import one_call as _one
from tests.conftest import require

SECRET = "outside-secret-7f3a"


@pytest.mark.anyio
async def test_edit_through_a_hard_link_never_changes_the_protected_name(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".claude").mkdir()
    protected = {
        "x": (ws / ".git" / "config", "[core]\n\tbare = false\n"),
        "y": (ws / ".git" / "hooks" / "pre-commit", "#!/bin/sh\nexit 0\n"),
        "z": (ws / ".claude" / "settings.json", '{"permissions": {}}\n'),
    }
    for path, content in protected.values():
        path.write_text(content)
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="bwrap",
        mode="acceptEdits",
        session_dir=tmp_path / "s",
        settings_files=(),
        allow=("Bash",),
    ) as rt:
        made = await _one(
            rt, "Bash", command="ln .git/config x && ln .git/hooks/pre-commit y && ln .claude/settings.json z"
        )
        assert not made["is_error"], made
        assert all((ws / name).stat().st_nlink == 2 for name in protected), "the links were not made"
        for name in protected:
            assert not (await _one(rt, "Read", file_path=str(ws / name)))["is_error"]
            edit = await _one(
                rt, "Edit", file_path=str(ws / name), old_string="e", new_string="PLANTED", replace_all=True
            )
            assert not edit["is_error"], edit
    for name, (path, content) in protected.items():
        assert path.read_text() == content, f"{path} changed through its other name {name}"
        assert (ws / name).stat().st_nlink == 1 and "PLANTED" in (ws / name).read_text()


@contextlib.contextmanager
def _swapping(directory: Path, outside: Path) -> Iterator[None]:
    """Swap ``directory`` for a symlink to ``outside`` and back, as fast as a thread can."""
    stop = threading.Event()
    real = directory.with_name(directory.name + ".real")

    def swap() -> None:
        while not stop.is_set():
            os.rename(directory, real)
            os.symlink(outside, directory)
            os.unlink(directory)
            os.rename(real, directory)
            time.sleep(0.0002)  # some calls find the directory whole: both outcomes get tried

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        yield
    finally:
        stop.set()
        swapper.join()


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "f.txt").write_text(f"{SECRET}\n")
    (outside / "only-outside.txt").write_text(f"{SECRET}\n")
    return ws, outside


def test_1000_reads_race_a_swapped_directory_and_never_leave(tmp_path: Path) -> None:
    ws, outside = _tree(tmp_path)
    view = View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True)], (str(outside),))
    read = refused = 0
    with _swapping(ws / "d", outside):
        for _ in range(1000):
            try:
                fd, canonical = confine.open_file(view, f"{ws}/d/f.txt")
            except OSError:
                refused += 1
                continue
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
            assert SECRET.encode() not in data and canonical == f"{ws}/d/f.txt", (canonical, data)
            read += 1
    assert read + refused == 1000 and read, (read, refused)


def test_the_walker_never_lists_or_searches_through_a_swapped_directory(tmp_path: Path) -> None:
    ws, outside = _tree(tmp_path)
    root_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with _swapping(ws / "d", outside):
            for _ in range(100):
                listed = python_list_files(ws, root_fd)
                assert not [p for p in listed if "only-outside" in p], listed
                hits = python_search(GrepQuery(pattern=SECRET, root=ws, root_fd=root_fd))
                assert not hits, hits
    finally:
        os.close(root_fd)
