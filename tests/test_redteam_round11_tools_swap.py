"""Red team round 11 (file tools): what a check judged is what the call opens, by inode.

`validate` resolves a path once and the call opens it again; round 10 made the call refuse a
path whose *canonical path* changed. Two ways kept the canonical path and changed the file:

* a directory exchange (``renameat2(RENAME_EXCHANGE)``, in a loop, by a background sandboxed
  command): ``ws/pub/notes.txt`` judged at `validate` named ``ws/priv/notes.txt`` at the call,
  so a Read returned, and a Write landed in, a file no check had judged;
* a mount root reached by its host path: with a writable root inside another (``ws`` and
  ``ws/a/b``), a command that renamed ``ws/a`` and left a symlink there sent every path under
  ``ws/a/b`` -- canonical path unchanged -- to the symlink's target, outside every root (the
  bwrap side of it is `tests/test_redteam_round11_bwrap_nested.py`; the swap is made here
  from the host, between the runtime's steps, as the sandbox could before that fix).

Now `validate` records the `sandbox.confine.Identity` (device and inode of the directory and of
the entry) and every open and write compares it ("changed since it was checked; try again"), and
a mount root inside a writable mount is reached from that mount's fd without following a
symlink. Failed before: the raced Read returned ``PRIVATE``, the raced Write landed in the
exchanged directory, and the nested-root Read and Write reached ``outside``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.base import ExecRequest, SandboxBackend
from sandbox.factory import create_backend
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.read import ReadInput, ReadTool
from shellrt.tools.write import WriteInput, WriteTool
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Exchanges ``pub`` and ``priv`` (in the cwd) as fast as it can until ``.stop`` appears, then
#: leaves them as they were (an even number of exchanges) and ends.
_EXCHANGER = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
done = 0
print("exchanging", flush=True)
while done % 2 or not os.path.exists(".stop"):
    if libc.renameat2(AT_FDCWD, b"pub", AT_FDCWD, b"priv", RENAME_EXCHANGE) != 0:
        print("exchange failed", ctypes.get_errno(), flush=True)
        break
    done += 1
print("exchanged", done, flush=True)
"""

#: How long the raced calls go on (the exchanger swaps some ten thousand times a second).
_RACE_S = 2.0


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rt11-tools-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _context(
    ws: Path, session: Path, backend: SandboxBackend | None = None, roots: tuple[Path, ...] = ()
) -> ToolContext:
    session.mkdir(exist_ok=True)
    ctx = ToolContext(
        session_id="s", session_dir=session, workspace=ws, cwd=str(ws), allowed_roots=(ws, *roots)
    )
    if backend is not None:
        ctx.services[SandboxBackend] = backend
    return ctx


async def _outcome(tool: Any, tool_input: Any, ctx: ToolContext) -> str:
    """The model's text of one call ("refused: ..." when the call refused)."""
    try:
        output = await tool.call(tool_input, ctx)
    except ToolExecutionError as exc:
        return f"refused: {exc}"
    return str(tool.to_model_content(output.data))


