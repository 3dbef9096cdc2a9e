"""Red team, round 19 (bwrap): ioctls that leave state on the host's inodes and filesystem.

Round 14 refused setting inode flags (``chattr``): they outlive the session on the host's files,
for a root caller on files root owns on disk. Other ioctls of the same kind went through:

* ``FS_IOC_SETVERSION`` set the inode generation of a workspace file (ext4, owner only: the
  command is the owner through the idmapped mount). It stayed on the host's file, which
  ``lsattr -v`` showed, and NFS and ``open_by_handle_at`` handles carry it;
* fs-verity's ``FS_IOC_ENABLE_VERITY`` (a file's data read-only for ever) and fscrypt's
  ``FS_IOC_SET_ENCRYPTION_POLICY`` / ``FS_IOC_ADD_ENCRYPTION_KEY`` / ``FS_IOC_REMOVE_ENCRYPTION_KEY``
  reached the filesystem, which answered ENOTSUP only because this ext4 has neither feature. On
  one that has ``encrypt``, a command could encrypt an empty workspace directory with a key it
  chose (the key stays in the filesystem's keyring after the session), and remove the key later:
  the operator's files written there meanwhile unreadable.

All six now fail with EPERM from the filter (docker's helper loads the same one); reading
(``FS_IOC_GETVERSION``, the encryption policy) still reaches the filesystem.
"""

from __future__ import annotations

import fcntl
import struct
from pathlib import Path

import pytest

from tests._bwrap_session import probe_lines, require_bwrap

FS_IOC_GETVERSION = 0x80087601

_PROBE = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir("d")
buf = ctypes.create_string_buffer(256)
buf[0] = 2  # a policy's version byte; the generation's low byte
def io(name, path, req):
    fd = os.open(path, os.O_RDONLY)
    r = libc.ioctl(fd, ctypes.c_ulong(req), buf)
    print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"), flush=True)
    os.close(fd)
io("setversion", "f", 0x40087602)
io("enable_verity", "f", 0x40806685)
io("set_policy", "d", 0x800C6613)
io("add_key", "d", 0xC0506617)
io("remove_key", "d", 0xC0406618)
io("remove_key_all", "d", 0xC0406619)
io("getversion", "f", 0x80087601)
io("get_policy", "d", 0xC0096616)
"""
SET = ("setversion", "enable_verity", "set_policy", "add_key", "remove_key", "remove_key_all")


def _generation(path: Path) -> int:
    with open(path) as f:
        value: int = struct.unpack("l", fcntl.ioctl(f.fileno(), FS_IOC_GETVERSION, b"\0" * 8))[0]
        return value


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_inode_and_filesystem_state_ioctls_are_refused(tmp_path: Path, persistent: bool) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "f"
    target.write_text("the operator's file\n")
    try:
        before = _generation(target)
    except OSError as exc:  # a filesystem without generations: the probe still runs
        before = -exc.errno
    seen, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert {name: seen.get(name) for name in SET} == dict.fromkeys(SET, "EPERM"), out
    # reading still reaches the filesystem (its own answer, never the filter's EPERM)
    assert seen.get("getversion") not in (None, "EPERM") and seen.get("get_policy") not in (None, "EPERM"), out
    if before >= 0:
        assert _generation(target) == before, "the command changed the host file's generation"
