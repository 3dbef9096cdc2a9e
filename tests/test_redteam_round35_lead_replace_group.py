"""Round 35 (lead; found by round 35 filesnet): a replaced file took a setgid directory's group and
a default ACL's entries.

Write and Edit replace a file with a temp file renamed over it. The temp file was chowned to the
replaced file's owner only when that owner differed from the process's own ids; but a file created
in a setgid directory gets the directory's group, so root's ``0640 root:root`` file in a ``2755
root:65534`` directory became ``0640 root:65534``: readable by that group (failed before). In a
directory with a default ACL the temp file also inherited an access ACL (a named user's entry) that
the replaced file never had, and the next Edit refused the file for it (failed before).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from sandbox.confine import Mount, View, write_file

_UNDEFINED = 0xFFFFFFFF


def _view(ws: Path) -> View:
    return View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True)], ())


def _default_acl(named_uid: int) -> bytes:
    """``u::rwx u:<named_uid>:rw- g::r-x m::rwx o::r-x`` in the kernel's xattr form."""
    entries = [(0x01, 7, _UNDEFINED), (0x02, 6, named_uid), (0x04, 5, _UNDEFINED), (0x10, 7, _UNDEFINED), (0x20, 5, _UNDEFINED)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)


def _access_acl(path: Path) -> bytes | None:
    try:
        return os.getxattr(path, "system.posix_acl_access")
    except OSError:
        return None


def test_a_replaced_file_keeps_its_own_group_in_a_setgid_directory(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("needs root: a directory of another group")
    d = tmp_path / "shared"
    d.mkdir()
    os.chown(d, 0, 65534)
    os.chmod(d, 0o2755)
    secret = d / "secret.env"
    secret.write_bytes(b"token=1\n")
    os.chown(secret, 0, 0)
    os.chmod(secret, 0o640)
    assert not write_file(_view(tmp_path), str(secret), b"token=2\n").created
    st = os.stat(secret)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, 0, 0o640), (st.st_uid, st.st_gid, oct(st.st_mode))
    # a new file takes the directory's group, as any file created there does
    assert write_file(_view(tmp_path), str(d / "new.txt"), b"x").created
    assert os.stat(d / "new.txt").st_gid == 65534


def test_a_replaced_file_gets_no_acl_from_its_directorys_default(tmp_path: Path) -> None:
    d = tmp_path / "team"
    d.mkdir()
    target = d / "notes.txt"
    target.write_bytes(b"one\n")
    os.chmod(target, 0o600)
    try:
        os.setxattr(d, "system.posix_acl_default", _default_acl(54321))
    except OSError as exc:
        pytest.fail(f"this filesystem takes no POSIX ACL ({exc}); the test needs one (ext4 does)")
    assert _access_acl(target) is None
    assert not write_file(_view(tmp_path), str(target), b"two\n").created
    assert _access_acl(target) is None, "the replaced file took an access ACL from its directory's default"
    assert os.stat(target).st_mode & 0o777 == 0o600
    assert target.read_bytes() == b"two\n"
