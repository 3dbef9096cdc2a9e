"""Red team, round 13: Inspect's and batch's workspace copies leave out other names of a hidden file.

``copy_workspace`` (Inspect samples, batch tasks) left out each hidden path, but a hard link to a
hidden file made before the rule (``ln .env notes.txt``), or to a file below a hidden directory,
was copied with the secret's bytes under the harmless name. docker's copy mode was fixed in this
round; both now share `sandbox._workspace_copy.left_out` and `hidden_aliases`.
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox._anchoredcopy import copy_workspace


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "secrets").mkdir(parents=True)
    (repo / ".env").write_text("API_KEY=hunter2\n")
    (repo / "secrets" / "key").write_text("hunter3\n")
    os.link(repo / ".env", repo / "notes.txt")
    os.link(repo / "secrets" / "key", repo / "readme.txt")
    (repo / "plain.txt").write_text("ok\n")
    return repo


def test_other_names_of_a_hidden_file_are_not_copied(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    dest = tmp_path / "copy"
    copy_workspace(repo, dest, [repo / ".env", repo / "secrets"], homes=())
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
    assert copied == ["plain.txt"], copied
    for path in dest.rglob("*"):
        if path.is_file():
            assert "hunter" not in path.read_text()


def test_a_hard_link_between_two_visible_files_is_still_copied(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a").write_text("shared\n")
    os.link(repo / "a", repo / "b")
    (repo / ".env").write_text("x\n")
    dest = tmp_path / "copy"
    copy_workspace(repo, dest, [repo / ".env"], homes=())
    assert (dest / "a").read_text() == (dest / "b").read_text() == "shared\n"
    assert not (dest / ".env").exists()
