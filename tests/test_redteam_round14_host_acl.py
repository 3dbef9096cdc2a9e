"""Red team round 14 (host side): Write and Edit on a file with a POSIX ACL widened its access.

Write and Edit replace a file atomically: a new inode with the old file's mode and owner is
renamed over it. A file's POSIX access ACL lives on the inode and did not follow. With an ACL,
the mode's group bits are the ACL's *mask* (the most any named user or group gets), not the
owning group's own permissions: a file ``u::rw- u:<uid>:rw- g::--- m::rw- o::---`` shows mode
0660 while its owning group may not read it. After one Edit it was a plain 0660 file: its owning
group could read and write the model's content (failed before: mode 0o100660, no ACL left), and
the named user lost access. Now the tools refuse a file with an access ACL, before asking and
again at the write, and say how to change it in place; the file and its ACL stay as they were.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

import shellrt
from tests._governance import trust_env
from tests._rt13_host import tool_result
from tests.conftest import require

pytestmark = pytest.mark.anyio

_ACL = "system.posix_acl_access"
_UNDEFINED = 0xFFFFFFFF


def _acl(named_uid: int) -> bytes:
    """``u::rw- u:<named_uid>:rw- g::--- m::rw- o::---`` in the kernel's xattr form."""
    entries = [(0x01, 6, _UNDEFINED), (0x02, 6, named_uid), (0x04, 0, _UNDEFINED), (0x10, 6, _UNDEFINED), (0x20, 0, _UNDEFINED)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)


async def test_write_and_edit_keep_an_acl_files_access(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    guarded = ws / "team.conf"
    guarded.write_text("token = 1\n")
    os.setxattr(guarded, _ACL, _acl(54321))
    before = os.stat(guarded)
    assert before.st_mode & 0o070 == 0o060  # the mask shows as the group bits
    plain = ws / "plain.conf"
    plain.write_text("token = 1\n")
    async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        shown, failed = await tool_result(rt, "Read", {"file_path": str(guarded)})
        assert not failed and "token = 1" in shown, shown
        edited, failed = await tool_result(
            rt, "Edit", {"file_path": str(guarded), "old_string": "token = 1", "new_string": "token = 2"}
        )
        assert failed and "ACL" in edited and "in place" in edited, edited
        written, failed = await tool_result(rt, "Write", {"file_path": str(guarded), "content": "token = 3\n"})
        assert failed and "ACL" in written, written
        # A file without one is replaced as before.
        await tool_result(rt, "Read", {"file_path": str(plain)})
        done, failed = await tool_result(
            rt, "Edit", {"file_path": str(plain), "old_string": "token = 1", "new_string": "token = 2"}
        )
        assert not failed, done
    after = os.stat(guarded)
    assert guarded.read_text() == "token = 1\n"
    assert os.getxattr(guarded, _ACL) == _acl(54321)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert plain.read_text() == "token = 2\n"
