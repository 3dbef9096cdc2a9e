"""Red team, round 14: kernel code a bwrap command could load or reach on demand (docs/security.md).

A command opened a terminal of its own (the sandbox's devpts) and switched its line discipline
(``TIOCSETD``), and made inet sockets of any protocol number and netlink sockets of any
protocol: each of these makes the kernel load the matching module on demand where the kernel
has it as one (``dev.tty.ldisc_autoload``, ``net-pf-*-proto-*`` aliases), code a build never
needs and that has had local privilege escalations (n_hdlc, n_gsm; SCTP, DCCP, L2TP, TIPC over
generic netlink). This kernel has no modules: what it builds in (``N_NULL``, UDP-Lite, the
netfilter, xfrm and generic netlink protocols) is the evidence that the calls got through.

Each probe runs as the escape suite's do (`tests.test_sandbox_escape_bwrap`): the session
sandbox, one sandbox per command and the real CLI; as root, and as uid 65534 through
`tests._nonroot` (this file passes there too).
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
from pathlib import Path

import pytest

from tests import test_sandbox_escape_bwrap as escape
from tests.test_sandbox_escape_bwrap import Run

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]
run, ws, host_sockets = escape.run, escape.ws, escape.host_sockets

PROBE = r"""
import errno, fcntl, json, os, socket, struct, termios
def attempt(make):
    try:
        make()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
def sock(family, kind, proto):
    return lambda: socket.socket(family, kind, proto).close()
def ldisc(number):
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSETD, struct.pack("i", number))
    finally:
        os.close(master)
        os.close(slave)
def get_ldisc():
    master, slave = os.openpty()
    try:
        assert struct.unpack("i", fcntl.ioctl(slave, termios.TIOCGETD, b"\0" * 4))[0] == 0
    finally:
        os.close(master)
        os.close(slave)
INET, INET6, NL = socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK
STREAM, DGRAM, RAW = socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW
refused = {
    "TIOCSETD N_NULL": attempt(lambda: ldisc(27)),
    "TIOCSETD N_TTY": attempt(lambda: ldisc(0)),
    "udplite": attempt(sock(INET, DGRAM, 136)),
    "udplite6": attempt(sock(INET6, DGRAM, 136)),
    "sctp": attempt(sock(INET, STREAM, 132)),
    "dccp": attempt(sock(INET6, 6, 33)),
    "l2tp": attempt(sock(INET, DGRAM, 115)),
    "smc": attempt(sock(INET, STREAM, 256)),
    "nl usersock": attempt(sock(NL, RAW, 2)),
    "nl xfrm": attempt(sock(NL, RAW, 6)),
    "nl fib_lookup": attempt(sock(NL, RAW, 10)),
    "nl connector": attempt(sock(NL, DGRAM, 11)),
    "nl netfilter": attempt(sock(NL, RAW, 12)),
    "nl generic": attempt(sock(NL, RAW, 16)),
    "nl 31": attempt(sock(NL, RAW, 31)),
    "nl uevent": attempt(sock(NL, DGRAM, 15)),  # round 41: the host's device events
}
def pair(family, kind, proto):
    def make():
        for end in socket.socketpair(family, kind, proto):
            end.close()
    return make
# socketpair creates two sockets of the family before the family refuses to pair them: vsock's
# and XDP's answers (EOPNOTSUPP, EPERM) came from the family's own code.
pairs = {
    "vsock": attempt(pair(40, STREAM, 0)), "xdp": attempt(pair(44, RAW, 0)),
    "packet": attempt(pair(17, RAW, 0)), "tipc": attempt(pair(30, socket.SOCK_SEQPACKET, 0)),
    "inet udplite": attempt(pair(INET, DGRAM, 136)), "inet6 tcp": attempt(pair(INET6, STREAM, 0)),
    "nl generic": attempt(pair(NL, RAW, 16)), "unix": attempt(pair(socket.AF_UNIX, STREAM, 0)),
}
allowed = {
    "TIOCGETD": attempt(get_ldisc),
    "tcp": attempt(sock(INET, STREAM, 0)), "tcp6": attempt(sock(INET6, STREAM, 6)),
    "udp": attempt(sock(INET, DGRAM, 17)), "udp6": attempt(sock(INET6, DGRAM, 0)),
    "mptcp": attempt(sock(INET, STREAM, 262)),
    "unix": attempt(sock(socket.AF_UNIX, STREAM, 0)),
    "nl route": attempt(sock(NL, RAW, 0)), "nl sock_diag": attempt(sock(NL, RAW, 4)),
    "nl audit": attempt(sock(NL, RAW, 9)),
    "nl selinux": attempt(sock(NL, RAW, 7)),
}
# ICMP: a ping socket (the netns's ping_group_range decides) and a raw one (no CAP_NET_RAW):
# the kernel answers, not the filter.
allowed["ping"] = attempt(sock(INET, DGRAM, 1))
allowed["raw icmp6"] = attempt(sock(INET6, RAW, 58))
# Inode flags on a workspace file: they stay on the host's file after the session.
flagged = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flagged")
open(flagged, "w").close()
fd = os.open(flagged, os.O_RDONLY)
def fsx_sync():
    current = bytearray(fcntl.ioctl(fd, 0x801C581F, bytes(28)))  # FS_IOC_FSGETXATTR
    struct.pack_into("I", current, 0, struct.unpack_from("I", current)[0] | 0x20)  # FS_XFLAG_SYNC
    fcntl.ioctl(fd, 0x401C5820, bytes(current))  # FS_IOC_FSSETXATTR
