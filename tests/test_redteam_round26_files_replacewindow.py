"""Red team, round 26 (files): a command's write inside Edit's and Write's replace is not lost unseen.

Edit and Write replace a file by renaming a new one over it, right after checking that the old
one is still what was read (round 20). A command's write to the old file after that check (by its
name, or through a file it holds open) went to a file no name led to any more once the rename was
made: the command's bytes were gone and the tool said the change was made (round 25, "Left").
Now the old file is held open across the replace and looked at after it: the command's version
is put back and the tool says its change was not made.

The window is microseconds wide; the test opens it where it is: right after confine's last check
(the real check runs, then a real second process writes the file, then the real rename). The
writers are a process that held the file open before the call (a log writer, an editor's save in
place) and a shell's ``>>`` by name.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import confine
from tests._calls import block_text
from tests._calls import one_call as _one
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: A process that opens the file, waits for a line on stdin, appends to the file through the fd it
#: opened, and says so (one line per write).
_HOLDER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("ready", flush=True)
for line in sys.stdin:
    os.write(fd, b"held write\n")
    print("done", flush=True)
"""


class _Holder:
    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"

    def write(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline() == "done\n"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def in_window(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Callable[[], None]]]:
    """Writers run (once each) right after confine's check before the rename (`_land`)."""
    writers: list[Callable[[], None]] = []
    real = confine._refuse_stale

    def checked(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        if sys._getframe(1).f_code.co_name == "_land":
            while writers:
                writers.pop(0)()

    monkeypatch.setattr(confine, "_refuse_stale", checked)
    yield writers


CALLS = [
    ("Edit", {"old_string": "old", "new_string": "new"}),
    ("Write", {"content": "new\n"}),
]


def runtime_on(tmp_path: Path, backend: str) -> tuple[Path, shellrt.Runtime]:
    """A workspace in ``tmp_path`` and a Runtime on it that may edit without asking (bwrap: required in CI)."""
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    runtime = shellrt.Runtime(
        workspace=ws, sandbox=backend, mode="acceptEdits", session_dir=tmp_path / "s", settings_files=()
    )
    return ws, runtime


def _no_exchange(parent: int, a: bytes, b: bytes) -> None:
    raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))


@pytest.mark.parametrize(
    ("backend", "exchange"), [("local", True), ("bwrap", True), ("local", False), ("bwrap", False)]
)
async def test_a_write_inside_the_replace_is_put_back_and_said(
    tmp_path: Path,
    backend: str,
    exchange: bool,
    in_window: list[Callable[[], None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``renameat2(RENAME_EXCHANGE)`` confine sees the write in the file it displaced and
    exchanges back (the write stays where it was made); without (a filesystem that refuses it)
    the rename lands and the command's version is put back."""
    if not exchange:
        monkeypatch.setattr(confine, "_exchange", _no_exchange)
    answer = "changed after it was read" if exchange else "put back"
    ws, runtime = runtime_on(tmp_path, backend)
    lost = []
    async with runtime as rt:
        for tool, arguments in CALLS:
            for how in ("held", "by name"):
                f = ws / f"{tool}-{how.replace(' ', '')}.txt"
                f.write_text("old\n")
                holder = _Holder(f) if how == "held" else None
                try:
                    await _one(rt, "Read", file_path=str(f))
                    if holder is not None:
                        in_window.append(holder.write)
                    else:
                        in_window.append(lambda f=f: _append_by_name(f))
                    result = await _one(rt, tool, file_path=str(f), **arguments)
                finally:
                    if holder is not None:
                        holder.close()
                text = block_text(result)
                now = f.read_text()
                said = result.get("is_error") and answer in text
                if in_window or not said or "write" not in now or "new" in now:
                    lost.append((tool, how, now, text))
    assert not lost, (
        f"{len(lost)} of {2 * len(CALLS)} writes inside the replace were lost or unsaid: {lost!r}"
    )


def _append_by_name(f: Path) -> None:
    subprocess.run(["sh", "-c", 'printf "shell write\\n" >> "$1"', "sh", str(f)], check=True)


def test_a_file_changed_again_is_not_put_back(tmp_path: Path) -> None:
    """The new file changed after the replace too (a second write, by name): nothing is put back
    over it, and the error says the command's write is not in the file."""
    from shellrt.protocol import ToolExecutionError
    from shellrt.tools import _replaced

    f = tmp_path / "f.txt"
    f.write_text("old\n")
    view = confine.View([confine.Mount("/", "/"), confine.Mount(str(tmp_path), str(tmp_path), writable=True)])
    base = confine.stamp(os.stat(f))
    fd = _replaced.hold(view, str(f), base, expect=None, expect_id=None)
    try:
        with open(f, "a") as old:  # a command's fd on the old file
            (tmp_path / "new").write_text("ours\n")
            os.rename(tmp_path / "new", f)  # the replace
            old.write("command\n")
        assert _replaced.written_meanwhile(fd, base)
        f.write_text("third\n")  # and the new file changed again
        with pytest.raises(ToolExecutionError, match="could not be put back"):
            _replaced.put_back(view, fd, str(f), b"ours\n", 1 << 20, str(f))
    finally:
        os.close(fd)
    assert f.read_text() == "third\n"
