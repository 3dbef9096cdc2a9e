"""Red team, round 50 (sandbox10): the lock view on a kernel without ``openat2`` (Linux < 5.6).

Round 49 anchored each lock-view group by opening its directory with ``openat2``
(``RESOLVE_NO_SYMLINKS``). Its Left said what a kernel without that call got: every group skipped,
no lock view at all -- a command's locks on the host's inodes again (a host program's lock on a
file the command can read waited or failed, round 37), silently, on a session whose policy asked
for the view. Now both inits fall back to a walk one name at a time, each opened ``O_NOFOLLOW``
(`_zygote_main._walk_nofollow`, ``zinit.c`` `walk_nofollow`): the same groups, the same refusal
of a link anywhere on the way.

The kernel here has ``openat2``: each init runs under a seccomp filter that makes it fail with
ENOSYS, as an older kernel does, and replays round 49's groups on real mounts in a private tmpfs
(`tests.test_redteam_round49_sandbox9_lockviewlink`): a covered directory with a masked file below
it (``plain``: its overlay must be made, the mask moved in) and the directory swapped for a link
(``link``: the group skipped, the writable root's mask in place).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import _zygote_main as zm
from tests.conftest import require
from tests.test_redteam_round49_sandbox9_lockviewlink import _CHECK, _REPLAY, _group, _lay_out
from tests.test_zinit import _private_scratch

pytestmark = pytest.mark.bwrap

#: openat2 fails with ENOSYS, every other call runs (a classic BPF program; the number is the same
#: on x86_64 and aarch64). Installed first thing in the process that then replays or starts the init.
_NO_OPENAT2 = """
import ctypes
class _F(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class _P(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_F))]
_prog = (_F * 4)(_F(0x20, 0, 0, 0), _F(0x15, 0, 1, 437), _F(0x06, 0, 0, 0x00050000 | 38), _F(0x06, 0, 0, 0x7FFF0000))
_libc = ctypes.CDLL(None, use_errno=True)
assert _libc.prctl(38, 1, 0, 0, 0) == 0 and _libc.prctl(22, 2, ctypes.byref(_P(4, _prog)), 0, 0) == 0
assert _libc.syscall(437, -100, b"/", ctypes.c_void_p(0), ctypes.c_size_t(0)) < 0 and ctypes.get_errno() == 38
"""

#: The C init started as `tests.test_zinit._run_directly` starts it (its configuration as
#: `tests.test_zinit._config` writes it), under the filter, for both situations; only ``sandbox``'s
#: modules imported (``tests.test_zinit`` takes ~3 s more to import here).
_C_RUN = (
    _NO_OPENAT2
    + """
import fcntl, json, os, socket, sys
from sandbox import _seccomp, _zinit
from sandbox import _zygote_main as zm
from sandbox._bwrap_scope import landlock_abi

def config(calls):
    fields = ["-1", "-1", "0", "0", "100000", "", "no process", "3" if landlock_abi() >= 6 else "0", "0", str(len(calls))]
    fields += [str(f) if f is not None else "" for call in calls for f in call]
    return b"".join(f.encode() + b"\\0" for f in [*fields, _seccomp.filter_bytes().hex()])

def run(cwd, calls, script):
    program = _zinit.init_program_fd()
    high = fcntl.fcntl(program, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(program)
    config_fd = os.memfd_create("config", os.MFD_CLOEXEC)
    os.write(config_fd, config(calls))
    server = zm._start_c_server(high, config_fd)
    os.close(high)
    os.close(config_fd)
    ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    init = zm._c_clone(server, [theirs.fileno(), report_w, status_w])
    for fd in (theirs, report_w, status_w, server):
        os.close(fd) if isinstance(fd, int) else fd.close()
    request = _zinit.encode_request(["/bin/sh", "-c", script], cwd, {"PATH": "/usr/bin:/bin"})
    with open(os.devnull, "rb") as devnull:
        socket.send_fds(ctl, [request], [devnull.fileno(), out_w, out_w])
    os.close(out_w)
    ctl.close()
    output = b""
    while chunk := os.read(out_r, 65536):
        output += chunk
    status = os.read(status_r, 64).decode()
    os.waitpid(init, 0)
    os.waitpid(-1, 0)
    return output.decode(), status

print(json.dumps({name: run(cwd, calls, check) for name, cwd, check, calls in json.loads(sys.argv[1])}))
"""
)

#: What the plain case's command must see: the covered directory's mask still over its file (moved
#: into the overlay: empty), one mount at the directory (its overlay), the directory read-only.
_PLAIN = "cat {s}/docs/x/secret; grep -c ' {s}/docs ' /proc/self/mountinfo; touch {s}/docs/w 2>/dev/null || echo RO"


def _situation(tmp_path: Path, name: str, shape: str) -> tuple[str, Path, str, list[list[object]]]:
    """Lay out one case in a private tmpfs of its own: (name, scratch, the command, the group's calls)."""
    base = tmp_path / name
    base.mkdir()
    scratch = _private_scratch(base)
    if name == "plain":
        _lay_out(scratch, "path")  # a mask below docs/x, then docs/x swapped for a link: undone here
        os.unlink(scratch / "docs" / "x")
        (scratch / "docs" / "y").rename(scratch / "docs" / "x")
        check = _PLAIN.format(s=scratch) + "; " + _CHECK.format(s=scratch)
    else:
        _lay_out(scratch, "dir")
        check = _CHECK.format(s=scratch)
    calls = [[c[0] and c[0].decode(), c[1].decode(), c[2] and c[2].decode(), c[3].value, c[4] and c[4].decode()]
             for c in _group(scratch, "path" if name == "plain" else "dir", shape)]  # fmt: skip
    return name, scratch, check, calls


_WANT = {"plain": ["1", "RO", "WRITABLE"], "link": ["WRITABLE"]}


@pytest.mark.parametrize("shape", ["own", "shared"])
@pytest.mark.parametrize("init", ["c", "python"])
def test_without_openat2_the_groups_are_still_made_and_links_still_skip_them(
    tmp_path: Path, init: str, shape: str
) -> None:
    """Failed before: 4 of 4 (``plain``: no overlay at the directory, ``0`` and writable: every group
    skipped). ``link`` held before (a skipped group) and must hold with the walk."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    cases = [_situation(tmp_path, name, shape) for name in ("plain", "link")]
    try:
        if init == "c":
            repo = str(Path(__file__).resolve().parents[1])
            done = subprocess.run(
                [sys.executable, "-c", _C_RUN,
                 json.dumps([[n, str(s), c, k] for n, s, c, k in cases])],
                capture_output=True, text=True, timeout=120, cwd=repo, env={**os.environ, "PYTHONPATH": repo},
            )  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
            results = {name: tuple(got) for name, got in json.loads(done.stdout).items()}
        else:
            results = {}
            for name, _scratch, check, calls in cases:
                run = subprocess.run(
                    ["unshare", "-m", "--propagation", "private", sys.executable, "-I", "-c",
                     _NO_OPENAT2 + _REPLAY, str(Path(zm.__file__)), json.dumps(calls), check],
                    capture_output=True, text=True, timeout=60,
                )  # fmt: skip
                results[name] = (run.stdout + run.stderr, f"s {run.returncode << 8}\n")
        for name, (said, status) in results.items():
            assert status == "s 0\n", (name, status, said)
            assert said.split() == _WANT[name], (name, said)
    finally:
        for _name, scratch, _check, _calls in cases:
            subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
