"""Red team, round 35 (bwrap): calls that draw on host-wide kernel pools no namespace divides.

The BPF JIT budget (``net.core.bpf_jit_limit``): every classic BPF program a process loads is
JIT-compiled and charged there, and once a process without CAP_BPF in the host's user namespace
has spent it, no such process can load one -- not a socket filter, not a seccomp filter: every
later sandbox (bwrap's ``--seccomp``, a session init's filter) fails to start. A command reached it
through ``setsockopt(SO_ATTACH_FILTER / SO_ATTACH_REUSEPORT_CBPF)`` on its own sockets and nested
``seccomp()``/``prctl(PR_SET_SECCOMP)`` filters. Now refused: EPERM for the socket filters (what
a locked filter says), EINVAL for a nested seccomp filter (a kernel without
``CONFIG_SECCOMP_FILTER``: man-db, sshd and Firefox fall back).

The hugetlb pool (``vm.nr_hugepages`` and its overcommit): ``mmap(MAP_HUGETLB)`` and
``memfd_create(MFD_HUGETLB)`` need no privilege, and the pages are no memory cgroup's. Now ENOMEM,
what an empty pool says (``shmget(SHM_HUGETLB)`` already needs CAP_IPC_LOCK: EPERM).
Root and uid 65534, session and per command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import ctypes, errno, os, platform, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
arm = platform.machine() == "aarch64"
def said(done):
    return "ok" if done != -1 else errno.errorcode[ctypes.get_errno()]
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
code = ctypes.create_string_buffer(struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000))  # ret ALLOW/accept
prog = Fprog(1, ctypes.cast(code, ctypes.c_void_p))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
for name, option in (("ATTACH_FILTER", 26), ("REUSEPORT_CBPF", 51)):
    print(name, said(libc.setsockopt(udp.fileno(), 1, option, ctypes.byref(prog), ctypes.sizeof(prog))))
for name, call in (
    ("SECCOMP", lambda: libc.syscall(277 if arm else 317, 1, 0, ctypes.byref(prog))),
    ("PRCTL", lambda: libc.prctl(22, 2, ctypes.byref(prog), 0, 0)),
):
    child = os.fork()
    if child == 0:  # a child: the parent's own calls stay as they were
        done = call()
        os.write(1, f"{name} {said(done)}\n".encode())
        os._exit(0)
    os.waitpid(child, 0)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
got = libc.mmap(None, 2 << 20, 3, 0x22 | 0x40000, -1, 0)  # MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB
print("MMAP", said(-1 if got in (None, ctypes.c_void_p(-1).value) else 0))
print("MEMFD", said(libc.syscall(279 if arm else 319, b"h", 4)))  # MFD_HUGETLB
print("SHMGET", said(libc.shmget(0, 2 << 20, 0o1000 | 0o600 | 0o4000)))  # IPC_CREAT|SHM_HUGETLB
print("PLAIN", said(libc.syscall(279 if arm else 319, b"p", 1)), said(libc.prctl(21, 0, 0, 0, 0)))  # PR_GET_SECCOMP
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_cannot_spend_the_jit_budget_or_the_hugetlb_pool(tmp_path: Path, persistent: bool) -> None:
    """Failed before: ATTACH_FILTER, REUSEPORT_CBPF, SECCOMP and PRCTL ok, MEMFD ok; root 2 of 2
    and uid 65534 2 of 2."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    want = {"ATTACH_FILTER": "EPERM", "REUSEPORT_CBPF": "EPERM", "SECCOMP": "EINVAL", "PRCTL": "EINVAL"}
    want |= {"MMAP": "ENOMEM", "MEMFD": "ENOMEM", "SHMGET": "EPERM"}
    assert {name: said.get(name) for name in want} == want, out
    # a plain memfd and PR_GET_SECCOMP (mode 2: the sandbox's own filter) still work
    assert said.get("PLAIN") == "ok ok", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_command_cannot_spend_the_jit_budget_or_the_hugetlb_pool")
