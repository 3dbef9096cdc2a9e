"""Red team, round 22 (bwrap): a non-dumpable non-root caller still gets sandboxes under its budget.

Round 21 put every non-root sandbox's user namespace below one budget namespace per process,
joined by ``nsenter --user=/proc/<this pid>/fd/<fd>``. The kernel lets another process open that
entry only while this process is dumpable, and a service that starts as root and drops to a uid
with ``setuid`` is made non-dumpable: its sandboxes refused to start unless it called
``prctl(PR_SET_DUMPABLE, 1)``. A long-lived holder process (a child, dumpable because it
exec'd) now owns the namespace and dies with its owner (`sandbox._ucounts._BudgetNamespace`).

Only a non-root caller has the budget namespace; the test runs itself as uid 65534 from root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import require_bwrap
from tests.conftest import require

pytestmark = pytest.mark.bwrap

#: Run as the caller, made non-dumpable first: a session and a per-command sandbox, each with a
#: background command running, then every user namespace below this process is checked to sit
#: below the holder's (``NS_GET_PARENT``); prints a JSON report, then SIGKILLs itself.
_CALLER = r"""
import ctypes, fcntl, json, os, signal, sys
from pathlib import Path
import anyio
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(4, 0, 0, 0, 0) == 0 and libc.prctl(3, 0, 0, 0, 0) == 0  # SET/GET_DUMPABLE
from sandbox import BwrapConfig, SandboxPolicy, _ucounts
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
NS_GET_PARENT = 0xB702
top = Path(sys.argv[1])

def ns_of(path):
    return os.stat(path).st_ino

def chain(pid):
    # the inodes of pid's user namespace and every parent up to the caller's own
    out, fd = [], os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
    try:
        while True:
            out.append(os.fstat(fd).st_ino)
            try:
                parent = fcntl.ioctl(fd, NS_GET_PARENT)
            except OSError:
                return out
            os.close(fd)
            fd = parent
    finally:
        os.close(fd)

def below_me():
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            while pid > 1 and pid != me:
                status = Path(f"/proc/{pid}/status").read_text()
                pid = int(status.split("PPid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if pid == me and int(entry.name) != me:
            found.append(int(entry.name))
    return found

async def main():
    report = {"said": [], "outside": [], "inside": 0}
    started = []
    try:
        for persistent in (True, False):
            ws = top / f"ws{int(persistent)}"
            ws.mkdir()
            backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
            try:
                await backend.start()
            except Exception as exc:
                report["said"].append(f"persistent={persistent}: {type(exc).__name__}: {exc}")
                continue
            sup = Supervisor(backend, session_dir=top / f"s{int(persistent)}")
            started.append((backend, sup))
            result = await sup.run("echo ran-$((40+2))", timeout_s=60)
            report["said"].append(f"persistent={persistent}: {result.preview.strip()}")
            await sup.start_background("exec sleep 300")
        holder = getattr(_ucounts._NAMESPACE, "holder_pid", lambda: None)()
        report["holder"] = holder
        if holder is not None:
            budget, mine = ns_of(f"/proc/{holder}/ns/user"), ns_of("/proc/self/ns/user")
            for pid in below_me():
                try:
                    ns = chain(pid)
                except OSError:
                    continue  # ended meanwhile
                if ns[0] in (mine, budget):
                    continue  # nsenter, prlimit, the holder itself
                if budget in ns:
                    report["inside"] += 1
                else:
                    report["outside"].append(pid)
    finally:
        for backend, sup in started:
            await sup.close()
            await backend.close()
    return report

print("REPORT " + json.dumps(anyio.run(main)), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_a_non_dumpable_caller_gets_sandboxes_under_its_budget(tmp_path: Path) -> None:
    """As uid 65534 failed before (1 of 1): both starts refused ("is this process non-dumpable?").
    As root (no budget namespace) it checks that a non-dumpable root caller's sandboxes start."""
    require_bwrap()
    done = subprocess.run(
        [sys.executable, "-c", _CALLER, str(tmp_path)],
        capture_output=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    lines = [ln for ln in done.stdout.decode(errors="replace").splitlines() if ln.startswith("REPORT ")]
    assert lines, done.stderr.decode(errors="replace")[-3000:]
    report = json.loads(lines[-1].removeprefix("REPORT "))
    assert report["said"] == ["persistent=True: ran-42", "persistent=False: ran-42"], report
    assert report["outside"] == [], f"sandboxes outside the budget namespace: {report}"
    holder = report["holder"]
    if os.geteuid() == 0:  # root's commands spend leased uids' budgets: no budget namespace
        assert holder is None, report
        return
    assert isinstance(holder, int), report
    assert report["inside"] >= 2, f"no sandbox found to check (two background commands run): {report}"
    deadline = time.monotonic() + 60  # its owner was SIGKILLed: the holder must end by itself
    while not _gone(holder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(holder), f"the budget namespace holder {holder} outlived its owner"


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    name = "test_a_non_dumpable_caller_gets_sandboxes_under_its_budget"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)
