"""Red team, round 17 (bwrap): kernel calls a command could still make, and what a command leaves
for the next one on the zygote path.

``modify_ldt`` (x86: a process's own segment table, used by 16-bit code and Wine) went
through the filter; Docker's default profile refuses it, its kernel code has a record of bugs
(CVE-2015-5157, CVE-2017-17053) and no build needs it: now EPERM. The rest of the probe is what
held (nested namespaces, kcmp), checked so that it keeps holding.

The second test runs two commands in one session: the first leaves SysV IPC objects, a POSIX
message queue, an abstract socket held by a detached process, background processes and an
extra fd; the second must find none of them (each command has fresh pid, mount and IPC
namespaces; /tmp and /dev/shm are the session's by design and are not checked here).
"""

from __future__ import annotations

import base64
import platform
from pathlib import Path

import anyio
import pytest

from tests._bwrap_session import zygote_session

_PROBE = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
buf = ctypes.create_string_buffer(64)
call("modify_ldt", 154, 0, ctypes.addressof(buf), 16)
call("unshare_user", 272, 0x10000000)
call("unshare_mnt", 272, 0x20000)
call("kcmp", 312, 1, 1, 0, 0, 0)
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="modify_ldt is x86's")
def test_modify_ldt_and_the_namespace_calls_are_refused(tmp_path: Path) -> None:
    code = base64.b64encode(_PROBE.encode()).decode()

    async def main() -> str:
        async with zygote_session(tmp_path) as (_backend, sup):
            result = await sup.run(f"echo {code} | base64 -d | python3 -", timeout_s=60)
            return result.preview

    out = anyio.run(main)
    seen = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert seen.get("modify_ldt") == "EPERM", out
    for name in ("unshare_user", "unshare_mnt", "kcmp"):
        assert seen.get(name) == "EPERM", (name, out)


_LEAVE = r"""
import ctypes, os, socket, subprocess, sys, time
subprocess.run(["ipcmk", "-M", "4096"], check=True); subprocess.run(["ipcmk", "-Q"], check=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
print("mq", rt.mq_open(b"/left17", os.O_CREAT | os.O_RDWR, 0o600, None))
s = socket.socket(socket.AF_UNIX); s.bind(b"\0left17"); s.listen()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
os.set_inheritable(s.fileno(), True)
subprocess.Popen(["sleep", "60"], start_new_session=True, close_fds=False)
print("left")
"""

_FIND = r"""
import ctypes, os, socket, subprocess
print("fds", sorted(int(f) for f in os.listdir("/proc/self/fd")))
ipcs = subprocess.run(["ipcs"], capture_output=True, text=True).stdout
print("sysv", sum(1 for line in ipcs.splitlines() if line.startswith("0x")))
rt = ctypes.CDLL("librt.so.1", use_errno=True)
print("mq", rt.mq_open(b"/left17", os.O_RDWR, 0, None))
c = socket.socket(socket.AF_UNIX)
print("abstract", c.connect_ex(b"\0left17"))
pids = [p for p in os.listdir("/proc") if p.isdigit()]
print("procs", " ".join(open(f"/proc/{p}/comm").read().strip() for p in pids))
"""


def test_the_next_command_finds_nothing_the_last_one_left(tmp_path: Path) -> None:
    leave = base64.b64encode(_LEAVE.encode()).decode()
    find = base64.b64encode(_FIND.encode()).decode()

    async def main() -> tuple[str, str]:
        async with zygote_session(tmp_path) as (_backend, sup):
            first = await sup.run(f"echo {leave} | base64 -d | python3 -; exec 7>/dev/null", timeout_s=60)
            second = await sup.run(f"echo {find} | base64 -d | python3 -", timeout_s=60)
            return first.preview, second.preview

    first, second = anyio.run(main)
    assert "left" in first and "mq -1" not in first, first  # the first really made them
    seen = dict(line.split(" ", 1) for line in second.splitlines() if " " in line)
    assert seen.get("sysv") == "0", second
    assert seen.get("mq") == "-1", second
    assert seen.get("abstract") not in (None, "0"), second
    assert "sleep" not in seen.get("procs", "sleep"), second
    assert seen.get("fds") == "[0, 1, 2, 3]", second  # 3: the listing's own

