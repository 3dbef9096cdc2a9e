"""Red team, round 16 (files): the file tools write only where the sandbox's user may write.

bwrap run as root runs commands under an unprivileged uid that sees the workspace through an
idmapped mount (the workspace's owner is that uid, every other owner is nobody). Reads were held
to that uid's permission bits (round 9); writes were not: Write and Edit, running as root on the
host, created and replaced files in a directory another user owns inside the workspace, where
`echo > file` of a command fails with "Permission denied".
"""

from __future__ import annotations

import itertools
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: One id per call: a session refuses another call under a used id (round 19).
_IDS = itertools.count()


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def _one(rt: shellrt.Runtime, name: str, **raw: Any) -> dict[str, Any]:
    user = await rt.run([{"type": "tool_use", "id": f"t{next(_IDS)}", "name": name, "input": raw}])
    block: dict[str, Any] = user["content"][0]
    return block


def _workspace(tmp_path: Path) -> Path:
    """A workspace of uid 1234 holding a directory of uid 4321 (0755) with a 0644 file of theirs,
    and a sticky world-writable directory of uid 4321 with a 0644 file of theirs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 1234, 1234)
    theirs = ws / "theirs"
    theirs.mkdir(mode=0o755)
    (theirs / "notes.txt").write_text("THEIR NOTES\n")
    (theirs / "notes.txt").chmod(0o644)
    sticky = ws / "sticky"
    sticky.mkdir()
    (sticky / "their.txt").write_text("THEIR FILE\n")
    (sticky / "their.txt").chmod(0o644)
    for path in (theirs, theirs / "notes.txt", sticky, sticky / "their.txt"):
        os.chown(path, 4321, 4321)
    sticky.chmod(0o1777)
    return ws


async def test_tools_do_not_write_where_the_sandboxs_user_cannot(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root caller's commands run under another uid")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = _workspace(tmp_path)
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="bwrap",
        mode="bypassPermissions",
        session_dir=tmp_path / "session",
        settings_files=(),
    ) as rt:
        cmd = await _one(
            rt,
            "Bash",
            command="echo x > theirs/new.txt; echo x > theirs/notes.txt; mv -f theirs/notes.txt n2; "
            "echo y > sticky/mine.txt; mv -f sticky/mine.txt sticky/their.txt; echo done",
        )
        # The commands could not: the sandbox is the boundary the tools are held to.
        assert "done" in _text(cmd), _text(cmd)
        assert not (ws / "theirs" / "new.txt").exists(), _text(cmd)
        assert (ws / "theirs" / "notes.txt").read_text() == "THEIR NOTES\n", _text(cmd)
        assert (ws / "sticky" / "their.txt").read_text() == "THEIR FILE\n", _text(cmd)
        (ws / "sticky" / "mine.txt").unlink(missing_ok=True)
        read = await _one(rt, "Read", file_path="theirs/notes.txt")
        sread = await _one(rt, "Read", file_path="sticky/their.txt")
        results = {
            "write new": await _one(rt, "Write", file_path="theirs/new.txt", content="FORGED\n"),
            "write over": await _one(rt, "Write", file_path="theirs/notes.txt", content="FORGED\n"),
            "edit": await _one(
                rt, "Edit", file_path="theirs/notes.txt", old_string="THEIR", new_string="FORGED"
            ),
            "mkdir below": await _one(rt, "Write", file_path="theirs/sub/x.txt", content="FORGED\n"),
            "sticky over": await _one(
                rt, "Edit", file_path="sticky/their.txt", old_string="THEIR", new_string="FORGED"
            ),
        }
        # What the sandbox's user may write stays writable: its own file in the sticky directory,
        # a new file in the workspace.
        mine = await _one(rt, "Write", file_path="sticky/mine.txt", content="MINE\n")
        top = await _one(rt, "Write", file_path="top.txt", content="TOP\n")
    assert not read["is_error"] and not sread["is_error"], (_text(read), _text(sread))
    for what, result in results.items():
        assert result["is_error"], (what, _text(result))
        assert "uid" in _text(result), (what, _text(result))
    assert not (ws / "theirs" / "new.txt").exists() and not (ws / "theirs" / "sub").exists()
    assert (ws / "theirs" / "notes.txt").read_text() == "THEIR NOTES\n"
    assert (ws / "sticky" / "their.txt").read_text() == "THEIR FILE\n"
    assert not mine["is_error"] and not top["is_error"], (_text(mine), _text(top))
    assert os.stat(ws / "sticky" / "mine.txt").st_uid == 1234 and (ws / "top.txt").read_text() == "TOP\n"


@pytest.mark.docker
async def test_docker_bind_tools_do_not_write_or_read_what_the_leased_uid_cannot(tmp_path: Path) -> None:
    """Docker bind mode on a root host: commands run as a leased uid over an idmapped workspace
    (another owner's files appear as the overflow uid's), the same boundary as bwrap's."""
    if os.geteuid() != 0:
        pytest.skip("only a root host leases a uid in bind mode")
    from tests._docker_support import DEBIAN, config, require_docker

    require_docker()
    ws = _workspace(tmp_path)
    (ws / "theirs" / "private.txt").write_text("THEIR SECRET\n")
    (ws / "theirs" / "private.txt").chmod(0o600)
    os.chown(ws / "theirs" / "private.txt", 4321, 4321)
    async with shellrt.Runtime(
        workspace=ws,
        sandbox=config(DEBIAN, workspace_mode="bind"),
        mode="bypassPermissions",
        session_dir=tmp_path / "session",
        settings_files=(),
    ) as rt:
        cmd = await _one(rt, "Bash", command="echo x > theirs/new.txt; cat theirs/private.txt; echo done")
        assert "done" in _text(cmd) and "SECRET" not in _text(cmd), _text(cmd)
        assert not (ws / "theirs" / "new.txt").exists(), _text(cmd)
        notes = await _one(rt, "Read", file_path="theirs/notes.txt")
        assert not notes["is_error"], _text(notes)
        results = {
            "write new": await _one(rt, "Write", file_path="theirs/new.txt", content="FORGED\n"),
            "edit": await _one(
                rt, "Edit", file_path="theirs/notes.txt", old_string="THEIR", new_string="FORGED"
            ),
            "read private": await _one(rt, "Read", file_path="theirs/private.txt"),
        }
        top = await _one(rt, "Write", file_path="top.txt", content="TOP\n")
    for what, result in results.items():
        assert result["is_error"], (what, _text(result))
        assert "SECRET" not in _text(result) and "uid" in _text(result), (what, _text(result))
    assert not (ws / "theirs" / "new.txt").exists()
    assert (ws / "theirs" / "notes.txt").read_text() == "THEIR NOTES\n"
    assert not top["is_error"] and os.stat(ws / "top.txt").st_uid == 1234, _text(top)


