"""Red team round 42, docker5: the reset's SysV wipe joined an IPC namespace by a pid another process took.

`verify_pristine` removes every SysV object left in the container's IPC namespace
(`_reset.sysv_ipc_objects(..., remove=True)`). It opened ``/proc/<pid>/ns/ipc`` by number and
proved the executor alive only after the removal. Round 41 called the reset's by-number steps
harmless "reads"; this one writes: an executor that ended during the reset (its container killed,
OOM, the daemon restarted) may have handed its number to a host process, and the host's root then
removed every SysV segment, queue and semaphore set of the HOST's namespace (a database's shared
memory), before the late check refused the container.

Now the wipe joins through the executor's pidfd (`PidRef`): ``setns`` on a pidfd of a process that
ended fails, whoever holds the number. The test reuses a pid on purpose (``ns_last_pid`` inside a
pid namespace and an IPC namespace of its own, so nothing of the machine is at risk) and asks for
the wipe through the first process's reference: the segment in the second process's namespace
must survive. Root only (``setns``, ``ns_last_pid``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import require

_SCRIPT = textwrap.dedent(
    """
    import ctypes, subprocess, sys, time
    from sandbox.docker._pidref import pid_ref
    from sandbox.docker._reset import sysv_ipc_objects
    libc = ctypes.CDLL(None, use_errno=True)
    victim = libc.shmget(0, 4096, 0o600)  # IPC_PRIVATE, in this script's own IPC namespace
    assert victim >= 0, ctypes.get_errno()
    first = subprocess.Popen(["unshare", "--ipc", "sleep", "60"])
    ref = pid_ref(first.pid, lambda p: True, "the first sleeper")
    first.kill()
    first.wait()
    second = None
    for _ in range(20):
        with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
            fh.write(str(first.pid - 1))
        second = subprocess.Popen(["sleep", "60"])  # this script's IPC namespace: the "host's"
        if second.pid == first.pid:
            break
        second.kill()
        second.wait()
        second = None
    if second is None:
        sys.exit("could not reuse the pid")
    try:
        try:
            print("wiped: " + repr(sysv_ipc_objects(ref, remove=True)))
        except OSError as exc:
            print("refused: " + str(exc))
        with open("/proc/sysvipc/shm") as fh:
            ids = [int(row.split()[1]) for row in fh.read().splitlines()[1:] if row.split()]
        print("kept" if victim in ids else "removed")
    finally:
        second.kill()
        second.wait()
    """
)


def test_a_reused_pid_never_gets_its_sysv_objects_removed(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "joining an IPC namespace and reusing a pid need root")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "--ipc", sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    said, kept = proc.stdout.splitlines()[-2:]
    assert kept == "kept", f"another namespace's SysV segment was removed by the reset's wipe ({said})"
    assert said.startswith("refused"), said
