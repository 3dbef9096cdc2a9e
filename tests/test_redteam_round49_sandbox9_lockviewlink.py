"""Red team, round 49 (sandbox9): a covered directory swapped for a symbolic link since the plan.

Each session init replays the lock view the zygote planned at the session's start
(`sandbox._zygote_main.lock_view`): for a non-root caller, one overlay per read-only directory
beside its roots (``lowerdir=<dir>``), the mounts below it moved in, the whole moved over
``<dir>``. Those calls named paths, and ``mount(2)`` follows symbolic links. A command of another
session whose writable root holds such a directory (``/repo/docs`` beside a session on
``/repo/app``; the other session on ``/repo``) swaps it for a link -- ``mv docs d && ln -s app docs``
-- and every later init put a read-only overlay of ``app`` over ``app``: the session's writable
root read-only, and every file its policy masks there (``read_denied``: a mount on the file)
readable, hidden below the overlay. Or it swapped a directory on a planned mount's path: every
later init failed ("Too many levels of symbolic links"), or the move took another mount away. A
root caller's shared overlay (one for ``/``, each top directory's part of it bound and moved over
it, round 38) replayed by path alike: its directories are names only root makes, but the mounts
moved into it lie below anywhere (a mask below ``/work``, a host mount in ``/var/tmp``).

Here each init replays such a group as it would in a session, in a mount namespace of its own on
the host (no bwrap: the plan's depth and tries bounds, and the caller, do not decide whether the
case is reached), on real mounts in a private tmpfs: a writable root with a masked file, the
covered directory beside it. The C init through `tests.test_zinit`'s direct start, the Python one
in ``unshare -m``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import _seccomp
from sandbox import _zygote_main as zm
from sandbox._zygote_main import (
    _CALL_GROUP_END,
    _CALL_GROUP_HEAD,
    _CALL_IF_PRESENT,
    _CALL_OUTER,
    _CALL_UMOUNT,
    _mount_call,
)
from tests.conftest import require
from tests.test_zinit import _config, _private_scratch, _run_directly

pytestmark = pytest.mark.bwrap

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_MOVE = 1, 2, 4, 4096, 8192
#: What the command sees: the writable root's masked file (empty: still masked), whether it can
#: write there, what the covered name shows.
_CHECK = "cat {s}/app/secret; echo; touch {s}/app/w && echo WRITABLE"


#: The Python init's replay alone (the module by its file: no package import, ~5 s less a case).
_REPLAY = """
import importlib.util, json, subprocess, sys
spec = importlib.util.spec_from_file_location("zm", sys.argv[1])
zm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zm)
zm._replay([zm._mount_call(*c[:3], 0, c[4])[:3] + (zm.ctypes.c_ulong(c[3]), c[4] and c[4].encode())
            for c in json.loads(sys.argv[2])])