async def test_a_replaced_file_belongs_to_whom_commands_act_as(tmp_path: Path) -> None:
    """bwrap as root: Edit and Write replaced a root-owned (or another user's) file in the
    workspace with the model's content and kept that owner; a command replacing it (in a directory
    it may write) leaves a file of the workspace's owner. Also the file a command renames over
    the target while the tool works: its owner was handed the model's content."""
    if os.geteuid() != 0:
        pytest.skip("only a root caller's commands run under another uid")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 1234, 1234)
    for name, uid in (("root.sh", 0), ("other.txt", 4321)):
        (ws / name).write_text("ORIGINAL\n")
        (ws / name).chmod(0o755)
        os.chown(ws / name, uid, uid)
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="bwrap",
        mode="bypassPermissions",
        session_dir=tmp_path / "session",
        settings_files=(),
    ) as rt:
        for name in ("root.sh", "other.txt"):
            read = await _one(rt, "Read", file_path=name)
            edit = await _one(rt, "Edit", file_path=name, old_string="ORIGINAL", new_string="FROM THE MODEL")
            assert not read["is_error"] and not edit["is_error"], (_text(read), _text(edit))
        cmd = await _one(rt, "Bash", command="cp root.sh c.sh && mv -f c.sh root.sh && stat -c %u root.sh")
    for name in ("root.sh", "other.txt"):
        st = os.stat(ws / name)
        assert "FROM THE MODEL" in (ws / name).read_text()
        assert (st.st_uid, st.st_gid) == (1234, 1234), (name, st.st_uid, st.st_gid)
        assert stat.S_IMODE(st.st_mode) == 0o755, oct(st.st_mode)
    assert os.stat(ws / "root.sh").st_uid == 1234, _text(cmd)  # what a command's replace leaves
