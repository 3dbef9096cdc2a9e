"""Red team, round 41 (review19): the peers' registry moves between processes of one uid.

`sandbox._liveroots.peers_dir` picks the registry by what exists when it is asked: a non-root
user's is ``/run/user/<uid>/shellrt-peers-<uid>`` while that runtime directory exists (it comes
with a login and goes with the last one's end) and ``/tmp/shellrt-peers-<uid>`` else. A shellrt
process that announced its session in one place and a process started after a login or logout,
whose hook announces and looks in the other, never see each other: the hook runs on the
workspace beside the first process's command. Here root's choice is moved the same way (in a
private mount namespace whose /run others may write, ``/run/user/0`` is made between the two).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}

#: The first process: a local session on argv[1] counting into a file as a background task.
_PEER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from sandbox import SandboxPolicy
    from sandbox.local import LocalBackend
    from shellrt.supervisor import Supervisor
    from shellrt.supervisor import _host_pause_peers as peers

    async def main():
        ws = Path(sys.argv[1])
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        sup = Supervisor(backend, session_dir=Path(sys.argv[2]))
        async with sup:
            await sup.start_background("n=0; while :; do n=$((n+1)); echo $n >> c.cnt; done")
            while not (ws / "c.cnt").exists():
                await anyio.sleep(0.01)
            print("ready", peers.registry(), flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)

    anyio.run(main)
    """
)

#: In the namespace: the first process starts with no /run/user/0 (its registry under /tmp), then
#: /run/user/0 is made (a login), then this process's hook looks.
_DRIVER = textwrap.dedent(
    """
    import os, subprocess, sys, anyio
    from pathlib import Path
    from sandbox import SandboxPolicy
    from sandbox.local import LocalBackend
    from shellrt.supervisor import Supervisor
    from shellrt.supervisor import _host_pause_peers as peers

    async def main():
        base = Path("/tmp/r41-places")
        ws = base / "ws"
        ws.mkdir(parents=True)
        peer = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(ws), str(base / "s-peer")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print("peer:", peer.stdout.readline().strip(), flush=True)
        os.makedirs("/run/user/0", mode=0o700)
        print("here:", peers.registry(), flush=True)
        try:
            backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
            await backend.start()
            sup = Supervisor(backend, session_dir=base / "s")
            async with sup:
                async with sup.quiet_for_host() as failure:
                    counter = ws / "c.cnt"
                    before = counter.stat().st_size
                    await anyio.sleep(0.3)
                    grew = counter.stat().st_size - before
            print("hook:", failure, "| grew:", grew, flush=True)
        finally:
            peer.stdin.close()
            peer.wait(30)

    anyio.run(main)
    """
)


def test_a_hook_sees_a_session_announced_where_the_registry_was() -> None:
    """Failed before: the hook (registry under /run/user/0) said all were still while the first
    process's task (registry under /tmp) wrote on."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("needs root and unshare(1) for a private /run and /tmp (CI runs as root)")
    script = (
        f"R={shlex.quote(str(ROOT))}; "
        "mount -t tmpfs -o mode=1777 none /run && mkdir /run/.repo && mount --bind \"$R\" /run/.repo && "
        "mount -t tmpfs -o mode=1777 none /tmp && mkdir -p \"$R\" && mount --bind /run/.repo \"$R\" && "
        "umount /run/.repo && rmdir /run/.repo && "  # the checkout stays where it was (CI's is below /tmp)
        f'exec {sys.executable} -c "$0" "$1"'
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, _DRIVER, _PEER],
        capture_output=True, text=True, env=_ENV, cwd="/", timeout=120,
    )
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert "hook" in lines, (done.stdout, done.stderr[-3000:])
    assert lines["peer"] == "ready /tmp/shellrt-peers-0", lines
    assert lines["here"] == "/run/user/0/shellrt-peers-0", lines
    assert not lines["hook"].startswith("None"), f"the hook ran beside an unseen task: {lines['hook']}"


#: The first process, idle: one command run (its entry kept, unlocked), then on "go" one write.
_IDLE_PEER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from sandbox import SandboxPolicy
    from sandbox.local import LocalBackend
    from shellrt.supervisor import Supervisor

    async def main():
        ws = Path(sys.argv[1])
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        sup = Supervisor(backend, session_dir=Path(sys.argv[2]))
        async with sup:
            await sup.run("true", timeout_s=30)
            print("ready", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
            await sup.run("echo pwned > planted", timeout_s=60)
            print("ran", flush=True)

    anyio.run(main)
    """
)

#: The hook holds its pause (its registry under /run/user/0) while the idle first process (its
#: registry under /tmp) is told to start a write: prints whether the write landed under the hook.
_HOLD_DRIVER = textwrap.dedent(
    """
    import os, subprocess, sys, anyio
    from pathlib import Path
    from sandbox import SandboxPolicy
    from sandbox.local import LocalBackend
    from shellrt.supervisor import Supervisor

    async def main():
        base = Path("/tmp/r41-places")
        ws = base / "ws"
        ws.mkdir(parents=True)
        peer = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(ws), str(base / "s-peer")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print("peer:", peer.stdout.readline().strip(), flush=True)
        os.makedirs("/run/user/0", mode=0o700)
        try:
            backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
            await backend.start()
            sup = Supervisor(backend, session_dir=base / "s")
            async with sup:
                async with sup.quiet_for_host() as failure:
                    peer.stdin.write("go\\n")
                    peer.stdin.flush()
                    await anyio.sleep(1.0)
                    under = (ws / "planted").exists()
            print("hook:", failure, "| planted under it:", under, flush=True)
            print("after:", peer.stdout.readline().strip(), flush=True)
        finally:
            peer.stdin.close()
            peer.wait(30)

    anyio.run(main)
    """
)


def test_a_start_waits_for_a_hook_announced_where_the_registry_is_now() -> None:
    """Failed before: the idle first process's write landed under the hook (each looked in its own
    place); after, it waits for the hook's end, then runs."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("needs root and unshare(1) for a private /run and /tmp (CI runs as root)")
    script = (
        f"R={shlex.quote(str(ROOT))}; "
        "mount -t tmpfs -o mode=1777 none /run && mkdir /run/.repo && mount --bind \"$R\" /run/.repo && "
        "mount -t tmpfs -o mode=1777 none /tmp && mkdir -p \"$R\" && mount --bind /run/.repo \"$R\" && "
        "umount /run/.repo && rmdir /run/.repo && "  # the checkout stays where it was (CI's is below /tmp)
        f'exec {sys.executable} -c "$0" "$1"'
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, _HOLD_DRIVER, _IDLE_PEER],
        capture_output=True, text=True, env=_ENV, cwd="/", timeout=120,
    )
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert "hook" in lines, (done.stdout, done.stderr[-3000:])
    assert lines["hook"] == "None | planted under it: False", f"the start ran under the hook: {lines['hook']}"
    assert lines["after"] == "ran", lines
