"""Red team, round 41 (review19): a start that cannot announce itself, or look, among other
shellrt processes (`_host_pause_peers`).

A session's start locks its registry entry (made at its first start), then looks for other
processes' hooks. Round 40 left two ways out of that: a start whose announce failed here (its own
``EMFILE``, a full ``/run`` or ``/tmp``) ran with no entry, unseen by a hook of another process
whose announce worked (review15's Left); and a start whose look failed waited, polling, for ever
(an ``EMFILE`` session hung every command, now that every start looks). Both must end in a clear
refusal: nothing runs unseen, nothing hangs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}

#: A local session that ran one command (its entry made), then runs another with every descriptor
#: taken: prints "ran", "hung" (no answer in 5 s) or "refused <why>".
_NO_FDS = textwrap.dedent(
    """
    import os, resource, sys, anyio
    from pathlib import Path
    from sandbox import SandboxPolicy
    from sandbox.local import LocalBackend
    from shellrt.supervisor import Supervisor

    async def main():
        ws = Path(sys.argv[1])
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        sup = Supervisor(backend, session_dir=Path(sys.argv[2]))
        async with sup:
            await sup.run("true", timeout_s=30)
            taken = []
            try:
                while True:
                    taken.append(os.open("/dev/null", os.O_RDONLY))
            except OSError:
                pass
            try:
                with anyio.fail_after(5):
                    await sup.run("echo ran > ran.txt", timeout_s=30)
                answer = "ran"
            except TimeoutError:
                answer = "hung"
            except Exception as exc:
                answer = f"refused {type(exc).__name__}: {exc}"
            finally:
                for fd in taken:
                    os.close(fd)
            print(answer, flush=True)

    anyio.run(main)
    """
)


def test_a_start_that_cannot_look_is_refused_not_hung(tmp_path: Path) -> None:
    """Failed before: the start polled for ever ("hung"), the session's every command with it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _NO_FDS, str(ws), str(tmp_path / "s")],
        capture_output=True, text=True, env=_ENV, cwd="/", timeout=120,
    )
    answer = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert answer.startswith("refused"), answer
    assert "other shellrt processes" in answer and "descriptors" in answer, answer
    assert not (ws / "ran.txt").exists()


#: The other shellrt process: a local session on argv[1] whose start counts into a file as a
#: background task; prints "ready" once it counts, or "refused <why>"; ends on stdin's end.
_PEER = textwrap.dedent(
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
            try:
                await sup.start_background("n=0; while :; do n=$((n+1)); echo $n >> c.cnt; done")
            except Exception as exc:
                print(f"refused {type(exc).__name__}: {exc}", flush=True)
                return
            while not (ws / "c.cnt").exists():
                await anyio.sleep(0.01)
            print("ready", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)

    anyio.run(main)
    """
)

#: Run in a private mount namespace whose /run is a small tmpfs (root's registry is
#: /run/shellrt-peers-0): /run is filled, the peer starts, /run is freed, then a hook of this
#: process looks. Prints the peer's line, then the hook's failure and how much the peer wrote.
_DRIVER = textwrap.dedent(
    """
    import os, subprocess, sys, anyio
    from pathlib import Path
    from sandbox import SandboxPolicy
    from sandbox.local import LocalBackend
    from shellrt.supervisor import Supervisor
    from shellrt.supervisor import _host_pause_peers as peers

    async def main():
        base = Path(sys.argv[1])
        ws = base / "ws"
        ws.mkdir()
        assert peers.registry() == "/run/shellrt-peers-0", peers.registry()
        filler = []
        try:
            for n in range(100000):
                path = f"/run/fill-{n}"
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
                filler.append(path)
        except OSError:
            pass
        peer = subprocess.Popen([sys.executable, "-c", sys.argv[2], str(ws), str(base / "s-peer")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = peer.stdout.readline().strip()
        print("peer:", line, flush=True)
        for path in filler:
            os.unlink(path)
        try:
            backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
            await backend.start()
            sup = Supervisor(backend, session_dir=base / "s")
            async with sup:
                async with sup.quiet_for_host() as failure:
                    counter = ws / "c.cnt"
                    before = counter.stat().st_size if counter.exists() else 0
                    await anyio.sleep(0.3)
                    grew = (counter.stat().st_size if counter.exists() else 0) - before
            print("hook:", failure, "| grew:", grew, flush=True)
        finally:
            peer.stdin.close()
            peer.wait(30)

    anyio.run(main)
    """
)


def test_a_start_that_cannot_announce_does_not_run_unseen(tmp_path: Path) -> None:
    """Failed before: the other process's start found /run full, ran its task with no entry, and
    this process's hook (/run freed meanwhile) said all were still while the task wrote on."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("needs root and unshare(1) for a private /run (CI runs as root)")
    script = (
        "mount -t tmpfs -o size=1m,nr_inodes=64,mode=755 none /run && "
        f'exec {sys.executable} -c "$0" "$1" "$2"'
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, _DRIVER, str(tmp_path), _PEER],
        capture_output=True, text=True, env=_ENV, cwd="/", timeout=120,
    )
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert "peer" in lines and "hook" in lines, (done.stdout, done.stderr[-3000:])
    if lines["peer"] == "ready":  # the task ran: the hook must have seen it
        assert not lines["hook"].startswith("None"), f"the hook ran beside an unseen task: {lines['hook']}"
    else:
        assert lines["peer"].startswith("refused") and "other shellrt processes" in lines["peer"], lines["peer"]


#: A local session on a fresh workspace runs one command, and a hook of it looks; printed.
_READ_ONLY_RUN = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from sandbox import SandboxPolicy
    from sandbox.local import LocalBackend
    from shellrt.supervisor import Supervisor

    async def main():
        base = Path(sys.argv[1])
        ws = base / "ws"
        ws.mkdir()
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        async with Supervisor(backend, session_dir=base / "s") as sup:
            try:
                result = await sup.run("echo hi", timeout_s=30)
                print("run:", result.preview.strip(), flush=True)
            except Exception as exc:
                print("run: refused", exc, flush=True)
            async with sup.quiet_for_host() as failure:
                print("hook:", failure, flush=True)

    anyio.run(main)
    """
)


@pytest.mark.parametrize("baked", [False, True], ids=["no-registry", "registry-in-the-image"])
def test_a_registry_no_process_can_make_refuses_hooks_not_commands(tmp_path: Path, baked: bool) -> None:
    """Held as before (it failed on this round's first fix: every command was refused): where the
    registry cannot be made by any process of the uid (a read-only /run, as in a container run with a
    read-only root), commands run and every hook is refused, the same in every process."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("needs root and unshare(1) for a private /run (CI runs as root)")
    made = "mkdir -m 700 /run/shellrt-peers-0 && " if baked else ""
    script = (
        f"mount -t tmpfs -o mode=755 none /run && {made}mount -o remount,ro /run && "
        f'exec {sys.executable} -c "$0" "$1"'
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, _READ_ONLY_RUN, str(tmp_path)],
        capture_output=True, text=True, env=_ENV, cwd="/", timeout=120,
    )
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert lines.get("run") == "hi", (done.stdout, done.stderr[-3000:])
    assert "Read-only file system" in lines.get("hook", ""), lines
