"""Red team round 41, docker4: a host-side ``/proc`` read by a pid another process took.

Round 40 moved every *join* of a container's namespace onto a pidfd; the host's *reads* of
``/proc/<pid>/...`` stayed by number after an ``alive`` check (``check_masked``, the commands'
cgroup and view checks, ``protect_executor``'s status, the start's network counters). A container
process that ended right after the check hands its number on; the read then judged another
process's mounts (the host's own, as root) as the container's.

Now reads go through `PidRef.proc_dir`: ``/proc/<pid>`` opened first, the pidfd proven alive
after, every read below that descriptor. The test reuses a pid on purpose (``ns_last_pid`` inside a
pid namespace of its own) and reads the first process's mounts through its reference: the second
process's tmpfs at ``/mnt`` must never be returned. Root only (``ns_last_pid``, mounts).
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
    import subprocess, sys, time
    from sandbox.docker._nsmount import top_mounts
    from sandbox.docker._pidref import pid_ref
    from sandbox.errors import BackendUnavailableError
    def sleeper(mount):
        cmd = "mount -t tmpfs planted /mnt && exec sleep 60" if mount else "exec sleep 60"
        return subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", cmd])
    first = sleeper(False)
    ref = pid_ref(first.pid, lambda p: True, "the first sleeper")
    first.kill()
    first.wait()
    second = None
    for _ in range(20):
        with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
            fh.write(str(first.pid - 1))
        second = sleeper(True)
        if second.pid == first.pid:
            break
        second.kill()
        second.wait()
        second = None
    if second is None:
        sys.exit("could not reuse the pid")
    try:
        time.sleep(0.3)  # the second's tmpfs is mounted
        try:
            print("read: " + repr(top_mounts(ref, "/mnt")))
        except BackendUnavailableError as exc:
            print("refused: " + str(exc))
    finally:
        second.kill()
        second.wait()
    """
)


def test_a_reused_pid_is_never_read(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "reusing a pid (ns_last_pid) and mounting need root")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout.splitlines()[-1]
    assert "tmpfs" not in said, f"another process's mounts were read as the container's: {said}"
    assert said.startswith("refused"), said