print(subprocess.run(["sh", "-c", sys.argv[3]], capture_output=True, text=True).stdout, end="")
"""


def _group(scratch: Path, case: str, shape: str = "own") -> tuple:  # type: ignore[type-arg]
    """The plan's calls for ``docs``, with ``h``, ``s`` and ``e`` in ``scratch``: ``own``, its own overlay
    (`_zygote_main._lock_view_calls`' shape: a non-root caller's); ``shared``, its part of one overlay
    of its mount (`_shared_view_calls`' shape: a root caller's, for ``/``). After the swap:
    ``dir``, ``docs`` is a link to the writable root ``app`` now; ``path``, ``docs/x`` (on the way to
    a mount below ``docs``) is one."""
    s = str(scratch)
    flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    below = [f"{s}/docs/x/secret"] if case == "path" else []
    lv = f"{s}/lv"  # the assembly places: a mount of their own, as /dev/.shellrt-lockview is
    at = f"{lv}/h" if shape == "own" else f"{lv}/s"
    moves = [_mount_call(p, at + p[len(f"{s}/docs") :], None, _MS_MOVE | _CALL_IF_PRESENT) for p in below]
    end = _mount_call(at, f"{s}/docs", None, _MS_MOVE | _CALL_GROUP_END)
    if shape == "own":
        head = _mount_call("overlay", at, "overlay", flags | _CALL_GROUP_HEAD, f"lowerdir={s}/docs:{lv}/e")
        return (head, *moves, end)
    outer = _mount_call(
        "overlay", f"{lv}/h", "overlay", flags | _CALL_GROUP_HEAD | _CALL_OUTER, f"lowerdir={s}:{lv}/e"
    )
    head = _mount_call(f"{lv}/h/docs", at, None, _MS_BIND | _CALL_GROUP_HEAD)
    done = _mount_call(None, f"{lv}/h", None, _CALL_UMOUNT | _CALL_GROUP_END | _CALL_OUTER)
    return (outer, head, *moves, end, done)


def _lay_out(scratch: Path, case: str) -> None:
    """The writable root ``app`` with its masked ``secret`` (a mount over it, as bwrap masks), the
    covered ``docs`` beside it; then the other session's command's swap."""
    for name in ("app", "docs/x", "lv"):
        (scratch / name).mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(scratch / "lv")], check=True)
    for name in ("e", "h", "s"):
        (scratch / "lv" / name).mkdir()
    (scratch / "app" / "secret").write_text("TOPSECRET\n")
    (scratch / "empty").write_text("")
    subprocess.run(["mount", "--bind", str(scratch / "empty"), str(scratch / "app" / "secret")], check=True)
    if case == "dir":
        (scratch / "docs").rename(scratch / "docs.old")
        (scratch / "docs").symlink_to("app")
    else:
        (scratch / "docs" / "x" / "secret").write_text("")
        subprocess.run(
            ["mount", "--bind", str(scratch / "empty"), str(scratch / "docs" / "x" / "secret")], check=True
        )
        (scratch / "docs" / "x").rename(scratch / "docs" / "y")
        (scratch / "docs" / "x").symlink_to(scratch / "app")


@pytest.mark.parametrize("case", ["dir", "path"])
@pytest.mark.parametrize("shape", ["own", "shared"])
@pytest.mark.parametrize("init", ["c", "python"])
def test_a_link_swapped_in_since_the_plan_moves_nothing_else(
    tmp_path: Path, init: str, shape: str, case: str
) -> None:
    """Failed before: 8 of 8 (``dir``: the masked file read ``TOPSECRET``, or the root was
    read-only; ``path``: the init failed, ``Too many levels of symbolic links``, and every later
    command of the session with it; both shapes, both inits). Now each group's directory is opened
    once through no link, and its overlay's lower layer (or its part of the shared one, found
    through no link), the mounts moved into it and the move over it are named by fds: a link there
    now skips the group (the directory stays as the host shows it), a link on a mount's way skips
    that mount."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    scratch = _private_scratch(tmp_path)
    try:
        _lay_out(scratch, case)
        check = _CHECK.format(s=scratch)
        if init == "c":
            said, status = _run_directly(
                tmp_path, _config(_seccomp.filter_bytes(), _group(scratch, case, shape)), check
            )
        else:
            calls = [[c[0] and c[0].decode(), c[1].decode(), c[2] and c[2].decode(), c[3].value, c[4] and c[4].decode()]
                     for c in _group(scratch, case, shape)]  # fmt: skip
            done = subprocess.run(
                ["unshare", "-m", "--propagation", "private", sys.executable, "-I", "-c", _REPLAY,
                 str(Path(zm.__file__)), json.dumps(calls), check],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            said, status = done.stdout + done.stderr, f"s {done.returncode << 8}\n"
        assert status == "s 0\n", (status, said)  # the init set up and ran the command
        assert said.split() == ["WRITABLE"], said  # the mask still over the secret, the root writable
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
