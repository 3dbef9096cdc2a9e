"""Red team, round 19 (bwrap): one table of the kernel calls a command must not make, pinned.

Rounds 14 and 17 tried these by hand ("held") and pinned a few. This table calls each from
inside the sandbox (python's ctypes ``syscall()``, x86_64 numbers) with arguments the kernel
would accept or answer with another error where it can (``kcmp`` of its own fd, ``pidfd_getfd``
and ``process_vm_readv`` on itself, ``name_to_handle_at`` of ``/``, a key in its own session
keyring), so EPERM there is the filter's answer, not the kernel's. ``setns`` is tried on every
fd a command can hold of a namespace: each ``/proc/self/ns`` entry, a pidfd, and fds 0-2.

Also pinned: the first number the filter does not know (``listns``, 470) fails with ENOSYS, and
``fanotify_init`` with ``FAN_REPORT_FID`` works (inode marks only; round 8's note) while the
mount- and filesystem-wide kinds fail (no CAP_SYS_ADMIN).
"""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from tests._bwrap_session import probe_lines, require_bwrap

_PROBE = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(4096)
B = ctypes.addressof(buf)
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"), flush=True)
path = ctypes.create_string_buffer(b"/")
tmpfs = ctypes.create_string_buffer(b"tmpfs")
user = ctypes.create_string_buffer(b"user")
desc = ctypes.create_string_buffer(b"r19")
# iovecs for process_vm_readv/writev on itself: 16 bytes of buf into buf+64
iov = (ctypes.c_uint64 * 4)(B, 16, B + 64, 16)
me = os.getpid()
pidfd = libc.syscall(ctypes.c_long(434), ctypes.c_long(me), ctypes.c_long(0))
call("open_tree", 428, -100, ctypes.addressof(path), 1)            # OPEN_TREE_CLONE
call("open_tree_attr", 467, -100, ctypes.addressof(path), 1, 0, 0)
call("move_mount", 429, -100, ctypes.addressof(path), -100, ctypes.addressof(path), 0)
call("fsopen", 430, ctypes.addressof(tmpfs), 0)
call("fsconfig", 431, 0, 6, 0, 0, 0)                                # FSCONFIG_CMD_CREATE on fd 0
call("fsmount", 432, 0, 0, 0)
call("fspick", 433, -100, ctypes.addressof(path), 0)
call("mount_setattr", 442, -100, ctypes.addressof(path), 0, B, 32)
call("mount", 165, ctypes.addressof(tmpfs), ctypes.addressof(path), ctypes.addressof(tmpfs), 0, 0)
call("name_to_handle_at", 303, -100, ctypes.addressof(path), B, B + 2048, 0)
call("open_by_handle_at", 304, -100, B, 0)
call("pidfd_getfd", 438, pidfd, 1, 0)
call("process_vm_readv", 310, me, ctypes.addressof(iov), 1, ctypes.addressof(iov) + 16, 1, 0)
call("process_vm_writev", 311, me, ctypes.addressof(iov), 1, ctypes.addressof(iov) + 16, 1, 0)
call("process_madvise", 440, pidfd, ctypes.addressof(iov), 1, 8, 0)  # MADV_FREE on itself
call("kcmp", 312, me, me, 0, 1, 1)                                  # KCMP_FILE, fd 1 with itself
call("add_key", 248, ctypes.addressof(user), ctypes.addressof(desc), B, 4, -3)  # session keyring
call("keyctl", 250, 0, -3, 0)                                       # KEYCTL_GET_KEYRING_ID
call("request_key", 249, ctypes.addressof(user), ctypes.addressof(desc), 0, -3)
call("userfaultfd", 323, 1)                                         # UFFD_USER_MODE_ONLY
call("perf_event_open", 298, B, 0, -1, -1, 0)
call("bpf", 321, 0, B, 48)
call("io_uring_setup", 425, 8, B)
call("quotactl", 179, 0x800007, ctypes.addressof(path), 0, B)         # Q_GETINFO
call("quotactl_fd", 443, 0, 0x800007, 0, B)
call("listns", 470, B, 0, 0, 0)
call("fanotify_fid", 300, 0x200, 0)                                 # FAN_REPORT_FID: inode marks
call("fanotify_plain", 300, 0, 0)
for ns in sorted(os.listdir("/proc/self/ns")):
    fd = os.open("/proc/self/ns/" + ns, os.O_RDONLY)
    call("setns_" + ns, 308, fd, 0)
call("setns_pidfd", 308, pidfd, 0x20000)                            # CLONE_NEWNS via the pidfd
for fd in (0, 1, 2):
    call("setns_fd%d" % fd, 308, fd, 0)
"""

#: Refused by the filter with EPERM (the namespace entries are checked apart).
REFUSED = (
    "open_tree", "open_tree_attr", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "mount", "name_to_handle_at", "open_by_handle_at", "pidfd_getfd",
    "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "add_key", "keyctl",
    "request_key", "userfaultfd", "perf_event_open", "bpf", "io_uring_setup", "quotactl",
    "quotactl_fd", "setns_pidfd", "setns_fd0", "setns_fd1", "setns_fd2",
)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the table holds x86_64 numbers")
@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_every_call_of_the_table_is_refused(tmp_path: Path, persistent: bool) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    seen, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    wrong = {name: seen.get(name) for name in REFUSED if seen.get(name) != "EPERM"}
    assert not wrong, f"not refused with EPERM: {wrong}\n{out}"
    namespaces = [name for name in seen if name.startswith("setns_") and name[6:] not in ("pidfd", "fd0", "fd1", "fd2")]
    assert {"setns_mnt", "setns_net", "setns_pid", "setns_user"} <= set(namespaces), out
    assert all(seen[name] == "EPERM" for name in namespaces), out
    assert seen.get("listns") == "ENOSYS", out  # FIRST_UNKNOWN and up
    assert seen.get("fanotify_fid") == "ok" and seen.get("fanotify_plain") == "EPERM", out
