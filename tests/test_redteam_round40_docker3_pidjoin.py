"""Red team round 40, docker3: a namespace join by a pid that was handed to another process.

The host joins a container's mount namespace from a short-lived child (`_nsmount`, `_detach`,
`_ptys`, `_procmask`). It used to open ``/proc/<pid>/ns/mnt`` by number in that child, after the
parent had checked the pid: a container process that ended in between (its container killed,
the daemon restarted) may have given its number to another process, and a root host then mounted
into, or detached from, that process's namespace (the host's own, for a host process).

Now every join goes through a pidfd opened before the process was proven the container's
(`sandbox.docker._pidref`): ``setns`` on a pidfd of a process that ended fails, whatever holds the
number now. The test reuses a pid on purpose (``ns_last_pid``, inside a pid namespace of its own so
no other process of the machine takes it) and asks for a mount through the first process's
reference: the second process's namespace must not get it. Root only (joins need it).
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
    import os, signal, subprocess, sys
    from sandbox.docker._nsmount import NsMount, mount_into
    from sandbox.docker._pidref import pid_ref
    from sandbox.errors import BackendUnavailableError
    src = sys.argv[1]
    def sleeper():
        return subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep", "60"])
    first = sleeper()
    ref = pid_ref(first.pid, lambda p: True, "the first sleeper")
    first.kill()
    first.wait()
    second = None
    for _ in range(20):
        with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
            fh.write(str(first.pid - 1))
        second = sleeper()
        if second.pid == first.pid:
            break
        second.kill()
        second.wait()
        second = None
    if second is None:
        sys.exit("could not reuse the pid")
    try:
        import time
        time.sleep(0.2)  # unshare has made the namespace and exec'd sleep
        try:
            mount_into(ref, [NsMount(source=src, target="/mnt", read_only=True)], "mount the test directory")
            said = "mounted"
        except BackendUnavailableError as exc:
            said = "refused: " + str(exc)
        with open(f"/proc/{second.pid}/mountinfo") as fh:
            landed = any(line.split()[4] == "/mnt" for line in fh)
        print(said)
        print("landed" if landed else "clean")
    finally:
        second.kill()
        second.wait()
    """
)


def test_a_reused_pid_is_never_joined(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "joining a mount namespace needs root")
    src = tmp_path / "src"
    src.mkdir()
    (src / "planted").write_text("x")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", _SCRIPT, str(src)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    said, landed = proc.stdout.splitlines()[-2:]
    assert landed == "clean", f"the mount landed in another process's namespace ({said})"
    assert said.startswith("refused"), said
