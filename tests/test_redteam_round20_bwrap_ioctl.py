"""Red team, round 20 (bwrap): ioctl is an allow-list, not a list of what earlier rounds found.

Round 19 left it: "a deny list of ioctl numbers is only as good as its knowledge of each
filesystem" (btrfs subvolumes and snapshots, f2fs pin and compression flags, XFS's own, ext4's).
On this ext4, ``EXT4_IOC_PRECACHE_EXTENTS``, ``EXT4_IOC_ALLOC_DA_BLKS`` (forces the delayed
allocation of a host file's blocks) and ``EXT4_IOC_GETSTATE`` reached the filesystem from a
command and succeeded on a workspace file. Now every request outside the allowed types (terminals,
sockets, namespaces, pidfds) and single requests (reading flags, extents and the filesystem's
label; reflink clones) fails with ENOTTY, the answer of a file that does not know it, so programs
that probe fall back; what the tools measured use still works (git, python's pty and termios,
script/stty/tput on a pty, cp --reflink=auto, tar, ls --color).
"""

from __future__ import annotations

import base64
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised

_PROBE = r"""
import ctypes, errno, fcntl, os, pty, socket, struct, termios
libc = ctypes.CDLL(None, use_errno=True)
open("f", "w").write("data\n" * 1000)
buf = ctypes.create_string_buffer(4096)
def io(name, fd, req):
    r = libc.ioctl(fd, ctypes.c_ulong(req), buf)
    print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"), flush=True)
f = os.open("f", os.O_RDWR)
g = os.open("g", os.O_RDWR | os.O_CREAT, 0o644)
io("precache_extents", f, 0x6612)
io("alloc_da_blks", f, 0x660C)
io("getstate", f, 0x40046629)
io("btrfs_subvol_create", os.open(".", os.O_RDONLY), 0x5000940E)
io("getflags", f, 0x80086601)
io("getversion", f, 0x80087601)
r = libc.ioctl(g, ctypes.c_ulong(0x40049409), ctypes.c_long(f))  # FICLONE: the filesystem's answer
print("ficlone", "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"), flush=True)
rd, wr = os.pipe(); os.write(wr, b"abc")
print("fionread", struct.unpack("i", fcntl.ioctl(rd, termios.FIONREAD, b"\0" * 4))[0], flush=True)
master, slave = pty.openpty()
print("tcgets", len(termios.tcgetattr(slave)), flush=True)
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
print("winsz", struct.unpack("HHHH", fcntl.ioctl(slave, termios.TIOCGWINSZ, b"\0" * 8))[:2], flush=True)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print("ifconf", "ok" if fcntl.ioctl(s.fileno(), 0x8912, struct.pack("iL", 0, 0)) else "?", flush=True)
"""
_TOOLS = (
    "git init -q r && cd r && echo a > f && git add f && git -c user.email=a@b -c user.name=n commit -qm m"
    " && git status --short && git log --oneline | wc -l && cd .. && cp --reflink=auto r/f copy"
    " && tar czf t.tgz r && tar tzf t.tgz | wc -l && ls --color=always r >/dev/null"
    " && script -qec 'stty size; tput cols; tty >/dev/null && echo ttyok' /dev/null && echo TOOLS-OK"
)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_ioctls_outside_the_allow_list_fail_and_tools_still_work(tmp_path: Path, persistent: bool) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    probe = f"echo {base64.b64encode(_PROBE.encode()).decode()} | base64 -d | python3 -"

    async def main() -> tuple[str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            probed = (await sup.run(probe, timeout_s=60)).preview
            tools = (await sup.run(_TOOLS, timeout_s=60)).preview
            return probed, tools

    out, tools = anyio.run(main)
    seen = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    # Before: ok, ok, ok (ext4 answered); the btrfs request was ENOTTY from ext4 either way.
    refused = ("precache_extents", "alloc_da_blks", "getstate", "btrfs_subvol_create")
    assert {name: seen.get(name) for name in refused} == dict.fromkeys(refused, "ENOTTY"), out
    assert seen.get("getflags") == "ok" and seen.get("getversion") == "ok", out
    assert seen.get("ficlone") not in (None, "ENOTTY", "EPERM"), out  # the filesystem's own answer
    assert seen.get("fionread") == "3" and seen.get("winsz") == "(24, 80)" and seen.get("ifconf") == "ok", out
    assert "TOOLS-OK" in tools and "ttyok" in tools, tools
