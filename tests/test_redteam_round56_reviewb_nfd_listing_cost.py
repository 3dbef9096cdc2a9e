"""Red team, round 56 (review b): the cost of looking for a non-ASCII deny's other spellings.

Round 56 (rules) made a deny whose fixed prefix is not ASCII look for every spelling on disk of
that prefix (``cafe`` + U+0301 for the rule's ``café``) by listing the prefix's parent directory,
on every check the rule does not match at once: each file tool call, each path a command names,
each rule. A workspace of 50,000 entries made one check of ``Read(./é/k/**)`` 56 ms (0.1 ms
before); a repository's 50 such rules and a command naming 100 paths, minutes. Now a listing of a
directory that has not changed (by its inode, mtime and ctime, settled for `_SETTLED_S`) is
looked up, not read again; a changed one is listed afresh, so a link made later is still found.
"""

from __future__ import annotations

import os
import time
import unicodedata
from pathlib import Path

import pytest

from shellrt.permissions.rules import _path_matches

NFC, NFD = "caf\u00e9", "cafe\u0301"


def _settled_workspace(tmp_path: Path, entries: int) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(entries):
        os.close(os.open(ws / f"f{i:06d}", os.O_CREAT | os.O_WRONLY, 0o600))
    time.sleep(2.1)  # older than the settle time: a listing of it may be kept
    return ws


def test_a_non_ascii_deny_does_not_list_a_large_workspace_per_check(tmp_path: Path) -> None:
    """Failed before: ~25 ms a check over 20,000 entries (a listing each); now well under 1 ms."""
    ws = _settled_workspace(tmp_path, 20_000)
    target = str(ws / "f000001")
    _path_matches(f"./{NFC}/k/**", target, ws, home=tmp_path / "home", resolve=False)  # warm
    t0 = time.process_time()
    for _ in range(200):
        assert not _path_matches(f"./{NFC}/k/**", target, ws, home=tmp_path / "home", resolve=False)
    per_check = (time.process_time() - t0) / 200
    assert per_check < 0.003, f"{per_check * 1000:.1f} ms a check"


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_a_link_made_after_the_listing_is_still_followed(tmp_path: Path, form: str) -> None:
    """Held before and after: the kept listing is of a directory that changed since, so not used."""
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "key").write_text("SECRET56\n")
    ws = _settled_workspace(tmp_path, 10)
    spec, key = f"./{unicodedata.normalize(form, NFC)}/**", str(tmp_path / "store" / "key")
    assert not _path_matches(spec, key, ws, home=tmp_path / "home", resolve=False)  # listed, kept
    os.symlink("../store", ws / NFD)  # right after the listing, within the same clock tick maybe
    assert _path_matches(spec, key, ws, home=tmp_path / "home", resolve=False)
