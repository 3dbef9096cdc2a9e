"""Red team, round 33 (bwrap): one command took the host's whole Linux AIO budget.

``io_setup(nr_events)`` reserves events against ``fs.aio-max-nr`` (65536), one counter for the
whole host: no namespace, cgroup or uid divides it. One ``io_setup(65536)`` in a sandbox reserved
all of it, and every host process's ``io_setup`` (databases' native AIO, QEMU, fio, containers)
failed with EAGAIN while it ran. The filter now answers ``io_setup`` with ENOSYS (`sandbox._seccomp`,
as a kernel without AIO: libaio users fall back to threads). Root and uid 65534, session and per
command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_GRAB = r"""
import ctypes, errno, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 206, "aarch64": 0}[platform.machine()]
ctx = ctypes.c_ulong(0)
done = libc.syscall(nr, 65536, ctypes.byref(ctx))
print("SETUP", "ok" if done == 0 else errno.errorcode[ctypes.get_errno()])
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_cannot_reserve_the_hosts_aio_events(tmp_path: Path, persistent: bool) -> None:
    """Failed before: SETUP ok (the host's aio-nr at 65536 of 65536 meanwhile, a host io_setup
    EAGAIN), root 2 of 2 and uid 65534 2 of 2."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _GRAB, persistent=persistent)
    assert said.get("SETUP") == "ENOSYS", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_command_cannot_reserve_the_hosts_aio_events")

