"""Red-team attacks on the bwrap sandbox and its session cgroup that no issue named.

Holes that live in `sandbox/bwrap.py` / `sandbox/_zygote_main.py` (being rewritten elsewhere) are
marked ``xfail(strict=True)`` with the hole in the reason: the test turns green when it is fixed.
"""

from __future__ import annotations

import itertools
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import SandboxPolicy
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Fresh tool_use ids: a resent id is answered from its recorded result, never run again.
_IDS = itertools.count()


def text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def one(rt: shellrt.Runtime, name: str, **raw: Any) -> dict[str, Any]:
    user = await rt.run([{"type": "tool_use", "id": f"t{next(_IDS)}", "name": name, "input": raw}])
    block: dict[str, Any] = user["content"][0]
    return block


def bwrap_runtime(tmp_path: Path, **kw: Any) -> shellrt.Runtime:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return shellrt.Runtime(
        workspace=ws,
        sandbox="bwrap",
        mode="bypassPermissions",
        session_dir=tmp_path / "session",
        settings_files=(),
        **kw,
    )


async def until(rt: shellrt.Runtime, *, error: bool) -> dict[str, Any]:
    """``echo alive`` until it fails (``error``) or succeeds; the last result (the bomb starts, and
    is killed, asynchronously)."""
    import anyio

    result: dict[str, Any] = {}
    for _ in range(40):
        result = await one(rt, "Bash", command="echo alive")
        if bool(result["is_error"]) == error:
            break
        await anyio.sleep(0.25)
    return result


async def test_a_command_cannot_plant_a_setuid_program_on_the_host(tmp_path: Path) -> None:
    async with bwrap_runtime(tmp_path) as rt:
        done = await one(
            rt, "Bash", command="cp /bin/true suid; chmod 4755 suid; mkdir sgid; chmod 2775 sgid; echo done"
        )
    assert "done" in text(done), text(done)
    for name in ("suid", "sgid"):
        mode = os.stat(tmp_path / "ws" / name).st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID), f"{name} is {oct(mode)} on the host"


SETID_PROBE = r"""
import ctypes, errno, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
AT = -100  # AT_FDCWD
x86 = os.uname().machine == "x86_64"
open(b"plain", "w").close()
out = {}
out["chmod"] = os.system("chmod 4755 plain 2>/dev/null") != 0
out["chmod_g"] = os.system("chmod g+s plain 2>/dev/null") != 0
out["fchmodat"] = call(268 if x86 else 53, AT, b"plain", 0o6755)
out["openat_creat"] = call(257 if x86 else 56, AT, b"new1", os.O_CREAT | os.O_WRONLY, 0o4755)
out["openat_no_creat"] = call(257 if x86 else 56, AT, b"plain", os.O_RDONLY, 0o4755)  # mode ignored: fine
out["openat2"] = call(437, AT, b"plain", 0, 0)
out["plain_chmod"] = os.system("chmod 755 plain") == 0
out["umask_create"] = os.system("install -m 0750 /dev/null made") == 0
if x86:
    out["creat"] = call(85, b"new2", 0o4755)
    out["open_creat"] = call(2, b"new3", os.O_CREAT | os.O_WRONLY, 0o2755)
print(out)
"""


async def test_no_call_sets_a_setid_bit_but_ordinary_modes_work(tmp_path: Path) -> None:
    """Every call that can set S_ISUID/S_ISGID refuses it (seccomp); ordinary modes keep working."""
    async with bwrap_runtime(tmp_path) as rt:
        (tmp_path / "ws" / "probe.py").write_text(SETID_PROBE)
        done = await one(rt, "Bash", command="python3 probe.py")
    out = eval(text(done).splitlines()[0])  # the probe prints a dict literal
    assert out["chmod"] and out["chmod_g"], out
    assert out["fchmodat"] == "EPERM" and out["openat_creat"] == "EPERM", out
    assert out["openat_no_creat"] == "ok" and out["openat2"] == "ENOSYS", out
    assert out["plain_chmod"] and out["umask_create"], out
    if "creat" in out:
        assert out["creat"] == "EPERM" and out["open_creat"] == "EPERM", out
    for entry in (tmp_path / "ws").iterdir():
        assert not entry.lstat().st_mode & (stat.S_ISUID | stat.S_ISGID), entry


async def test_session_recovers_after_its_pids_are_used_up(tmp_path: Path) -> None:
    """A background command fills the session's pids limit: once it is stopped, commands run again."""
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws, limits={"pids": 48})
    async with bwrap_runtime(tmp_path, policy=policy) as rt:
        bomb = await one(
            rt,
            "Bash",
            command="for i in $(seq 100); do sleep 120 & done 2>/dev/null; wait",
            run_in_background=True,
        )
        task = text(bomb).split("task id ")[1].split(".")[0]
        blocked = await until(rt, error=True)
        await one(rt, "TaskStop", task_id=task)
        after = await until(rt, error=False)
    assert blocked["is_error"], text(blocked)
    assert not after["is_error"] and "alive" in text(after), text(after)


async def test_used_up_pids_are_reported_as_such(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws, limits={"pids": 48})
    async with bwrap_runtime(tmp_path, policy=policy) as rt:
        await one(
            rt,
            "Bash",
            command="for i in $(seq 100); do sleep 120 & done 2>/dev/null; wait",
            run_in_background=True,
        )
        blocked = await until(rt, error=True)
    message = text(blocked).lower()
    assert blocked["is_error"] and ("pids" in message or "process limit" in message), text(blocked)
    assert "taskstop" in message, text(blocked)
    assert "48" in message, text(blocked)  # the limit itself


async def test_a_command_cannot_touch_its_cgroup(tmp_path: Path) -> None:
    """Raise its own memory limit, or move itself to the root cgroup: the cgroup files are read-only."""
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws, limits={"memory_bytes": 256 << 20, "pids": 64})
    script = (
        'for c in memory pids; do p=$(grep ":$c:" /proc/self/cgroup | cut -d: -f3); '
        "for f in /sys/fs/cgroup/$c$p/memory.limit_in_bytes /sys/fs/cgroup/$c$p/pids.max "
        "/sys/fs/cgroup/$c/cgroup.procs /sys/fs/cgroup/$c/tasks /sys/fs/cgroup/cgroup.procs; do "
        "[ -e $f ] && (echo $$ > $f) 2>/dev/null && echo WROTE $f; done; done; "
        "grep -E ':(memory|pids):' /proc/self/cgroup"
    )
    async with bwrap_runtime(tmp_path, policy=policy) as rt:
        done = await one(rt, "Bash", command=script)
    assert "WROTE" not in text(done), text(done)
    # Still in the session's cgroup: the root of the sandbox's cgroup namespace (round 17), which
    # shows a move to any other cgroup as a path with "..".
    paths = [line.split(":", 2)[2] for line in text(done).splitlines() if line.count(":") >= 2]
    assert len(paths) == 2 and set(paths) == {"/"}, text(done)
