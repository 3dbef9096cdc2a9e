"""Red team round 18, docker and the other workspace copies: extended attributes that grant rights.

The anchored copy (`sandbox/_anchoredcopy.py`: docker's copy-mode workspace, the batch task copy,
the Inspect sample copy) runs as the host's user, root on CI hosts, and copied every extended
attribute it could set, as ``shutil.copystat`` does. A source tree can hold ones that grant rights:
a dataset or tarball unpacked by root with ``tar --xattrs`` keeps ``security.capability`` (file
capabilities) and ``trusted.*``, and any local user may put a POSIX ACL on a file of theirs.
Without an ``owner`` (batch, Inspect) the copy is root's: measured before, a copied program still
carried ``cap_setuid`` (anyone who runs the host's copy gains it), root's copy carried an ACL
granting uid 65534 ``rwx``, and ``trusted.*`` (overlayfs' redirects and whiteouts) came along.
Now only ``user.*`` (not ``user.overlay.*``) is copied.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from sandbox._anchoredcopy import copy_tree, copy_workspace

#: A v2 ``security.capability`` value: cap_setuid (7) and cap_net_raw (13), permitted and effective.
_CAPS = struct.pack("<IIIII", 0x02000001, (1 << 7) | (1 << 13), 0, 0, 0)


def _acl(uid: int) -> bytes:
    """``system.posix_acl_access``: owner rwx, uid ``uid`` rwx, group r-x, mask rwx, other ---."""
    undefined = 0xFFFFFFFF
    entries = [
        (0x01, 7, undefined),
        (0x02, 7, uid),
        (0x04, 5, undefined),
        (0x10, 7, undefined),
        (0x20, 0, undefined),
    ]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, i) for tag, perm, i in entries)


def _hostile(root: Path) -> tuple[Path, list[str]]:
    """A source tree whose program and directory carry what can grant rights; the names set."""
    src = root / "src"
    (src / "dir").mkdir(parents=True)
    prog = src / "dir" / "prog"
    shutil.copy(shutil.which("true") or "/bin/true", prog)
    attrs = [
        ("user.origin", b"kept"),
        ("system.posix_acl_access", _acl(65534)),
        ("user.overlay.opaque", b"y"),
    ]
    if os.geteuid() == 0:  # what only root may set: what a root-unpacked dataset holds
        attrs += [("security.capability", _CAPS), ("trusted.overlay.opaque", b"y")]
    set_names = []
    for path in (prog, src / "dir"):
        for name, value in attrs:
            try:
                os.setxattr(path, name, value)
            except OSError as exc:  # a file system without ACLs or user xattrs: say so, do not pass
                pytest.fail(f"cannot set {name} on {path} here ({exc}): run on ext4/xfs/btrfs")
            set_names.append(name)
    return src, sorted(set(set_names))


@pytest.mark.parametrize("copy", ["batch_inspect", "docker_owner"])
def test_the_copy_keeps_no_xattr_that_grants_rights(tmp_path: Path, copy: str) -> None:
    """Before: security.capability, the ACL and trusted.* reached the host's copy (failed 2 of 2)."""
    src, names = _hostile(tmp_path)
    assert "system.posix_acl_access" in names
    dst = tmp_path / "copy"
    if copy == "batch_inspect":
        copy_workspace(src, dst, ())
    else:
        copy_tree(str(src), str(dst), owner=(65534, 65534) if os.geteuid() == 0 else None)
    for path in (dst / "dir" / "prog", dst / "dir"):
        assert set(os.listxattr(path)) == {"user.origin"}, (path, os.listxattr(path))
        assert os.getxattr(path, "user.origin") == b"kept"
    assert (dst / "dir" / "prog").read_bytes() == (src / "dir" / "prog").read_bytes()
    # The mode is still the source's (its group class is the ACL's mask): nothing else granted.
    assert os.stat(dst / "dir" / "prog").st_mode == os.stat(src / "dir" / "prog").st_mode
