"""Red team, round 36 (analysis): read-only verdicts whose program writes, found by running every
option of the read-only tables in a bwrap sandbox under strace (a canary program on PATH, a snapshot
of the scratch tree before and after).

``file -p``/``--preserve-date`` sets each file's times back with ``utimes`` (mtime loses its
nanoseconds, ctime moves); ``git log|show|whatchanged --remerge-diff`` and ``--diff-merges=r``
(also spaced: ``--diff-merges r``, which the option model read as a revision) create and remove a
temporary object directory in ``.git/objects`` and run the merge machinery; so does ``git log -m``
in a repository whose own configuration says ``log.diffMerges=remerge``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from shellrt.analysis import analyze, git_hardening_env
from tests.conftest import require

WRITERS = ["file -p f", "file --preserve-date f", "file -bp f", "git log --remerge-diff",
           "git show --remerge-diff HEAD", "git whatchanged --remerge-diff", "git log --diff-merges=r",
           "git log --diff-merges=remerge", "git log --diff-merges r", "git show --diff-merges remerge"]
KEPT = ["file -b f", "file -L f", "git log -m", "git log --diff-merges=first-parent", "git show --diff-merges=on",
        "git log --combined-diff"]


def test_writing_options_are_not_read_only() -> None:
    assert [c for c in WRITERS if analyze(c).read_only] == []
    assert [c for c in KEPT if not analyze(c).read_only] == []


def _git(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> None:
    git = shutil.which("git")
    require(git is not None, "git not installed")
    assert git is not None
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run([git, *args], cwd=tmp_path / "r", env={**base, **(env or {})}, check=True, capture_output=True,
                   timeout=30)


def test_the_hardening_env_stops_a_repository_remerge(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    _git(tmp_path, "init", "-q", ".")
    (tmp_path / "r" / "f").write_text("x\n")
    _git(tmp_path, "add", "f")
    _git(tmp_path, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x")
    _git(tmp_path, "config", "log.diffMerges", "remerge")  # the repository's own configuration
    objects = tmp_path / "r" / ".git" / "objects"
    os.utime(objects, ns=(0, 0))
    _git(tmp_path, "log", "-m", env=git_hardening_env())
    assert objects.stat().st_mtime_ns == 0  # no temporary object directory made and removed
    _git(tmp_path, "log", "-m")
    assert objects.stat().st_mtime_ns != 0  # without the override git writes there


def test_file_p_writes_the_times(tmp_path: Path) -> None:
    program = shutil.which("file")
    require(program is not None, "file not installed")
    assert program is not None
    target = tmp_path / "f"
    target.write_text("x\n")
    os.utime(target, ns=(1_000_000_123, 2_000_000_123))
    subprocess.run([program, "-p", str(target)], check=True, capture_output=True, timeout=30)
    assert target.stat().st_mtime_ns == 2_000_000_000  # set back through utimes: the nanoseconds are lost
