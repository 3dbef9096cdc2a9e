"""Stop 64 (lead): a file judged by a stamp that a rewrite can keep.

Round 51's files11 audit listed places that remember what a file says by (device, inode, size,
mtime) and judge a later look at the "same" file by that stamp. A rewrite in place to the same
size with its modification time put back (``os.utime``, ``touch -d``: any owner may set it) keeps
the stamp, and so kept the old answer:

- `_cd_loads`: what an ``.envrc`` or mise config loads at ``cd`` (the paths a file tool must ask
  before writing): a config rewritten to load another file kept protecting only the first;
- `BinaryJudge`: one Grep call's "this file holds a NUL" answer per file.

The change time is now in both stamps; only the kernel sets it (each test waits until the
rewrite's change time differs from the first one's: timestamps are coarse, a few ms).

And the HTTP server's ``--token-file`` was judged private by a stat of its *path*, then opened: a
file made readable by others in between was taken. The file opened is now judged itself.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from shellrt.server import _http_token
from shellrt.supervisor._cd_loads import cd_loaded_reason
from shellrt.tools._binary_judge import BinaryJudge


def _rewrite_keeping_mtime(path: Path, text: bytes) -> None:
    """Rewrite ``path`` in place (same inode) with ``text`` and put its mtime back; return once its
    change time differs from before (the clock behind ctime ticks every few ms)."""
    before = os.stat(path)
    assert len(text) == before.st_size, "the attack keeps the size"
    for _ in range(1000):
        with open(path, "r+b") as fh:
            fh.write(text)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
        if after.st_ctime_ns != before.st_ctime_ns:
            return
        time.sleep(0.005)
    raise AssertionError("the change time never moved")


def test_a_config_rewritten_with_its_mtime_put_back_is_read_again(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path)) / "ws"
    ws.mkdir()
    envrc = ws / ".envrc"
    envrc.write_text("dotenv_if_exists .env.aaaaa\n")
    assert cd_loaded_reason(ws / ".env.aaaaa") is not None
    assert cd_loaded_reason(ws / ".env.bbbbb") is None
    _rewrite_keeping_mtime(envrc, b"dotenv_if_exists .env.bbbbb\n")
    reason = cd_loaded_reason(ws / ".env.bbbbb")
    assert reason is not None and ".envrc" in reason, "the rewritten config's load was not seen"
    assert cd_loaded_reason(ws / ".env.aaaaa") is None


def test_a_file_rewritten_with_its_mtime_put_back_is_checked_again(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"hello world\n")
    judge = BinaryJudge()
    with open(target, "rb") as fh:
        assert judge.has_nul(fh) is False
    _rewrite_keeping_mtime(target, b"hello\0world\n")
    with open(target, "rb") as fh:
        assert judge.has_nul(fh) is True, "the NUL written in place was not seen"


def test_a_token_file_opened_after_it_became_readable_by_others_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text("a" * 40 + "\n")
    token.chmod(0o600)
    assert _http_token.read_token_file(token).value == "a" * 40
    real_open = os.open

    def opened_after_a_chmod(path: object, flags: int, *rest: int) -> int:
        if os.fspath(path) == os.fspath(token):  # type: ignore[call-overload]
            os.chmod(token, 0o644)  # between the path's stat and the open
        return real_open(path, flags, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", opened_after_a_chmod)
    with pytest.raises(_http_token.TokenError, match="readable or writable by others"):
        _http_token.read_token_file(token)
