"""Red team round 4: the host's git inspection cannot stall the event loop.

Before a git command is judged, the Bash tool runs ``git config --list`` on the
host in the repository. A repository's ``include.path`` naming a FIFO (or
``/dev/zero``, or a huge file) made that git block until its 10 s timeout, and
it ran inside the event loop: every session of the process stalled meanwhile.
A repository include now fails closed at once (the command asks, without git
following it), and the host's git runs off the event loop, so a repository
whose own files block git (its ``.git/config`` a FIFO) stalls only its own call.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text as _text

_ids = itertools.count()


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("a\n")
    return ws


async def _bash(ws: Path, command: str) -> tuple[ResultEnvelope, float]:
    start = time.monotonic()
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="local",
        session_dir=ws.parent / f".s{next(_ids)}",
        tools=[Bash()],
        settings_files=(),
        mode="dontAsk",
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id=f"rt4inc{next(_ids)}", name="Bash", input={"command": command})]
        )
    return envelope, time.monotonic() - start


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_a_hostile_include_fails_closed_at_once(tmp_path: Path, kind: str) -> None:
    ws = _repo(tmp_path)
    target = tmp_path / "inc"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    else:
        with target.open("wb") as fh:
            fh.write(b"#")
            fh.truncate(8 << 30)  # sparse: one comment line of 8 GiB for git to read through
    with (ws / ".git" / "config").open("a") as fh:
        fh.write(f"[include]\n\tpath = {target}\n")
    envelope, took = anyio.run(_bash, ws, "git status")
    assert envelope.is_error and "include.path" in _text(envelope), _text(envelope)
    assert took < 5, f"the check took {took:.1f} s"


def test_a_repository_that_blocks_git_stalls_only_its_own_call(tmp_path: Path) -> None:
    """``.git/config`` a FIFO: git itself blocks opening it (until the check's timeout). Another
    session's call in the same process completes meanwhile."""
    hostile = _repo(tmp_path / "h")
    (hostile / ".git" / "config").unlink()
    os.mkfifo(hostile / ".git" / "config")
    clean = _repo(tmp_path / "c")
    finished: dict[str, float] = {}

    async def main() -> None:
        async def judged() -> None:
            envelope, _ = await _bash(hostile, "git status")
            finished["hostile"] = time.monotonic()
            assert envelope.is_error, _text(envelope)

        async def other() -> None:
            for _ in range(3):  # spread over the hostile check's time
                await anyio.sleep(1)
                envelope, _ = await _bash(clean, "echo fine")
                assert "fine" in _text(envelope), _text(envelope)
            finished["other"] = time.monotonic()

        async with anyio.create_task_group() as tg:
            tg.start_soon(judged)
            tg.start_soon(other)

    started = time.monotonic()
    anyio.run(main)
    # Since round 12 the FIFO is seen before git runs (tests/test_redteam_round12_host_gitfiles.py):
    # the hostile call does not block at all, which is even better than blocking only itself.
    quick = finished["hostile"] - started < 3
    assert quick or finished["other"] < finished["hostile"], "another session waited for the blocked git"
