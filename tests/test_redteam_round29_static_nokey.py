"""Red team, round 29 (static): with ``keyctl`` refused, every process compiled its static programs.

Round 28 MACs each cached program under a secret in the uid's user keyring; shellrt under a filter
that refuses ``keyctl`` (docker's default seccomp profile) had no secret, so it trusted no cache and
every fresh process compiled ``zinit`` (and docker's ``priv``) again, ~1-2 s each before its first
command. A secret in a SysV shared memory segment of the host's IPC namespace now stands in
(`sandbox._ipcsecret`): no sandboxed command shares that namespace, no other uid may open it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from sandbox import _ipcsecret, _static_build
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap
from tests.conftest import require

pytestmark = pytest.mark.bwrap

ROOT = Path(__file__).resolve().parents[1]
#: A shellrt process under bwrap's own deny list (``keyctl`` and ``add_key`` refused), asking for a program.
_CHILD = r"""
import ctypes, os, sys, time
from sandbox import _keyring, _seccomp, _static_build
code = _seccomp.filter_bytes()
buf = ctypes.create_string_buffer(code)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
prog = Prog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
assert libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0, ctypes.get_errno()  # SECCOMP_MODE_FILTER
arch = _seccomp.MACHINES[os.uname().machine]
r = libc.syscall(_seccomp.DENIED["keyctl"][arch], 10, -4, b"user", _keyring.DESCRIPTION, 0)
assert r == -1 and ctypes.get_errno() == 1, "keyctl was not refused"
start = time.perf_counter()
try:
    p = _static_build.static_program("probe", sys.argv[1].encode())
    kind = "planted" if b"planted" in p else "elf" if p[:4] == b"\x7fELF" else "other"
except _static_build.StaticBuildError as exc:
    kind = "none: " + str(exc)[:200]
print("KIND", kind)
print("MS", round((time.perf_counter() - start) * 1000))
"""


def _child(home: Path, src: str, **env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "CC")}
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, src],
        env={**base, "HOME": str(home), "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    fields = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    return fields["KIND"], int(fields["MS"])


def test_with_keyctl_refused_a_later_process_uses_the_cache(tmp_path: Path) -> None:
    """Failed before (root 1 of 1, uid 65534 1 of 1): the second process found no compiler to build
    again (``none: ...``). Now it takes the cached program; a program swapped under its MAC is built
    again."""
    home = tmp_path / "home"
    home.mkdir()
    src = f'__attribute__((used)) static const char tag[] = "{os.urandom(8).hex()}"; int main(void) {{ return 0; }}\n'
    assert _child(home, src)[0] == "elf"
    kind, warm_ms = _child(home, src, CC="/nonexistent/cc")
    assert kind == "elf", kind
    assert warm_ms < 1000, warm_ms  # the build alone costs ~0.5-1.5 s; the cached read ~1 ms
    cached = home / ".cache" / "shellrt" / _static_build.cache_name("probe", src.encode())
    cached.write_bytes(b"#!/bin/sh\necho planted\n")  # as a command could, its MAC kept
    assert _child(home, src)[0] == "elf"
    assert cached.read_bytes()[:4] == b"\x7fELF"


def test_the_secret_is_out_of_reach_of_commands_and_other_uids(tmp_path: Path) -> None:
    """Held before (a proof): a bwrap command does not share the host's IPC namespace, so it finds
    no segment under the caller's key (ENOENT) and none in its ``/proc/sysvipc/shm``; another uid
    finds it but cannot attach it (EACCES: mode 0600)."""
    require_bwrap()
    assert isinstance(_ipcsecret.secret(), bytes), _ipcsecret.secret()
    key = _ipcsecret.ipc_key(os.geteuid())
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    probe = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"r = libc.shmget(ctypes.c_int({key}), ctypes.c_size_t(0), ctypes.c_int(0))\n"
        "print('SHMGET', r, ctypes.get_errno())\n"
        "libc.shmat.restype = ctypes.c_void_p\n"
        "a = libc.shmat(ctypes.c_int(r), None, ctypes.c_int(0o10000)) if r >= 0 else None\n"
        "print('ATTACH', 'ok' if a not in (None, ctypes.c_void_p(-1).value) else 'no', ctypes.get_errno())\n"
        "rows = open('/proc/sysvipc/shm').read().splitlines()[1:]\n"
        f"print('LISTED', sum(1 for l in rows if l.split()[0] == '{key}'))\n"
    )
    fields, out = probe_lines(ws, tmp_path / "s", probe, persistent=False)
    assert fields.get("SHMGET") == f"-1 {errno.ENOENT}" and fields.get("LISTED") == "0", out
    if os.geteuid() == 0 and shutil.which("setpriv"):  # another uid, in the host's namespace
        other = subprocess.run(
            [
                "setpriv",
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                _nonroot.SYSTEM_PYTHON,
                "-c",
                probe,
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert f"ATTACH no {errno.EACCES}" in other.stdout, other.stdout + other.stderr
    else:
        libc = ctypes.CDLL(None, use_errno=True)  # as uid 65534: root's segment, if there is one
        libc.shmat.restype = ctypes.c_void_p
        r = libc.shmget(ctypes.c_int(_ipcsecret.ipc_key(0)), ctypes.c_size_t(0), ctypes.c_int(0))
        if r >= 0:
            assert libc.shmat(ctypes.c_int(r), None, ctypes.c_int(0o10000)) in (
                None,
                ctypes.c_void_p(-1).value,
            )
            assert ctypes.get_errno() == errno.EACCES


@pytest.mark.docker
def test_the_secret_is_out_of_reach_of_a_docker_command(tmp_path: Path) -> None:
    """Held before (a proof): each container has an IPC namespace of its own (the backend sets no
    ``ipc_mode``; the daemon's default is ``private`` or ``shareable``, never the host's), so a
    command there lists no segment under the caller's key."""
    from tests._docker_support import config, policy, require_docker, run_sh

    require_docker()
    assert isinstance(_ipcsecret.secret(), bytes), _ipcsecret.secret()
    key = str(_ipcsecret.ipc_key(os.geteuid()))
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)

    async def main() -> tuple[int | None, str]:
        from sandbox.docker import DockerBackend

        async with DockerBackend(config(), policy(ws)) as backend:
            return await run_sh(backend, "echo ROWS; tail -n +2 /proc/sysvipc/shm | awk '{print $1}'")

    code, out = anyio.run(main)
    assert code == 0 and "ROWS" in out, out
    assert key not in out.split(), out


#: This round's tests to repeat as uid 65534 (one wrapper for the three files: each costs ~10 s).
_AS_NOBODY = {
    "test_redteam_round29_static_nokey.py": (
        "test_with_keyctl_refused_a_later_process_uses_the_cache",
        "test_the_secret_is_out_of_reach_of_commands_and_other_uids",
    ),
    "test_redteam_round29_static_swap.py": ("test_a_command_cannot_swap_what_the_compiler_builds",),
    "test_redteam_round29_static_path.py": (
        "test_the_compiler_does_not_run_a_helper_a_command_planted_on_path",
    ),
}


def test_it_holds_for_an_unprivileged_caller() -> None:
    """This round's static tests as uid 65534 (its files, its own segment and key, its PATH)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run the files directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    here = Path(__file__).parent
    ids = [(f, n) for f, names in _AS_NOBODY.items() for n in names]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{f}::{n}" for f, n in ids], collect_args=[f"{here / f}::{n}" for f, n in ids]
    )
    _nonroot.assert_all_held(collected, outcome)
