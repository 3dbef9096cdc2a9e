"""Review of round 36 (hostenv): the git directory walk made slow by links a command plants.

Round 36 walks every entry of the git directories before host git runs and bounds the walk at
100,000 entries. Each symlink entry is resolved link by link in Python (the /proc check) and,
when it leads to a directory, by ``realpath``: a cost per component of its target, not per entry.
A command that writes ``.git`` (commits need ``refs/`` and ``objects/`` writable) plants links
whose targets walk ``d/../d/..`` hundreds of times; directories holding links are never cached,
so every check of every git command paid again (4-5 checks a command).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from shellrt.tools._gitfiles import unsafe_git_files
from shellrt.tools._gitrepo import changed_paths
from tests._git import repo_with_change

#: The check's own bound (`MAX_CHECK_S`, 2 s) plus slack for a loaded machine.
QUICK_S = 3.5


def _plant_links(ws: Path, count: int, pairs: int) -> None:
    """``count`` links in ``.git/refs/tags`` to the git directory's HEAD, each target walking
    into ``.git/d`` and out again ``pairs`` times (a regular file in the end: the check passes it)."""
    git_dir = ws / ".git"
    (git_dir / "d").mkdir()
    target = "../../" + "d/../" * pairs + "HEAD"
    assert (git_dir / "refs" / "tags" / target).resolve() == (git_dir / "HEAD").resolve()
    tags = git_dir / "refs" / "tags"
    for i in range(count):
        os.symlink(target, tags / f"t{i}")


def _timed(ws: Path) -> tuple[float, str]:
    started = time.monotonic()
    why = unsafe_git_files(str(ws))
    return time.monotonic() - started, why


def test_links_with_long_targets_fail_closed_at_once(tmp_path: Path) -> None:
    """800 ``d/..`` pairs a target: ~8 ms of lstat calls a link, 1,000 links ~8 s a check
    (passed, after that long). Now a target past 256 steps is not followed: fails closed."""
    ws = repo_with_change(tmp_path, "f.txt", "a\n", "b\n")
    _plant_links(ws, 1_000, 800)
    elapsed, why = _timed(ws)
    assert elapsed < QUICK_S, f"one check took {elapsed:.1f} s"
    assert "more links or steps than are followed" in why, why


def test_many_links_under_the_step_bound_stop_at_the_deadline(tmp_path: Path) -> None:
    """Links short enough to be followed, but many: the check ends at its time bound, fails closed."""
    ws = repo_with_change(tmp_path, "f.txt", "a\n", "b\n")
    _plant_links(ws, 20_000, 100)
    elapsed, why = _timed(ws)
    assert elapsed < QUICK_S, f"one check took {elapsed:.1f} s"
    assert "took over 2 s" in why, why


def test_a_git_command_is_judged_quickly_in_that_repository(tmp_path: Path) -> None:
    """What the model sees: the judgement of ``git diff`` (its changed paths) is not held for
    the walk; it fails closed ([""]: unknown, the command asks) within the bound."""
    ws = repo_with_change(tmp_path, "f.txt", "a\n", "b\n")
    _plant_links(ws, 20_000, 100)
    started = time.monotonic()
    paths = changed_paths(str(ws))
    elapsed = time.monotonic() - started
    assert elapsed < QUICK_S, f"judging took {elapsed:.1f} s"
    assert paths == [""]


def test_an_alternates_file_naming_one_directory_many_times(tmp_path: Path) -> None:
    """``objects/info/alternates`` (1 MiB, the bound it is read to) naming ``/usr/lib`` 100,000
    times: each line's object directory was listed again, uncounted (no entry budget, no time
    bound): ~15 ms a 100 lines here, over 10 s a check. Git itself drops the repeats. Now every
    listing counts against the check's bounds: it fails closed within them."""
    ws = repo_with_change(tmp_path, "f.txt", "a\n", "b\n")
    line = "/usr/lib\n"
    (ws / ".git" / "objects" / "info" / "alternates").write_text(line * ((1 << 20) // len(line)))
    elapsed, why = _timed(ws)
    assert elapsed < QUICK_S, f"one check took {elapsed:.1f} s"
    assert why, "passed"


def test_a_judgement_pays_for_the_bound_once(tmp_path: Path) -> None:
    """A git command's judgement checks 4-5 times (code keys, submodules, hooks, changed paths):
    with the time bound alone each check ran to it, ~8-10 s a judgement. A verdict past the
    bounds is kept a few seconds: the later checks answer at once, still failing closed."""
    ws = repo_with_change(tmp_path, "f.txt", "a\n", "b\n")
    _plant_links(ws, 20_000, 100)
    started = time.monotonic()
    whys = [unsafe_git_files(str(ws)) for _ in range(4)]
    elapsed = time.monotonic() - started
    assert elapsed < QUICK_S, f"four checks took {elapsed:.1f} s"
    assert all("took over 2 s" in why for why in whys), whys
