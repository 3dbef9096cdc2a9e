"""Red team round 56 (hostrepo2): one entry of the sessions directory that cannot be stat'ed hid them all.

``shellrt sessions`` sorted the directory's entries by ``stat()`` inside one ``try``: a single
dangling symlink (or an entry a concurrent prune or ``rm`` removed between the listing and the
``stat``) made the whole listing empty. ``sessions ls`` said "no sessions", ``sessions rm
--older-than`` removed nothing and exited 0 -- the operator was told old transcripts (which hold
secrets) were cleaned up when none was. Real ``shellrt sessions`` runs on a real state directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _shellrt(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONPATH": os.getcwd()}
    env.pop("SHELLRT_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "sessions", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _root_with_old_session(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "state" / "shellrt" / "sessions"
    old = root / "r56-old-session"
    old.mkdir(parents=True)
    (old / "state.json").write_text(json.dumps({}))
    (old / "transcript.jsonl").write_text('{"ts": 1, "type": "call"}\n')
    then = time.time() - 40 * 86400
    os.utime(old, (then, then))
    (root / "r56-dangling").symlink_to(tmp_path / "nowhere")
    return root, old


def test_ls_lists_sessions_beside_a_dangling_entry(tmp_path: Path) -> None:
    _, old = _root_with_old_session(tmp_path)
    done = _shellrt(tmp_path, "ls")
    assert done.returncode == 0, done.stderr
    assert old.name in done.stdout, done.stdout
    listed = json.loads(_shellrt(tmp_path, "ls", "--json").stdout)
    assert [row["id"] for row in listed] == [old.name], listed


def test_rm_older_than_removes_old_sessions_beside_a_dangling_entry(tmp_path: Path) -> None:
    root, old = _root_with_old_session(tmp_path)
    done = _shellrt(tmp_path, "rm", "--older-than", "30")
    assert done.returncode == 0, done.stderr
    assert not old.exists(), f"an old transcript was kept while rm said nothing: {done.stdout!r} {done.stderr!r}"
    assert (root / "r56-dangling").is_symlink()  # not a session: left alone


def test_rm_by_id_finds_it_beside_a_dangling_entry(tmp_path: Path) -> None:
    _, old = _root_with_old_session(tmp_path)
    done = _shellrt(tmp_path, "rm", old.name)
    assert done.returncode == 0, done.stderr
    assert not old.exists()


def test_a_sessions_directory_that_cannot_be_listed_is_said(tmp_path: Path) -> None:
    """Not "no sessions": the operator would take the transcripts for gone."""
    root = tmp_path / "state" / "shellrt" / "sessions"
    root.parent.mkdir(parents=True)
    root.write_text("not a directory\n")
    for args in (("ls",), ("rm", "--older-than", "30")):
        done = _shellrt(tmp_path, *args)
        assert done.returncode == 1 and "cannot list" in done.stderr, (args, done.stdout, done.stderr)