def file_setattr_sync():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(struct.pack("QIIII", 0x20, 0, 0, 0, 0))  # fa_xflags: SYNC
    if libc.syscall(469, -100, flagged.encode(), attr, ctypes.c_size_t(24), 0) != 0:
        raise OSError(ctypes.get_errno(), "file_setattr")
attrs = {
    "lsattr": attempt(lambda: fcntl.ioctl(fd, 0x80086601, bytes(8))),  # FS_IOC_GETFLAGS
    "chattr +S": attempt(lambda: fcntl.ioctl(fd, 0x40086602, struct.pack("l", 0x8))),
    "chattr +d": attempt(lambda: fcntl.ioctl(fd, 0x40086602, struct.pack("l", 0x40))),
    "fssetxattr sync": attempt(fsx_sync),
    "file_setattr sync": attempt(file_setattr_sync),
}
# The core limit: 1 (no core file, no core_pattern pipe handler), and it stays so.
import resource, signal, subprocess
core = {"limit": list(resource.getrlimit(resource.RLIMIT_CORE))}
hard = core["limit"][1]
def limited(change):  # Python reports setrlimit's EPERM as this ValueError
    def make():
        try:
            change()
        except ValueError as exc:
            if "not allowed to raise" not in str(exc):
                raise
            raise OSError(errno.EPERM, str(exc)) from None
    return make
core["setrlimit 0"] = attempt(limited(lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, hard))))
core["prlimit 0"] = attempt(limited(lambda: resource.prlimit(0, resource.RLIMIT_CORE, (0, hard))))
core["prlimit read"] = attempt(lambda: resource.prlimit(0, resource.RLIMIT_CORE))
crash = subprocess.run(["sh", "-c", "kill -SEGV $$"], cwd=os.path.dirname(flagged))
core["crash"] = crash.returncode == -signal.SIGSEGV
core["after"] = list(resource.getrlimit(resource.RLIMIT_CORE))
print(json.dumps({"refused": refused, "allowed": allowed, "pairs": pairs, "attrs": attrs, "core": core}))
"""


async def test_line_disciplines_and_rare_protocols_are_refused(run: Run, ws: Path) -> None:
    """Failed before: every "refused" probe said "ok" (or, for the protocols this kernel does
    not build, its EPROTONOSUPPORT: the same answer the filter gives now), and socketpair
    reached vsock (ENOTSUP), XDP and packet (EPERM: their create, as no CAP_NET_RAW); the
    inode flags were set (``+S`` and ``+d`` stayed on the host's file; ``file_setattr`` too); the
    core limit was 0:0, at which the kernel still runs a ``core_pattern`` pipe handler, and a
    command could change it (lower the soft limit from 1 to 0)."""
    probe = ws / "ldisc_probe.py"
    probe.write_text(PROBE)
    probe.chmod(0o644)
    code, out = await run(f"python3 {probe}")
    assert code == 0, out
    results = json.loads(out.strip().splitlines()[-1])
    refused, allowed = results["refused"], results["allowed"]
    assert refused["TIOCSETD N_NULL"] == refused["TIOCSETD N_TTY"] == "EPERM", refused
    protocols = {name: got for name, got in refused.items() if not name.startswith("TIOCSETD")}
    assert set(protocols.values()) == {"EPROTONOSUPPORT"}, protocols
    ping, raw = allowed.pop("ping"), allowed.pop("raw icmp6")
    assert ping in ("ok", "EACCES") and raw == "EPERM", (ping, raw)  # the kernel's own answers
    assert set(allowed.values()) == {"ok"}, allowed
    pairs = results["pairs"]
    assert pairs.pop("unix") == "ok", pairs
    families = ("vsock", "xdp", "packet", "tipc")
    assert {name: pairs.pop(name) for name in families} == dict.fromkeys(families, "EAFNOSUPPORT")
    assert set(pairs.values()) == {"ENOTSUP"}, pairs  # what inet, inet6 and netlink say anyway
    attrs = results["attrs"]
    assert attrs.pop("lsattr") == "ok", attrs
    assert set(attrs.values()) == {"EPERM"}, attrs
    fd = os.open(ws / "flagged", os.O_RDONLY)
    try:  # nothing stayed on the host's file
        flags = struct.unpack("l", fcntl.ioctl(fd, 0x80086601, bytes(8)))[0]
    finally:
        os.close(fd)
    assert not flags & (0x8 | 0x40), hex(flags)
    core = results["core"]
    assert core == {
        "limit": [1, 1], "setrlimit 0": "EPERM", "prlimit 0": "EPERM", "prlimit read": "ok",
        "crash": True, "after": [1, 1],
    }, core  # fmt: skip
    assert not [p.name for p in ws.iterdir() if p.name.startswith("core")]  # no core file either
