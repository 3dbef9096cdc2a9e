"""Red team round 12: the files host git opens in a hostile repository.

Before a git command is judged, the Bash tool runs git queries on the host
(``shellrt.tools._gitrepo``: ``git config --list``, ``rev-parse``, ``ls-files``,
``diff-index``). Git opens ``.git/config``, ``HEAD`` and every ``include.path``
with a plain blocking read. A FIFO there held each query for its 10 s timeout (a
``git status`` in that repository took 30 s to judge, on the thread that judges);
a 2 GB sparse ``.git/config`` was read into git's heap on the host (1 GB resident
before the timeout killed it). Now the files are checked without running git
(regular, bounded) and each host git runs with a data-size limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shellrt.tools._bashparts import git_hazard
from shellrt.tools._gitrepo import active_hooks, changed_paths, repo_code_keys
from tests._git import git_in, repo_with_change

#: Far below the 10 s host git timeout each blocked query used to wait out (round 49: 5 s, not 3 s:
#: host git starts at load 15-30).
QUICK_S = 5.0


def _repo(tmp_path: Path) -> Path:
    return repo_with_change(tmp_path, "a.txt", "a\n", "changed\n")


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    start = time.monotonic()
    out = call()
    return time.monotonic() - start, out


def _assert_quick_and_closed(ws: Path) -> None:
    """Every host-side git query fails closed, fast."""
    took, hazard = _timed(lambda: git_hazard(["git", "status"], str(ws)))
    assert hazard and took < QUICK_S, (took, hazard)
    took, changed = _timed(lambda: changed_paths(str(ws)))
    assert changed == [""] and took < QUICK_S, (took, changed)
    took, hooks = _timed(lambda: active_hooks(str(ws)))
    assert hooks and took < QUICK_S, (took, hooks)
    took, keys = _timed(lambda: repo_code_keys(str(ws), hardened=False))
    assert keys and took < QUICK_S, (took, keys)


def test_fifo_config_does_not_hold_the_judgement(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    (ws / ".git" / "config").unlink()
    os.mkfifo(ws / ".git" / "config")
    _assert_quick_and_closed(ws)


@pytest.mark.parametrize("name", ["HEAD", "index", "packed-refs"])
def test_fifo_repository_file_does_not_hold_the_listings(tmp_path: Path, name: str) -> None:
    """``rev-parse`` opens HEAD, ``ls-files`` the index, ``diff-index HEAD`` packed-refs."""
    ws = _repo(tmp_path)
    git_in(ws, "pack-refs", "--all")
    (ws / ".git" / name).unlink(missing_ok=True)
    os.mkfifo(ws / ".git" / name)
    took, changed = _timed(lambda: changed_paths(str(ws)))
    assert changed == [""] and took < QUICK_S, (took, changed)
    took, hooks = _timed(lambda: active_hooks(str(ws)))
    assert hooks and took < QUICK_S, (took, hooks)


def test_included_fifo_does_not_hold_the_listings(tmp_path: Path) -> None:
    """``include.path`` names a FIFO outside the repository: `git_hazard` sees the key
    without following it, but the listings (rev-parse follows includes) blocked."""
    ws = _repo(tmp_path)
    fifo = tmp_path / "elsewhere" / "fifo"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with open(ws / ".git" / "config", "a") as fh:
        fh.write(f'[includeIf "gitdir:/"]\n\tpath = {fifo}\n')
    _assert_quick_and_closed(ws)


def test_gitfile_pointing_at_a_fifo_config(tmp_path: Path) -> None:
    """A ``.git`` file naming a git directory elsewhere, whose config is a FIFO."""
    ws = _repo(tmp_path)
    real = tmp_path / "real.git"
    (ws / ".git").rename(real)
    (ws / ".git").write_text(f"gitdir: {real}\n")
    (real / "config").unlink()
    os.mkfifo(real / "config")
    _assert_quick_and_closed(ws)


def test_sparse_config_is_not_read_into_memory(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    config = ws / ".git" / "config"
    with open(config, "a") as fh:
        fh.write("[x]\n\ty = ")
    os.truncate(config, 2 << 30)
    _assert_quick_and_closed(ws)


_CHILD_RSS = """
import resource, subprocess, sys
import shellrt.tools._gitrepo as gitrepo
from shellrt.tools._gitrepo import _git
gitrepo._TIMEOUT_S = 60.0  # what one query may read before its timeout is not the bound tested
try:
    code = _git(["git", "config", "--list"], sys.argv[1], {"PATH": "/usr/bin:/bin"}).returncode
except subprocess.TimeoutExpired:
    code = -1
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, code)
"""


def test_host_git_heap_is_bounded_even_without_the_check(tmp_path: Path) -> None:
    """The check runs before git, a swap can follow it: each host git has a data-size limit,
    so a config swapped for a sparse file between the two cannot take the host's memory."""
    ws = _repo(tmp_path)
    config = ws / ".git" / "config"
    with open(config, "a") as fh:
        fh.write("[x]\n\ty = ")
    os.truncate(config, 1536 << 20)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD_RSS, str(ws)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    rss_mb, code = (int(v) for v in out.stdout.split())
    assert code > 0 and rss_mb < 700, out.stdout  # git's own out-of-memory exit, not our timeout


#: Every config key a git query could conceivably obey, each set to write a marker.
_HOSTILE_KEYS = (
    "core.fsmonitor",
    "core.pager",
    "core.sshCommand",
    "core.gitProxy",
    "core.askPass",
    "core.editor",
    "core.alternateRefsCommand",
    "diff.external",
    "diff.x.textconv",
    "diff.x.command",
    "filter.x.clean",
    "filter.x.smudge",
    "filter.x.process",
    "merge.x.driver",
    "uploadpack.packObjectsHook",
    "credential.helper",
    "gpg.program",
    "pager.status",
    "pager.diff",
    "pager.config",
    "pager.ls-files",
    "pager.rev-parse",
    "gc.recentObjectsHook",
)
_HOOKS = ("post-index-change", "reference-transaction", "pre-commit", "post-checkout", "fsmonitor-watchman")


@pytest.mark.parametrize("hardened", [True, False])
def test_no_repository_program_runs_on_the_host(tmp_path: Path, hardened: bool) -> None:
    """Regression (held before this round): no host query runs what the repository names,
    whatever the configuration, attributes and hooks say."""
    ws = _repo(tmp_path)
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in _HOOKS:
        for where in (hooks, ws / ".git" / "hooks"):
            (where / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
            (where / name).chmod(0o755)
    for key in _HOSTILE_KEYS:
        git_in(ws, "config", key, str(script))
    git_in(ws, "config", "core.hooksPath", str(hooks))
    git_in(ws, "config", "protocol.ext.allow", "always")
    (ws / ".gitattributes").write_text("* diff=x filter=x merge=x\n")
    (ws / "b.txt").write_text("b\n")
    os.utime(ws / "a.txt", (1, 1))  # stat-dirty: a refresh would hash it through the clean filter
    git_hazard(["git", "status"], str(ws), hardened=hardened)
    git_hazard(["git", "diff"], str(ws), hardened=hardened)
    changed_paths(str(ws))
    active_hooks(str(ws))
    repo_code_keys(str(ws), hardened=hardened)
    assert not marker.exists(), marker.read_text()
