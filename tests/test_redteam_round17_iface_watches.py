"""Round 17, interfaces: sessions of one uid together could hold the uid's whole inotify budget.

Round 16 capped one guard at an eighth of ``fs.inotify.max_user_watches`` and left open that eight
sessions of one uid (eight ``shellrt serve``, or eight sessions of one Python process) could hold
all of it between them: a hostile command in each makes directories until its guard is at the
cap, and then no program of the uid (root's, when root runs shellrt) can watch a file. The guards
now share one ceiling per uid (half the budget; ``SHELLRT_GUARD_UID_WATCHES`` lowers it), counted
from what the kernel says the uid holds (`shellrt.supervisor._watch_budget`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor._watch_budget import STEP

_MADE = 3_000  # directories each command makes: two sessions, 6,000 watches without a shared ceiling
_CEILING = 4_000  # the uid's guards' ceiling above what the uid held before


def _watches_held() -> int:
    """inotify watches held by this process (every inotify descriptor's ``fdinfo``)."""
    held = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                held += sum(1 for line in fh if line.startswith("inotify wd:"))
        except OSError:
            continue
    return held


def test_sessions_of_one_uid_share_one_inotify_ceiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shellrt.supervisor._inotify as inotify

    # The uid's count is this process's alone: root's other processes on a shared machine (another
    # test worker's sessions) take and free watches meanwhile, which moved the room both ways.
    # `test_the_uid_count_sees_another_process` checks that the real count looks past ours.
    monkeypatch.setattr(inotify, "uid_watches", lambda uid=None: _watches_held())
    monkeypatch.setenv("SHELLRT_GUARD_MAX_WATCHES", "8192")  # each guard alone may hold all it makes
    before = _watches_held()
    monkeypatch.setenv("SHELLRT_GUARD_UID_WATCHES", str(before + _CEILING))
    script = f"import os\nfor i in range({_MADE}): os.mkdir(f'd{{i}}')"

    async def session(name: str, held: list[int], planted: list[bool]) -> None:
        ws = tmp_path / name
        ws.mkdir()
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / f"{name}-s") as sup:
                await sup.run(["python3", "-c", script], timeout_s=60)
                await sup.run("true", timeout_s=60)  # its guard now watches what it could
                held.append(_watches_held())
                await sup.run("mkdir -p .claude/hooks && echo x > .claude/hooks/pre.sh", timeout_s=60)
                planted.append((ws / ".claude" / "hooks" / "pre.sh").exists())
                await anyio.sleep(0)
        finally:
            await backend.close()

    async def main() -> tuple[list[int], list[bool]]:
        held: list[int] = []
        planted: list[bool] = []
        async with anyio.create_task_group() as tg:  # two sessions of one uid, open together
            for name in ("a", "b"):
                tg.start_soon(session, name, held, planted)
        return held, planted

    held, planted = anyio.run(main)
    # A guard counts the other's watches, not the room granted to it and not yet used: together
    # they may pass the ceiling by at most one step (`_watch_budget.STEP`).
    assert max(held) - before <= _CEILING + STEP, f"{max(held) - before:,} watches held by two sessions"
    assert planted == [False, False]  # past the ceiling the guards scan in full: still caught


def test_the_uid_ceiling_is_half_the_budget_and_only_lowered_by_the_setting() -> None:
    from shellrt.supervisor._watch_budget import uid_ceiling

    half = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text()) // 2
    assert uid_ceiling({}) == half
    assert uid_ceiling({"SHELLRT_GUARD_UID_WATCHES": "100"}) == 100
    assert uid_ceiling({"SHELLRT_GUARD_UID_WATCHES": str(half * 4)}) == half
    assert uid_ceiling({"SHELLRT_GUARD_UID_WATCHES": "many"}) == half


#: Any uid may run it (the test's interpreter may live under /root); it needs only ctypes.
_PYTHON = "/usr/bin/python3"
_HOLDER = """
import ctypes, os, sys, tempfile
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_CLOEXEC)
with tempfile.TemporaryDirectory() as top:
    for i in range(int(sys.argv[1])):
        d = os.path.join(top, str(i))
        os.mkdir(d)
        assert libc.inotify_add_watch(fd, d.encode(), 0x100) >= 0, ctypes.get_errno()
    print("ready", flush=True)
    sys.stdin.read()
"""


def test_the_uid_count_sees_another_process() -> None:
    """`uid_watches` counts every process of the uid, not only ours: a child of an otherwise unused
    uid holding 37 watches is counted as 37 (and 0 once it ended)."""
    from shellrt.supervisor._watch_budget import uid_watches

    if os.geteuid() != 0 or not os.access(_PYTHON, os.X_OK):
        pytest.skip("needs root (a child of another uid) and /usr/bin/python3 (ours may be under /root)")
    uid = 54_321  # no user of this machine: nothing else of this uid holds a watch
    child = subprocess.Popen(
        [_PYTHON, "-I", "-c", _HOLDER, "37"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        user=uid,
        group=uid,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        assert uid_watches(uid) == 37
    finally:
        child.communicate(timeout=30)
    assert uid_watches(uid) == 0
