"""Round 16, exhaustion: a full disk under the session directory cut a log line, and the cut line
ate the next record written once space was back (transcript and audit record).

A hostile command fills the disk the session directory lives on (the default state dir is on the
host's disk: `fallocate` from the workspace, or a flood of output) while a call's transcript line
is written: the part that fit stayed with no newline, and the next line was glued to it -- one
line that is no JSON, so a reopened session, ``shellrt sessions show`` and an auditor lost a record
written whole. Reproduced on a 256 KiB tmpfs made here (root).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.permissions.trust import append_audit
from tests._small_disk import mounted_tmpfs


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted on a directory of ``tmp_path`` (unmounted after)."""
    with mounted_tmpfs(tmp_path, 256 << 10) as disk:
        yield disk


def _fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; the filler file (remove it to give the space back)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"x" * 512)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def _records(path: Path) -> tuple[list[dict[str, Any]], list[bytes]]:
    """The JSON lines of ``path``, and the lines that are not JSON."""
    good, bad = [], []
    for raw in path.read_bytes().splitlines():
        try:
            good.append(json.loads(raw))
        except ValueError:
            bad.append(raw)
    return good, bad


async def _bash(rt: shellrt.Runtime, command: str) -> str:
    use_id = "rt16-" + secrets.token_hex(4)
    await rt.run([{"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": command}}])
    return use_id


def test_a_transcript_line_cut_by_a_full_disk_never_eats_the_next_call(
    small_disk: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    session = small_disk / "s"

    async def main() -> tuple[str, str]:
        async with shellrt.Runtime(ws, "local", session_dir=session, mode="bypassPermissions") as rt:
            await _bash(rt, "echo first")
            filler = _fill(small_disk)
            # ~100 KB of result in the call line: the part that fits lands, the rest does not.
            cut = await _bash(rt, "seq 1 30000")
            filler.unlink()
            after = await _bash(rt, "echo after-the-disk-was-freed")
        return cut, after

    cut, after = anyio.run(main)
    good, bad = _records(session / "transcript.jsonl")
    kinds = {(r.get("tool_use_id"), r.get("type")) for r in good}
    # Written whole once space was back: both of its lines parse.
    assert (after, "start") in kinds and (after, "call") in kinds, (bad, sorted(map(str, kinds)))
    # Nothing that is not JSON is left behind: the cut line was taken back.
    assert bad == [], [b[:120] for b in bad]
    assert (cut, "start") in kinds


def test_an_audit_line_cut_by_a_full_disk_never_eats_the_next_record(small_disk: Path) -> None:
    session = small_disk / "s"
    session.mkdir()
    append_audit(session, {"event": "first"})
    filler = _fill(small_disk)
    append_audit(session, {"event": "cut", "detail": "y" * 20_000})  # more than the page's slack
    filler.unlink()
    append_audit(session, {"event": "after"})
    good, bad = _records(session / "audit.jsonl")
    assert [r["event"] for r in good] == ["first", "after"], (good, [b[:80] for b in bad])
    assert bad == []


def test_a_log_that_does_not_end_a_line_gets_one_before_the_next_record(tmp_path: Path) -> None:
    """A cut that could not be taken back (a crash mid-write, another writer): the next record
    still starts a line of its own."""
    session = tmp_path / "s"
    session.mkdir()
    (session / "audit.jsonl").write_bytes(b'{"event": "whole"}\n{"event": "cut by a cra')
    append_audit(session, {"event": "after"})
    good, bad = _records(session / "audit.jsonl")
    assert [r["event"] for r in good] == ["whole", "after"]
    assert bad == [b'{"event": "cut by a cra']


def test_the_audit_record_is_never_appended_through_a_planted_symlink(tmp_path: Path) -> None:
    """The trust decision's writer followed a symlink at ``audit.jsonl`` (the guard's own writer
    had refused one since round 13): both go through one opener now."""
    session = tmp_path / "s"
    session.mkdir()
    target = tmp_path / "bashrc"
    target.write_text("# rc\n")
    (session / "audit.jsonl").symlink_to(target)
    append_audit(session, {"event": "workspace_trust", "path": "$(touch /tmp/owned)"})
    assert target.read_text() == "# rc\n"
