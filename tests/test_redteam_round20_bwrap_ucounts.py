"""Red team, round 20 (bwrap): per-uid kernel budgets a non-root caller's commands share with it.

A non-root caller's commands run as its own uid (in a user namespace it created). The kernel
charges their inotify instances and watches and their fanotify groups and marks to that uid on
the host (``/proc/sys/user/max_*``: each user namespace level up to the first), so a command
that held them all (128 inotify instances here) left the operator's editor, ``tail -f``,
systemd's user manager and the next session's protected-files guard without any for as long as
it ran -- a background task for the whole session.

The session's user namespace now gets its own ceiling (half the host's, written by each init
before the command runs): a command reaches it and the operator keeps the rest. Only a
non-root caller has the attack (a root caller's commands run as a leased uid of their own), so
the test runs as uid 65534 from root; run as non-root, it runs directly.
"""

from __future__ import annotations

import base64
import os
import resource
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._ucounts import SHARE, SYSCTLS, prlimit_flags, session_rlimits, session_sysctls
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

#: Takes as much as the kernel gives of each budget (inotify instances, POSIX message queues,
#: queued signals), up to the caps in argv, says how much, and holds it; with ``clean``, ends at
#: once (all released).
_TAKE = r"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("cur", ctypes.c_long), ("pad", ctypes.c_long * 4)]
attr = Attr(0, 8, 1024, 0)
tag = "/r20-%d-" % os.getpid()
def count(step, cap):
    n = 0
    while n < cap and step(n):
        n += 1
    return n
caps = [int(v) for v in sys.argv[2:5]]
ino = count(lambda i: libc.inotify_init1(os.O_CLOEXEC) >= 0, caps[0])
mq = count(lambda i: libc.mq_open((tag + str(i)).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr)) >= 0, caps[1])
for i in range(mq):
    libc.mq_unlink((tag + str(i)).encode())  # the open descriptors keep the bytes charged
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
sig = count(lambda i: libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), ctypes.c_void_p(0)) == 0, caps[2])
print("held", ino, mq, sig, flush=True)
if sys.argv[1] != "clean":
    time.sleep(60)
"""
NAMES = ("inotify instances", "message queues", "queued signals")


#: A queue of 8 messages of 1 KiB costs at most this many bytes of RLIMIT_MSGQUEUE.
_QUEUE_BYTES = 9216


def _wanted() -> tuple[int, int, int]:
    """A quarter of each budget of this uid: what the caller must still get while a command runs.
    (Asking for a quarter, never for all, keeps this machine's other programs of the uid whole.)"""
    instances = int(Path("/proc/sys/user/max_inotify_instances").read_text())
    queue_bytes = resource.getrlimit(resource.RLIMIT_MSGQUEUE)[0]
    signals = resource.getrlimit(resource.RLIMIT_SIGPENDING)[0]
    return instances // 4, queue_bytes // 4 // _QUEUE_BYTES, signals // 4


def _take(mode: str, caps: tuple[int, ...]) -> list[str]:
    return ["python3", "-c", _TAKE, mode, *map(str, caps)]


def _got(said: str) -> tuple[int, ...]:
    return tuple(int(v) for v in said.split("held", 1)[1].split()[:3])


def _free(want: tuple[int, ...]) -> tuple[int, ...]:
    """How much of ``want`` a new host process of this uid can take (it ends at once)."""
    out = subprocess.run(_take("clean", want), capture_output=True, text=True, timeout=60, check=True)
    return _got(out.stdout)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_session_leaves_the_caller_its_per_uid_budgets(tmp_path: Path, persistent: bool) -> None:
    """As non-root (uid 65534, below) failed before: the command took 127 inotify instances, 91
    message queues and 96,360 queued signals; the caller then got 0 of the 32, 22 and 24,090 it
    asked for. As root it holds by design: the command spends its leased uid's budgets. One bwrap
    per command (non-root) had the rlimits only until round 21 (its inotify ceiling: the budget
    namespace, `sandbox._ucounts.budget_prefix`; as 65534 it took 127 instances before)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    want = _wanted()
    assert min(want) > 0, want
    nonroot = os.geteuid() != 0

    async def main() -> tuple[str, tuple[int, ...], str]:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            take = base64.b64encode(_TAKE.encode()).decode()
            caps = "4096 4096 1048576"
            task = await sup.start_background(f"echo {take} | base64 -d | python3 - hold {caps}")
            said = ""
            with anyio.fail_after(40):
                while "held" not in said:
                    await anyio.sleep(0.2)
                    said += (await sup.tasks.read_new(task.id)).text
            free = await anyio.to_thread.run_sync(_free, want)
            await sup.tasks.stop(task.id)
            ceilings = (await sup.run("cd /proc/sys/user && grep -H . max_[if]*", timeout_s=30)).preview
            return said, free, ceilings

    said, free, ceilings = anyio.run(main)
    held = _got(said)
    after = _free(want)
    if persistent:  # the session's own limits as a command reads them (root: the host's, no user ns)
        share = SHARE if nonroot else 1
        host = Path("/proc/sys/user")
        expected = {f"{name}:{max(1, int((host / name).read_text()) // share)}" for name in SYSCTLS}
        assert expected <= set(ceilings.split()), ceilings
    wrong = [
        f"{name}: the command took {h}, the caller then got {f} of the {w} it asked for"
        for name, h, f, w in zip(NAMES[-len(want) :], held, free, want, strict=True)
        if f < w or h == 0
    ]
    wrong += [
        f"{name}: {a} of {w} after the command ended"
        for name, a, w in zip(NAMES[-len(want) :], after, want, strict=True)
        if a < w
    ]
    assert not wrong, "; ".join(wrong)


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    name = "test_a_session_leaves_the_caller_its_per_uid_budgets"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)


def test_the_share_is_half_of_each_budget_the_kernel_has(tmp_path: Path) -> None:
    (tmp_path / "max_inotify_instances").write_text("128\n")
    (tmp_path / "max_inotify_watches").write_text("1\n")  # never 0: a ceiling of 0 refuses all
    (tmp_path / "max_fanotify_groups").write_text("junk\n")  # unreadable: no ceiling, as if absent
    assert session_sysctls(tmp_path) == {"max_inotify_instances": 64, "max_inotify_watches": 1}
    for name, res, value in session_rlimits():
        soft = resource.getrlimit(res)[0]
        assert value == max(1, soft // SHARE) and f"--{name}={value}:{value}" in prlimit_flags()
