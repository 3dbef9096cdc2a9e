"""Red team, round 47 (sandbox7): a command could split the host kernel's direct map for good.

``memfd_secret(2)`` (on by default since Linux 6.5; works here) gives memory the kernel removes
from its own direct map of physical memory: each such page splits the 1 GiB or 2 MiB kernel page
that covered it, and the kernel never merges them again. On the host, 8 files of 4 MiB each
(``RLIMIT_MEMLOCK`` bounds one process, not a series of them) turned DirectMap1G 24 GiB -> 12 GiB
and DirectMap4k 20 MiB -> 824 MiB: every later kernel access to that memory, for the host's whole
uptime, walks 4 KiB pages (more TLB misses), and while any such file is in use the host cannot
hibernate. Round 14 judged it "memory of the command's own". Now the filter answers it with
ENOSYS (`sandbox._seccomp.ENOSYS_CALLS`): what a kernel without secret memory says, which its
users (OpenSSL's secure heap, libsodium) treat as "use ordinary memory".

The probe only creates the file (no page, nothing split) and reports the call's answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall({"x86_64": 447, "aarch64": 447}[os.uname().machine], 0)
print("SECRET", "fd" if fd >= 0 else os.strerror(ctypes.get_errno()))
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_gets_no_secret_memory(tmp_path: Path, persistent: bool) -> None:
    """Failed before (root and uid 65534, session and per command, 4 of 4: ``SECRET fd``)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert said.get("SECRET") == "Function not implemented", out
