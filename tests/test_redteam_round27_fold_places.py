"""Red team round 27 (fold): the file tools wrote into another shellrt process's places in a root.

A second shellrt process of the uid whose ``HOME`` or ``TMPDIR`` is this session's workspace keeps
its static cache (the zygote's init) and meeting place below ``.cache/shellrt`` and its temp-path
places (``shellrt-budget-<euid>``, ``shellrt-cache-<uid>``) there. bwrap masks them for commands
(round 27 bwrap); Write and Edit still planted an init or a lock file there. Now the file tools
refuse those names below every writable root, folded (``.CACHE/Shellrt`` on a folding filesystem),
whether the place exists yet or not.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from tests._bwrap_session import require_bwrap
from tests._governance import isolated_workspace

pytestmark = pytest.mark.bwrap

_ids = itertools.count()


def test_file_tools_refuse_other_processes_places_in_a_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bwrap()
    ws = isolated_workspace(tmp_path, monkeypatch)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    existing = ws / ".cache" / "shellrt" / "static"
    existing.mkdir(parents=True)
    (existing / "zinit").write_text("the other process's init\n")
    targets = [
        ws / ".cache" / "shellrt" / "static" / "zinit",  # Edit below: replace the other's init
        ws / ".cache" / "shellrt" / "static" / "zinit-new",
        ws / f"shellrt-budget-{os.geteuid()}" / "holder.lock",  # not there yet: a squat
        ws / f"shellrt-cache-{os.getuid()}" / "zinit",
        ws / ".CACHE" / "Shellrt" / "static" / "zinit",  # the same place on a folding filesystem
        ws / f"SHELLRT-Budget-{os.geteuid()}" / "holder.lock",
    ]
    calls = [ToolUseBlock(id=f"f27p{next(_ids)}", name="Read", input={"file_path": str(targets[0])})]
    calls += [
        ToolUseBlock(id=f"f27p{next(_ids)}", name="Write", input={"file_path": str(p), "content": "planted\n"})
        for p in targets
    ]
    edit = {"file_path": str(targets[0]), "old_string": "the other", "new_string": "a planted"}
    calls.append(ToolUseBlock(id=f"f27p{next(_ids)}", name="Edit", input=edit))
    ok = ws / ".cache" / "other-tool" / "x"
    calls.append(ToolUseBlock(id=f"f27p{next(_ids)}", name="Write", input={"file_path": str(ok), "content": "fine\n"}))

    async def main() -> list[shellrt.protocol.ResultEnvelope]:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            return await rt.run_envelopes(calls)

    results = anyio.run(main)
    said = [str(r.model.content) for r in results]
    assert [s for r, s in zip(results[:-1], said[:-1], strict=True) if not r.is_error] == []
    assert (existing / "zinit").read_text() == "the other process's init\n"
    made = [str(p) for p in targets[1:] if p.exists()]
    assert made == [], (made, said)
    assert not results[-1].is_error and ok.read_text() == "fine\n", said[-1]
