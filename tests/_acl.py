"""A POSIX access ACL set without ``setfacl`` (not installed here): the xattr's binary form.

Shared by the ACL rounds (42, 45, 46, 47): each wrote the same packing and the same refusal on a
file system without ACLs.
"""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

from tests.conftest import require

__all__ = ["set_access_acl"]


def set_access_acl(path: Path, entries: list[tuple[int, int, int]]) -> None:
    """Set ``path``'s access ACL to ``entries`` (tag, perm, id), version 2; a file system without
    POSIX ACLs is a `require` failure (a fail in CI), not a silent pass."""
    value = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)
    try:
        os.setxattr(path, "system.posix_acl_access", value)
    except OSError as exc:
        require(exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP), f"no POSIX ACLs on this file system: {exc}")
        raise