async def _with_exchanger(ws: Path, body: Any) -> Any:
    """Run ``body(ctx)`` against a bwrap session while a sandboxed command exchanges ws/pub and ws/priv."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        ctx = _context(ws, ws.parent / "s", backend)
        return await body(ctx, backend)
    finally:
        await backend.close()


async def _start_exchanger(backend: SandboxBackend, ws: Path) -> Any:
    (ws / ".stop").unlink(missing_ok=True)
    process = await backend.exec(
        ExecRequest(argv=("python3", "-c", _EXCHANGER), cwd=str(ws), env={"PATH": "/usr/bin:/bin"})
    )
    assert process.stdout is not None
    first = await process.stdout.receive()
    assert b"exchanging" in first, first
    return process


async def _stop_exchanger(process: Any, ws: Path) -> None:
    """Let the exchanger put the directories back and end (a kill could leave them swapped)."""
    (ws / ".stop").write_text("")
    with anyio.fail_after(30):
        status = await process.wait()
    assert status.exit_code == 0, status


async def test_a_read_never_returns_the_file_exchanged_into_its_path(base: Path) -> None:
    ws = base / "ws"
    (ws / "pub").mkdir(parents=True)
    (ws / "priv").mkdir()
    (ws / "pub" / "notes.txt").write_text("public notes\n")
    (ws / "priv" / "notes.txt").write_text("PRIVATE notes\n")

    async def body(ctx: ToolContext, backend: SandboxBackend) -> list[str]:
        tool, tool_input = ReadTool(), ReadInput(file_path=str(ws / "pub" / "notes.txt"))
        await tool.validate(tool_input, ctx)  # judged: ws/pub/notes.txt, the public file
        assert (await tool.check_permissions(tool_input, ctx)).behavior == "allow"
        process = await _start_exchanger(backend, ws)
        seen: list[str] = []
        try:
            deadline = time.monotonic() + _RACE_S
            while time.monotonic() < deadline:
                seen.append(await _outcome(tool, tool_input, ctx))
                ctx.read_state.clear()
                ctx.tool_state.clear()
        finally:
            await _stop_exchanger(process, ws)
        return seen

    seen = await _with_exchanger(ws, body)
    leaked = [s for s in seen if "PRIVATE" in s]
    assert not leaked, f"{len(leaked)} of {len(seen)} raced Reads returned the exchanged file: {leaked[0]}"
    refused = [s for s in seen if s.startswith("refused")]
    assert refused and all("changed since it was checked" in s and "try again" in s for s in refused), (
        refused[:3]
    )
    assert len(seen) > 20 and len(refused) < len(seen), (len(seen), len(refused))


async def test_a_write_never_lands_in_the_directory_exchanged_into_its_path(base: Path) -> None:
    ws = base / "ws"
    (ws / "pub").mkdir(parents=True)
    (ws / "priv").mkdir()
    pub_inode = os.stat(ws / "pub").st_ino
    assert pub_inode != os.stat(ws / "priv").st_ino

    async def body(ctx: ToolContext, backend: SandboxBackend) -> int:
        tool = WriteTool()
        calls = 0
        deadline = time.monotonic() + _RACE_S
        # at least 100 calls raced (CI64 at load 60-87 made 60 in the 2 s), within 8x the time
        while (now := time.monotonic()) < deadline or (calls < 100 and now < deadline + 7 * _RACE_S):
            inputs = [
                WriteInput(file_path=str(ws / "pub" / f"new-{calls}-{i}.txt"), content="written\n")
                for i in range(20)
            ]
            for tool_input in inputs:  # judged with pub in place; the race is the calls'
                await tool.validate(tool_input, ctx)
            process = await _start_exchanger(backend, ws)
            try:
                for tool_input in inputs:
                    await _outcome(tool, tool_input, ctx)
                    calls += 1
            finally:
                await _stop_exchanger(process, ws)
        return calls

    calls = await _with_exchanger(ws, body)
    public = next(d for d in (ws / "pub", ws / "priv") if os.stat(d).st_ino == pub_inode)
    private = ws / "priv" if public == ws / "pub" else ws / "pub"
    assert calls >= 100, calls
    assert sorted(os.listdir(private)) == [], (
        f"raced Writes landed in the exchanged directory: {os.listdir(private)}"
    )


async def test_a_root_inside_a_root_is_not_reached_through_a_swapped_directory(base: Path) -> None:
    ws, outside = base / "ws", base / "outside"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "mine.txt").write_text("inner root file\n")
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "mine.txt").write_text("TOPSECRET outside every root\n")
    ctx = _context(ws, base / "s", roots=(ws / "a" / "b",))
    read, read_input = ReadTool(), ReadInput(file_path=str(ws / "a" / "b" / "mine.txt"))
    write, write_input = WriteTool(), WriteInput(file_path=str(ws / "a" / "b" / "new.txt"), content="x\n")
    await read.validate(read_input, ctx)
    await write.validate(write_input, ctx)
    # What a sandboxed command did before the pins: ws/a renamed, a symlink in its place.
    os.rename(ws / "a", ws / "a2")
    os.symlink(outside, ws / "a")
    raced_read = await _outcome(read, read_input, ctx)
    raced_write = await _outcome(write, write_input, ctx)
    # Validated after the swap: the way to the root is refused as well.
    ctx.read_state.clear()
    ctx.tool_state.clear()
    fresh_input = ReadInput(file_path=str(ws / "a" / "b" / "mine.txt"))
    await read.validate(fresh_input, ctx)
    verdict = await read.check_permissions(fresh_input, ctx)
    fresh = await _outcome(read, fresh_input, ctx) if verdict.behavior == "allow" else "refused"
    assert "TOPSECRET" not in raced_read + fresh, (raced_read, fresh)
    assert not (outside / "b" / "new.txt").exists(), raced_write
    assert raced_read.startswith("refused") and "try again" in raced_read, raced_read
