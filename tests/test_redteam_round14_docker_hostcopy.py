"""Red team round 14: the host-side workspace copies without docker (runs as any host user).

The Inspect sample copy and the batch task copy run on the host as its user, like docker's
copy-in (`tests/test_redteam_round14_docker_copyrace.py`): a name another process swapped for a
symlink after ``copytree``'s listing was followed (a root caller copied root's files into the
sandbox's workspace). They now copy by descriptors (`sandbox._anchoredcopy`); the copy keeps what
``copytree`` kept. No container: this file also holds for an unprivileged caller.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sandbox.docker import _workspace

SECRET = "rt14-copy-secret-0xFEEDFACE"


def test_the_copy_keeps_what_copytree_kept(tmp_path: Path) -> None:
    """Files, directories, links (as links), modes and times come out as before; FIFOs do not."""
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "f").write_bytes(b"x" * 70000)
    os.chmod(ws / "a" / "b" / "f", 0o751)
    os.utime(ws / "a" / "b" / "f", (1_000_000, 1_000_000))
    os.symlink("../../etc/passwd", ws / "a" / "link")
    os.mkfifo(ws / "fifo")
    (ws / ".env").write_text(SECRET)
    dest = tmp_path / "dest"
    _workspace.copy_in(ws, str(dest), [ws / ".env"], (os.getuid(), os.getgid()))
    assert (dest / "a" / "b" / "f").read_bytes() == b"x" * 70000
    st = os.stat(dest / "a" / "b" / "f")
    assert (st.st_mode & 0o7777, int(st.st_mtime)) == (0o751, 1_000_000)
    assert os.readlink(dest / "a" / "link") == "../../etc/passwd"
    assert not (dest / "fifo").exists() and not (dest / ".env").exists()


def _racer_everywhere(monkeypatch: pytest.MonkeyPatch, ws: Path, outside: Path) -> list[str]:
    """`_racer` for the Inspect sample and batch task copies (whichever module's filter they call)."""
    import sandbox._anchoredcopy as anchored
    import sandbox._workspace_copy as plain

    original = plain.left_out
    done: list[str] = []

    def after_listing(directory: str, names: list[str], *args: Any, **kwargs: Any) -> list[str]:
        skip = original(directory, names, *args, **kwargs)
        if os.path.abspath(directory) == str(ws) and not done:
            os.rename(ws / "notes.txt", ws / ".notes.old")
            os.symlink(outside / "secret.txt", ws / "notes.txt")
            done.append("notes.txt")
        return skip

    monkeypatch.setattr(plain, "left_out", after_listing)
    monkeypatch.setattr(anchored, "left_out", after_listing)
    return done


def test_the_inspect_sample_copy_does_not_follow_a_swapped_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shellrt.integrations._inspect_leftovers import SampleDir

    outside = tmp_path / "host-only"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("notes\n")
    (ws / "kept.txt").write_text("kept\n")
    swapped = _racer_everywhere(monkeypatch, ws, outside)
    sample = SampleDir()
    try:
        sample.prepare(ws)
        assert swapped == ["notes.txt"]
        copied = sample.workspace / "notes.txt"
        # What is there now is a link (copied as one, as every listed link is), never its target's bytes.
        assert copied.is_symlink() or not copied.exists() or SECRET not in copied.read_text(errors="replace")
        assert (sample.workspace / "kept.txt").read_text() == "kept\n"
    finally:
        sample.remove()


def test_the_batch_task_copy_is_the_anchored_one() -> None:
    """The batch worker copies a task's workspace with the same function (checked above)."""
    import sandbox._anchoredcopy as anchored
    from shellrt.batch import worker

    assert worker.copy_workspace is anchored.copy_workspace
