"""Shared by the per-session uid suites (bwrap and docker): lease-file state and a checked run."""

from __future__ import annotations

import fcntl
import os

from sandbox._uid_lease import LEASE_DIR
from shellrt.supervisor import Supervisor


def lease_file_free(uid: int) -> bool:
    """Whether nobody holds ``uid``'s lease (its file lockable, emptied by a clean release)."""
    fd = os.open(LEASE_DIR / str(uid), os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return os.fstat(fd).st_size == 0
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


async def output_of(sup: Supervisor, command: str) -> str:
    """The stripped preview of ``command``, which must succeed."""
    result = await sup.run(command, timeout_s=30)
    assert result.exit_code == 0, result.preview
    return result.preview.strip()
