"""Red team, round 26 (files): a command's rename over the file inside Edit's and Write's replace is
not lost unseen.

`sandbox.confine.write_file` checked that the file was still the one read, then renamed the new
file over the name. A command that renamed its own file over the name in between (``mv new f``,
an editor's or a formatter's save) had its file replaced unseen: the old file, which the tools
hold open to see writes (`shellrt.tools._replaced`), was unchanged, and the tool said the change
was made. Now the new file is exchanged with the name atomically (``renameat2(RENAME_EXCHANGE)``)
and the file it displaced must be the one read; if not, it is exchanged back and the tool refuses.

The window is microseconds wide; the test opens it where it is: right after confine's last check
before the replace (the real check runs, then a real second process renames a file over the
target, then the real replace).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox import confine
from tests import test_redteam_round26_files_replacewindow as _window
from tests._calls import block_text
from tests._calls import one_call as _one
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: The hook that opens the window right after confine's last check, and the two tools' calls.
in_window = _window.in_window
CALLS = _window.CALLS


def _mv_over(f: Path, content: str) -> None:
    """A second process writes ``content`` to a file beside ``f`` and renames it over ``f``."""
    subprocess.run(
        ["sh", "-c", 'printf "%s" "$2" > "$1.cmd" && mv -f "$1.cmd" "$1"', "sh", str(f), content], check=True
    )


@pytest.mark.parametrize("backend", ["local", "bwrap"])
async def test_a_rename_over_the_file_inside_the_replace_is_kept_and_said(
    tmp_path: Path, backend: str, in_window: list[Callable[[], None]]
) -> None:
    ws, runtime = _window.runtime_on(tmp_path, backend)
    lost = []
    async with runtime as rt:
        for tool, arguments in CALLS:
            f = ws / f"{tool}.txt"
            f.write_text("old\n")
            await _one(rt, "Read", file_path=str(f))
            in_window.append(lambda f=f: _mv_over(f, "command\n"))
            result = await _one(rt, tool, file_path=str(f), **arguments)
            text = block_text(result)
            now = f.read_text()
            said = result.get("is_error") and "changed after it was read" in text
            if in_window or not said or now != "command\n":
                lost.append((tool, now, text))
    left = sorted(p.name for p in ws.iterdir())
    assert not lost, f"{len(lost)} of {len(CALLS)} renames inside the replace were lost or unsaid: {lost!r}"
    assert left == ["Edit.txt", "Write.txt"], f"files left behind: {left}"


def _view(root: Path) -> confine.View:
    return confine.View([confine.Mount("/", "/"), confine.Mount(str(root), str(root), writable=True)])


def _exchange_works(d: Path) -> bool:
    (d / "a").write_text("a")
    (d / "b").write_text("b")
    try:
        fd = os.open(d, os.O_RDONLY)
        try:
            confine._exchange(fd, b"a", b"b")
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            return False
        raise
    finally:
        (d / "a").unlink()
        (d / "b").unlink()
    return True


def test_a_second_rename_during_the_swap_back_is_kept_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command renames a file over the target in the window (Y), then another one (Z) between
    the exchange and the exchange back: nothing a command put there is deleted, the write is
    refused, and the error says where the other file is."""
    assert _exchange_works(tmp_path), "renameat2(RENAME_EXCHANGE) is refused on this filesystem"
    f = tmp_path / "f.txt"
    f.write_text("old\n")
    base = confine.stamp(os.stat(f))
    real_check, real_exchange = confine._refuse_stale, confine._exchange
    calls = []

    def checked(*args: Any, **kwargs: Any) -> None:
        real_check(*args, **kwargs)
        if sys._getframe(1).f_code.co_name == "_land":
            _mv_over(f, "Y\n")

    def exchange(parent: int, a: bytes, b: bytes) -> None:
        calls.append((a, b))
        if len(calls) == 2:
            _mv_over(f, "Z\n")
        real_exchange(parent, a, b)

    monkeypatch.setattr(confine, "_refuse_stale", checked)
    monkeypatch.setattr(confine, "_exchange", exchange)
    with pytest.raises(confine.ConfinementError, match="changed again while this write was undone") as err:
        confine.write_file(_view(tmp_path), str(f), b"ours\n", base=base)
    contents = sorted(p.read_text() for p in tmp_path.iterdir())
    assert contents == ["Y\n", "Z\n"], contents  # ours is gone, both of the command's files are kept
    stray = [p for p in tmp_path.iterdir() if p.name != "f.txt"]
    assert len(stray) == 1 and os.fsdecode(stray[0].name) in str(err.value)


def test_without_exchange_the_checked_rename_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filesystem that refuses RENAME_EXCHANGE (EINVAL: NFS, FUSE, ...) gets today's check, then
    rename; a file changed before the check is refused as before."""

    def refused(parent: int, a: bytes, b: bytes) -> None:
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

    monkeypatch.setattr(confine, "_exchange", refused)
    f = tmp_path / "f.txt"
    f.write_text("old\n")
    base = confine.stamp(os.stat(f))
    confine.write_file(_view(tmp_path), str(f), b"new\n", base=base)
    assert f.read_text() == "new\n"
    _mv_over(f, "command\n")
    with pytest.raises(confine.ConfinementError, match="changed after it was read"):
        confine.write_file(_view(tmp_path), str(f), b"newer\n", base=base)
    assert f.read_text() == "command\n" and sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_the_raw_syscall_exchanges_where_libc_has_no_wrapper(tmp_path: Path) -> None:
    """glibc < 2.28 has no ``renameat2``: the raw syscall (this machine's number) does the same."""
    import ctypes

    machine = os.uname().machine
    require(machine in confine._SYS_RENAMEAT2, f"no renameat2 number known for {machine}")
    raw = confine._Renameat2()
    raw._call = ctypes.CDLL(None, use_errno=True).syscall
    raw._call.restype = ctypes.c_long  # type: ignore[attr-defined]
    raw._nr = confine._SYS_RENAMEAT2[machine]
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        raw(fd, b"a", b"b", confine._RENAME_EXCHANGE)
        with pytest.raises(OSError) as err:
            raw(fd, b"a", b"missing", confine._RENAME_EXCHANGE)
    finally:
        os.close(fd)
    assert ((tmp_path / "a").read_text(), (tmp_path / "b").read_text()) == ("b", "a")
    assert err.value.errno == errno.ENOENT
