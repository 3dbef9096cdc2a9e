"""Red team round 41 (files4): a FIFO named like an ignore file hung every Glob and Grep.

ripgrep reads ``.gitignore``, ``.ignore`` and ``.rgignore`` in each directory it enters, with a
blocking open: a FIFO there (``mkfifo src/.rgignore``, one command, or a tarball the repository
ships) held it in the kernel's wait for a writer, so every Glob and Grep of the tree ran to the
60 s deadline and failed with "a very large tree, or a file system that does not answer" --
the model's search tools gone for the session, from one file (local: ripgrep on the host). The
Python walker already refused such a file (it opens ignore files non-blocking and reads only a
regular one). Now a ripgrep waiting to open a FIFO is seen (`/proc/<pid>/task/*/wchan`) and
stopped, and the call is answered by the walker: same ignore rules, the FIFO read as no rules.
Inside bwrap the same watch runs in the shell that starts ripgrep there (`_paths._SAME_CWD`).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.protocol import Tool, ToolContext
from shellrt.tools import _search
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests._calls import one_call
from tests.conftest import require
from tests.test_tools_edit import make_ctx


def _run(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> tuple[float, str]:
    async def go() -> str:
        inp = tool.parse_input(raw)
        assert (await tool.validate(inp, ctx)).ok
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except Exception as exc:
            return f"error: {exc}"

    start = time.monotonic()
    got = anyio.run(go)
    return time.monotonic() - start, got


@pytest.mark.parametrize("held", [False, True], ids=["no-writer", "a-writer-holds-it"])
@pytest.mark.parametrize("fifo", [".ignore", "src/.rgignore", ".gitignore"])
def test_a_fifo_ignore_file_does_not_hang_glob_or_grep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fifo: str, held: bool
) -> None:
    """``held``: a command (a background task) keeps it open to write and writes nothing, so
    ripgrep's open succeeds and its read waits instead."""
    require(_search.ripgrep_binary() is not None, "ripgrep (the host search this attack hung)")
    monkeypatch.setattr(_search, "_TIMEOUT_S", 20.0)  # a failure takes 20 s, not 60
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "src/a.py").write_text("needle = 1\n")
    (root / "build").mkdir()
    (root / "build/b.py").write_text("needle = 2\n")
    (root / ".git").mkdir()  # ripgrep obeys .gitignore only in a repository
    os.mkfifo(root / fifo)
    # O_RDWR on a FIFO never blocks: this process is then a writer that writes nothing.
    writer = os.open(root / fifo, os.O_RDWR | os.O_NONBLOCK) if held else None
    ctx = make_ctx(root)
    try:
        for tool, raw in ((GlobTool(), {"pattern": "**/*.py"}), (GrepTool(), {"pattern": "needle"})):
            took, got = _run(tool, ctx, raw)
            assert "src/a.py" in got and "build/b.py" in got, got
            assert took < 10, f"{tool.name} took {took:.1f} s"
    finally:
        if writer is not None:
            os.close(writer)


@pytest.mark.anyio
async def test_a_bwrap_command_cannot_hang_glob_or_grep_with_a_fifo(tmp_path: Path) -> None:
    """ripgrep runs inside the sandbox there, and hung the same way (the error even read "Grep
    failed unexpectedly: TimeoutError"); the command makes the FIFO first."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src/a.py").write_text("needle = 1\n")
    async with shellrt.Runtime(
        workspace=root,
        sandbox="bwrap",
        mode="acceptEdits",
        session_dir=tmp_path / "s",
        settings_files=(),
        allow=("Bash",),
    ) as rt:
        made = await one_call(rt, "Bash", command="mkfifo src/.rgignore .ignore")
        assert not made["is_error"], made
        for held in (False, True):
            if held:  # a background task holds it open to write: ripgrep's read waits, not its open
                hold = "python3 -c \"import os, time; fds = [os.open(f, os.O_RDWR) for f in ('.ignore', 'src/.rgignore')]; time.sleep(300)\""
                started = await one_call(rt, "Bash", command=hold, run_in_background=True)
                assert not started["is_error"], started
                await anyio.sleep(1)
            for name, raw in (("Grep", {"pattern": "needle"}), ("Glob", {"pattern": "**/*.py"})):
                start = time.monotonic()
                got = await one_call(rt, name, **raw)
                took = time.monotonic() - start
                assert "src/a.py" in str(got["content"]) and not got["is_error"], (held, got)
                assert took < 10, f"{name} took {took:.1f} s (held: {held})"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_fifo_ignore_file_does_not_hang_glob_or_grep",
        "test_a_bwrap_command_cannot_hang_glob_or_grep_with_a_fifo",
    )
