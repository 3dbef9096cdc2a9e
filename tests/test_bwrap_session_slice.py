"""A session command's scheduling: the init's short slice stays the init's.

A ready init asks the kernel for a short slice (`sandbox._zygote_main._INIT_SLICE_NS`) so that
on a busy machine it runs as soon as its command arrives: latency only, its weight and nice are
unchanged. The command must not keep it: it runs with the default slice and the caller's own
positive nice and ordinary policy, as a raw spawn would (a negative nice or a real-time policy it
does not get: red team round 36, `tests/test_redteam_round36_bwrap_sched.py`). Checked as root and as uid 65534. FAILS, not skips,
under CI=true (bwrap); a kernel without custom slices (Linux < 6.12) skips the slice checks.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox._zygote_main import _INIT_SLICE_NS, _SYS_SCHED_SETATTR, _SchedAttr
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests._bwrap_session import require_bwrap, zygote_session
from tests.conftest import require
from tests.test_sandbox_bwrap import zygote_family

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

ROOT = Path(__file__).resolve().parents[1]
#: What a command prints: its own slice, its child's, its init's (pid 1), its nice and its policy.
_SHOW = (
    "grep -h se.slice /proc/self/sched | tr -d ' '; (grep -h se.slice /proc/self/sched | tr -d ' ');"
    " grep -h se.slice /proc/1/sched | tr -d ' '; nice; chrt -p $$ | head -1"
)


def _slice_of(pid: int | str) -> int | None:
    """``se.slice`` of a process, from its /proc/PID/sched (None where not shown: not SCHED_OTHER)."""
    for line in Path(f"/proc/{pid}/sched").read_text().splitlines():
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    return None


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _custom_slices() -> bool:
    """Whether this kernel applies a slice asked for with sched_setattr (Linux 6.12+): tried
    on a child process, never on this one."""
    pid = os.fork()
    if pid == 0:
        attr = _SchedAttr(48, os.SCHED_OTHER, 0, os.getpriority(os.PRIO_PROCESS, 0), 0, _INIT_SLICE_NS)
        ok = ctypes.CDLL(None).syscall(_SYS_SCHED_SETATTR, 0, ctypes.byref(attr), 0) == 0
        os._exit(0 if ok and _slice_of("self") == _INIT_SLICE_NS else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    async with zygote_session(tmp_path) as made:
        yield made


async def test_ready_inits_wait_with_the_short_slice(session: tuple[BwrapBackend, Supervisor]) -> None:
    """Every pooled init, once ready, has the short slice; the zygote itself keeps the default."""
    if not _custom_slices():
        pytest.skip("this kernel has no custom slices (Linux < 6.12): the request is ignored")
    backend, sup = session
    assert (await sup.run("true", timeout_s=10)).exit_code == 0
    zygote = backend._zygote
    assert zygote is not None and zygote.host_pid is not None
    default = _slice_of("self")
    seen: dict[int, int | None] = {}
    zygote_pids: list[int] = []
    with anyio.move_on_after(10):
        while True:
            family = zygote_family(zygote.host_pid)
            zygote_pids = [pid for pid in family if _parent(pid) not in family]  # its parent: bwrap
            seen = {pid: _slice_of(pid) for pid in family if pid not in zygote_pids}
            if len(seen) == backend.warm_pool and set(seen.values()) == {_INIT_SLICE_NS}:
                break
            await anyio.sleep(0.05)
    assert len(seen) == backend.warm_pool and set(seen.values()) == {_INIT_SLICE_NS}, seen
    assert len(zygote_pids) == 1 and _slice_of(zygote_pids[0]) == default, "the zygote keeps the default"


async def test_the_command_gets_the_default_slice_back(session: tuple[BwrapBackend, Supervisor]) -> None:
    """The command and what it starts run with the default slice; only its init keeps the short one."""
    if not _custom_slices():
        pytest.skip("this kernel has no custom slices (Linux < 6.12): the request is ignored")
    if os.getpriority(os.PRIO_PROCESS, 0) < 0:
        pytest.skip(
            "run at a negative nice: the command's slice is reset after its exec, and a child it "
            "forks at once may keep the short one (the nice -5 case below checks that path's nice)"
        )
    _backend, sup = session
    default = _slice_of("self")
    for _ in range(3):  # pooled inits, then inits made meanwhile
        result = await sup.run(_SHOW, timeout_s=10)
        assert result.exit_code == 0, result.preview
        own, child, init, *_rest = result.preview.split("\n")
        assert (own, child) == (f"se.slice:{default}", f"se.slice:{default}"), result.preview
        assert init == f"se.slice:{_INIT_SLICE_NS}", result.preview


_OWNER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from sandbox import BwrapConfig, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from shellrt.supervisor import Supervisor

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=Path(sys.argv[1])))
        async with backend:
            async with Supervisor(backend, session_dir=Path(sys.argv[2])) as sup:
                result = await sup.run("nice; chrt -p $$ | head -1", timeout_s=10)
                print(result.exit_code, result.preview.replace("\\n", "|"), flush=True)

    anyio.run(main)
    """
)


@pytest.mark.parametrize(
    ("prefix", "said"),
    [
        (["nice", "-n", "5"], "5|pid 2's current scheduling policy: SCHED_OTHER"),
        (["nice", "-n", "-5"], "0|pid 2's current scheduling policy: SCHED_OTHER"),  # round 36: not passed on
        (["chrt", "--batch", "0"], "0|pid 2's current scheduling policy: SCHED_BATCH"),
    ],
)
async def test_the_callers_nice_and_policy_reach_the_command(
    tmp_path: Path, prefix: list[str], said: str
) -> None:
    """A session started at nice 5 runs its commands at that nice; one started under another
    ordinary policy (SCHED_BATCH here) runs them under it: the slice request changes neither. One
    started at nice -5 runs them at 0 (round 36: a command never outweighs the host's processes)."""
    require_bwrap()
    if prefix[-1].startswith("-") and os.geteuid() != 0:
        pytest.skip("only root may start a process at a negative nice")
    require(shutil.which(prefix[0]) is not None, f"{prefix[0]} is not installed (util-linux)")
    ws = tmp_path / "ws"
    ws.mkdir()
    path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}  # as uid 65534: its site dir too
    done = await anyio.run_process(
        [*prefix, sys.executable, "-c", _OWNER, str(ws), str(tmp_path / "session")],
        env=env,
        cwd=ROOT,
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out = done.stdout.decode()
    if "one sandbox per command" in done.stderr.decode():
        require(False, "the bwrap zygote does not start here")
    assert done.returncode == 0 and out.strip() == f"0 {said}|", (out, done.stderr.decode()[-2000:])


def test_the_same_holds_for_an_unprivileged_caller() -> None:
    """The tests above as uid 65534 (a non-root caller: bwrap's user namespace)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests above are it)"
    )
    require_bwrap()
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    args = [
        "tests/test_bwrap_session_slice.py",
        "--deselect",
        "tests/test_bwrap_session_slice.py::test_the_same_holds_for_an_unprivileged_caller",
    ]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.tests == collected.items, summary
