"""Red team round 20, docker: batch collection listed every directory a command made (round 19's left-over).

A batch task's ``collect.files`` reads docker's copy-mode workspace (and bwrap's) on the host, as
the caller. Round 19 bounded the files it matches (`_MAX_COLLECT_NAMES`) and their depth
(`_MAX_COLLECT_STEPS`), but not the directories it lists to find them: ``**/report.xml`` or
``out/**`` listed every directory below, and a command makes each with one ``mkdir`` (measured by
hand: 200,000 empty directories, one ``os.scandir`` each, ~1.9 s of the host's CPU per pattern;
their number is bounded only by the workspace disk's inodes). Every directory listed, by the
patterns and by the walk of a matched directory, now counts against `_MAX_COLLECT_LISTED`
(1,000,000) over the whole collection; past it `CollectTooLargeError` says to name the directories.
No container: the same function runs for every backend.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.batch import worker
from shellrt.batch.worker import CollectTooLargeError, _copy_matches

_DIRS = 3000
_BOUND = 1000


def _tree(root: Path) -> None:
    """``out/`` with ``_DIRS`` empty directories and one file the task wants."""
    (root / "out").mkdir(parents=True)
    for i in range(_DIRS):
        os.mkdir(root / "out" / f"d{i}")
    (root / "out" / "d7" / "report.xml").write_text("<ok/>")


@pytest.mark.parametrize("pattern", ["out/**", "**/report.xml", "out/*/report.xml"])
def test_listing_more_directories_than_the_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    """3,000 directories, a bound of 1,000 names: refused, naming the bound. Before: every name
    listed and the file copied (failed 3 of 3)."""
    monkeypatch.setattr(worker, "_MAX_COLLECT_LISTED", _BOUND, raising=False)
    root, dest = tmp_path / "ws", tmp_path / "dest"
    _tree(root)
    with pytest.raises(CollectTooLargeError, match="directory entries"):
        _copy_matches(root, (pattern,), dest, 1 << 20)


def test_the_bound_is_the_whole_collections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two patterns of about 800 names listed each under a bound of 1,000: the second is refused."""
    monkeypatch.setattr(worker, "_MAX_COLLECT_LISTED", _BOUND, raising=False)
    root, dest = tmp_path / "ws", tmp_path / "dest"
    for top in ("a", "b"):
        for i in range(200):
            os.makedirs(root / top / f"d{i}")
    with pytest.raises(CollectTooLargeError, match="directory entries"):
        _copy_matches(root, ("a/**", "b/**"), dest, 1 << 20)


def test_a_tree_under_the_bound_is_collected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound costs a legitimate task nothing: the file below 3,000 directories comes out."""
    monkeypatch.setattr(worker, "_MAX_COLLECT_LISTED", 10 * _DIRS, raising=False)
    root, dest = tmp_path / "ws", tmp_path / "dest"
    _tree(root)
    for pattern in ("out/**", "**/report.xml", "out/*/report.xml"):
        assert _copy_matches(root, (pattern,), dest, 1 << 20) == ["out/d7/report.xml"]
    assert (dest / "out" / "d7" / "report.xml").read_text() == "<ok/>"
