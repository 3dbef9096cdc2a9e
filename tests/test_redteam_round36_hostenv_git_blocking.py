"""Red team round 36 (hostenv): files host git opens that the round 12 check did not list.

Before a git command is judged, the Bash tool runs git on the host (``rev-parse``, ``ls-files``,
``diff-index --cached HEAD``, ``git config``). Round 12 checked a fixed list of the git
directory's files (config, HEAD, index, packed-refs...) for a FIFO or a huge file. Git opens
more, with a plain blocking ``open``: the loose ref HEAD names (``refs/heads/<branch>``, a
symlink to a FIFO anywhere included), the loose objects of the HEAD commit and tree, pack
indexes, the commit-graph, the objects of an alternate directory. A FIFO at any of them held
the query for its 10 s timeout: a ``git diff`` in that repository took 10 s to judge, and
with an ``includeIf "onbranch:..."`` (git resolves HEAD to evaluate it) every query did.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shellrt.tools._gitfiles import unsafe_git_files
from shellrt.tools._gitrepo import active_hooks, changed_paths
from tests._git import git_in, repo_with_change
from tests._timing import cpu_seconds
from tests.conftest import require

#: Far below the 10 s host git timeout each blocked query waited out (round 49: 5 s, not 3 s: two
#: host git starts at load 15-30; ~0.05 s idle).
QUICK_S = 5.0


def _branch_ref(git_dir: Path) -> Path:
    head = (git_dir / "HEAD").read_text().strip()
    assert head.startswith("ref: ")
    return git_dir / head[len("ref: ") :]


def _replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _loose_ref(ws: Path, outside: Path) -> None:
    _replace_with_fifo(_branch_ref(ws / ".git"))


def _linked_ref(ws: Path, outside: Path) -> None:
    ref = _branch_ref(ws / ".git")
    os.mkfifo(outside / "fifo")
    ref.unlink()
    ref.symlink_to(outside / "fifo")


def _head_commit(ws: Path, outside: Path) -> None:
    sha = _branch_ref(ws / ".git").read_text().strip()
    _replace_with_fifo(ws / ".git" / "objects" / sha[:2] / sha[2:])


def _pack_index(ws: Path, outside: Path) -> None:
    git_in(ws, "gc", "-q")
    (idx,) = (ws / ".git" / "objects" / "pack").glob("*.idx")
    _replace_with_fifo(idx)


def _commit_graph(ws: Path, outside: Path) -> None:
    git_in(ws, "commit-graph", "write", "--reachable")
    _replace_with_fifo(ws / ".git" / "objects" / "info" / "commit-graph")


def _alternate(ws: Path, outside: Path) -> None:
    objects = ws / ".git" / "objects"
    shutil.move(str(objects), str(outside / "objects"))
    objects.mkdir()
    (objects / "info").mkdir()
    (objects / "info" / "alternates").write_text(f"{outside / 'objects'}\n")
    sha = _branch_ref(ws / ".git").read_text().strip()
    _replace_with_fifo(outside / "objects" / sha[:2] / sha[2:])


def _onbranch_include(ws: Path, outside: Path) -> None:
    (ws / ".git" / "inc").write_text("[core]\n")
    with (ws / ".git" / "config").open("a") as f:
        f.write('[includeIf "onbranch:*"]\n\tpath = inc\n')
    _loose_ref(ws, outside)


PLANTS: dict[str, Callable[[Path, Path], None]] = {
    "loose ref": _loose_ref,
    "loose ref linked to a FIFO outside": _linked_ref,
    "HEAD's loose commit object": _head_commit,
    "pack index": _pack_index,
    "commit-graph": _commit_graph,
    "alternate object directory": _alternate,
    "onbranch include": _onbranch_include,
}


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    start = time.monotonic()
    out = call()
    return time.monotonic() - start, out


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_fifo_anywhere_host_git_reads_fails_closed_fast(tmp_path: Path, plant: str) -> None:
    require(shutil.which("git") is not None, "needs git on the host")
    ws = repo_with_change(tmp_path, "a.txt", "a\n", "changed\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    PLANTS[plant](ws, outside)
    why = unsafe_git_files(str(ws))
    assert why, f"{plant}: the check passed a repository host git blocks in"
    took, changed = _timed(lambda: changed_paths(str(ws)))
    assert changed == [""] and took < QUICK_S, (plant, took, changed)
    took, hooks = _timed(lambda: active_hooks(str(ws)))
    assert hooks and took < QUICK_S, (plant, took, hooks)


def test_an_ordinary_repository_still_passes(tmp_path: Path) -> None:
    """Packs, loose objects, a commit-graph, symlinked refs inside the repository and an
    alternate directory are all regular: nothing to report."""
    require(shutil.which("git") is not None, "needs git on the host")
    ws = repo_with_change(tmp_path, "a.txt", "a\n", "changed\n")
    git_in(ws, "gc", "-q")
    git_in(ws, "commit", "-qam", "second")
    git_in(ws, "commit-graph", "write", "--reachable")
    git_in(ws, "tag", "v1")
    (ws / ".git" / "refs" / "tags" / "v1-link").symlink_to(ws / ".git" / "refs" / "tags" / "v1")
    assert unsafe_git_files(str(ws)) == ""
    assert changed_paths(str(ws)) != [""]


def test_too_many_entries_fail_closed_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require(shutil.which("git") is not None, "needs git on the host")
    import shellrt.tools._gitfiles as gitfiles

    ws = repo_with_change(tmp_path, "a.txt", "a\n", "changed\n")
    monkeypatch.setattr(gitfiles, "MAX_GIT_ENTRIES", 5)
    why = unsafe_git_files(str(ws))
    assert "entries" in why and "git gc" in why, why


def test_a_link_into_proc_is_judged_as_git_would_open_it(tmp_path: Path) -> None:
    """``/proc/self/fd/N`` is this process's file here and git's own there (fd 1: the pipe git
    writes its output to, which it would block reading). Here it is a regular file."""
    require(shutil.which("git") is not None, "needs git on the host")
    ws = repo_with_change(tmp_path, "a.txt", "a\n", "changed\n")
    with (tmp_path / "regular").open("w") as f:
        ref = _branch_ref(ws / ".git")
        ref.unlink()
        ref.symlink_to(f"/proc/self/fd/{f.fileno()}")
        assert os.path.isfile(ref)
        why = unsafe_git_files(str(ws))
    assert "/proc" in why, why


def test_a_directory_listed_clean_is_listed_again_once_changed(tmp_path: Path) -> None:
    """Clean directories are remembered by inode, mtime and ctime: a FIFO made later, its
    directory's mtime set back (``touch -d``), is still found (the ctime moved)."""
    require(shutil.which("git") is not None, "needs git on the host")
    ws = repo_with_change(tmp_path, "a.txt", "a\n", "changed\n")
    time.sleep(2.2)  # past _SETTLED_S: the directories are remembered as clean
    assert unsafe_git_files(str(ws)) == ""
    ref = _branch_ref(ws / ".git")
    before = os.stat(ref.parent)
    _replace_with_fifo(ref)
    os.utime(ref.parent, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "not a regular file" in unsafe_git_files(str(ws))


def test_a_gitfile_naming_a_directory_that_is_no_repository_is_not_walked(tmp_path: Path) -> None:
    """``gitdir: /`` (or any directory without HEAD, objects and refs): git refuses it without
    opening more, so the check does not walk the host's file system behind it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text("gitdir: /\n")
    took, why = _timed(lambda: unsafe_git_files(str(ws)))
    assert why == "" and took < QUICK_S, (took, why)


def test_an_alternate_naming_a_large_directory_is_walked_where_git_looks(tmp_path: Path) -> None:
    """An alternate may name any directory (``/usr``): only its fan-out directories, ``pack/``
    and ``info/`` are walked (whole, /usr took 0.5-4 s a check and failed on its links to
    /dev/null)."""
    require(shutil.which("git") is not None, "needs git on the host")
    ws = repo_with_change(tmp_path, "a.txt", "a\n", "changed\n")
    (ws / ".git" / "objects" / "info" / "alternates").write_text("/usr\n")
    started = cpu_seconds()  # CPU, not wall (round 49): 0.002 s; a loaded lane's waits are not the walk's
    why = unsafe_git_files(str(ws))
    took = cpu_seconds() - started
    assert why == "" and took < 1.0, (took, why)
