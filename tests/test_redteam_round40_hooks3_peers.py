"""Red team, round 40 (hooks3): another shellrt process on the same workspace under a hook.

A hook's pause stops the sessions of its own process; a second shellrt (a CLI run, an MCP server)
on the same repository went on running its sandboxed commands under the hook, and the pause said
all were still (round 39's Left). Such a process cannot be paused from here: while one runs
anything on an overlapping workspace the pause is refused (guard hooks block), and one that starts
a command while a hook of ours holds the pause waits for its end (`_host_pause_peers`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]

#: The other shellrt process: a bwrap session on argv[1]; "task" starts a counter loop as a
#: background task and says "ready"; "gate" says "ready", then on "go" runs one write and says "ran".
_PEER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from sandbox import BwrapConfig, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from shellrt.supervisor import Supervisor

    async def main():
        ws, mode = Path(sys.argv[1]), sys.argv[2]
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        sup = Supervisor(backend, session_dir=Path(sys.argv[3]))
        try:
            if mode == "task":
                await sup.start_background("n=0; while :; do n=$((n+1)); echo $n >> c.cnt; done")
                while not (ws / "c.cnt").exists():
                    await anyio.sleep(0.01)
            else:
                await sup.run("true", timeout_s=30)
            print("ready", flush=True)
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if line.strip() == "go":
                await sup.run("echo pwned > planted", timeout_s=60)
                print("ran", flush=True)
                await anyio.to_thread.run_sync(sys.stdin.readline)
        finally:
            await sup.close()
            await backend.close()

    anyio.run(main)
    """
)


def _peer(tmp_path: Path, ws: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}
    peer = subprocess.Popen(
        [sys.executable, "-c", _PEER, str(ws), mode, str(tmp_path / "s-peer")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd="/",
    )
    assert peer.stdout is not None
    line = peer.stdout.readline()
    assert line.strip() == "ready", f"the other shellrt process did not start: {line!r}"
    return peer


def _end(peer: subprocess.Popen[str]) -> None:
    try:
        assert peer.stdin is not None
        peer.stdin.write("end\n")
        peer.stdin.flush()
        peer.stdin.close()
        peer.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        peer.kill()
        peer.wait()


async def _hook_beside(tmp_path: Path, mode: str) -> tuple[str | None, int]:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    peer = await anyio.to_thread.run_sync(_peer, tmp_path, ws, mode)
    try:
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            await sup.start_background("sleep 300")
            async with sup.quiet_for_host() as failure:
                counter = ws / "c.cnt"
                before = counter.stat().st_size if counter.exists() else 0
                await anyio.sleep(0.4)
                grew = (counter.stat().st_size if counter.exists() else 0) - before
            return failure, grew
    finally:
        await anyio.to_thread.run_sync(_end, peer)


async def test_a_busy_shellrt_process_on_the_workspace_refuses_the_pause(tmp_path: Path) -> None:
    """Failed before: the pause said all were still (None) while the other process's task counted on."""
    failure, grew = await _hook_beside(tmp_path, "task")
    assert failure is not None, f"the pause said all were still; the other process's task wrote {grew} bytes"
    assert "another shellrt process" in failure, failure


async def test_an_idle_shellrt_process_does_not(tmp_path: Path) -> None:
    """Nothing running there: nothing to pause, the hook runs."""
    failure, _ = await _hook_beside(tmp_path, "gate")
    assert failure is None, failure


async def test_a_start_of_another_process_waits_for_the_hook(tmp_path: Path) -> None:
    """Failed before: the other process's command wrote ``planted`` under the hook."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    peer = await anyio.to_thread.run_sync(_peer, tmp_path, ws, "gate")
    try:
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            await sup.run("true", timeout_s=30)
            async with sup.quiet_for_host() as failure:
                assert failure is None, failure
                assert peer.stdin is not None
                peer.stdin.write("go\n")
                peer.stdin.flush()
                await anyio.sleep(1.5)
                assert not (ws / "planted").exists(), "the other process's command ran under the hook"
            assert peer.stdout is not None
            with anyio.fail_after(30):
                line = await anyio.to_thread.run_sync(peer.stdout.readline)
            assert line.strip() == "ran", line
            assert (ws / "planted").exists(), "the other process's command never ran after the hook"
    finally:
        await anyio.to_thread.run_sync(_end, peer)


async def test_no_sandboxed_command_reaches_the_registry(tmp_path: Path) -> None:
    """Held (not an attack that failed): the registry a hook trusts is out of a command's reach, so
    no command forges, holds or removes an entry (bwrap gives it a /run and /tmp of its own)."""
    from shellrt.supervisor._host_pause_peers import registry

    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    place = registry()
    backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "s") as sup:
        result = await sup.run(f"ls -d {place} 2>&1; touch {place}/b-x 2>&1; echo done", timeout_s=60)
    assert "done" in result.preview, result.preview
    assert "No such file" in result.preview and not os.path.exists(f"{place}/b-x"), result.preview


def _held_entries(prefix: str) -> list[str]:
    """Entries of the registry named ``prefix``... whose lock is held (a busy session's)."""
    import fcntl

    from shellrt.supervisor import _host_pause_peers as peers

    held = []
    for name in os.listdir(peers.registry()):
        if name.startswith(prefix):
            fd = os.open(os.path.join(peers.registry(), name), os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(name)
            finally:
                os.close(fd)
    return held


async def test_a_task_that_ended_holds_no_entry(tmp_path: Path) -> None:
    """Failed under load (CI111: one descriptor too many after `tasks.stop`): a task's end let its
    entry go from a spawned waiter, which ran after whoever the end woke. Now the entry is let go by
    the time anyone sees the task ended (a hook of another process meanwhile was refused for a task
    that no longer ran), and the session's entry is gone with the session."""
    from shellrt.supervisor import _host_pause_peers as peers

    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    ours = f"b-{peers._SELF}-"
    backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "s") as sup:
        for ending in ("stop", "exit"):
            task = await sup.start_background("sleep 30" if ending == "stop" else "sleep 0.3")
            assert _held_entries(ours), "no entry held while it runs"
            with anyio.fail_after(30):
                if ending == "stop":
                    await sup.tasks.stop(task.id)
                else:
                    await sup.tasks.wait(task.id)
            assert not _held_entries(ours), f"after the task's {ending}, its entry was still held"
    left = [n for n in os.listdir(peers.registry()) if n.startswith(ours)]
    assert not left, f"the closed session's entry stayed: {left}"


#: A session that ran something, went idle and whose process then exited without closing it.
_IDLE_THEN_GONE = textwrap.dedent(
    """
    import os, sys
    from shellrt.supervisor import _host_pause_peers as p
    p.peers_dir = lambda: sys.argv[2]  # the test's own registry: no other worker's entries
    p.peers_places = lambda: [sys.argv[2]]
    presence = p.Presence()
    assert presence.enter((sys.argv[1],), lambda: None)
    presence.leave()
    print(presence._entry.path, flush=True)
    os._exit(0)
    """
)


def test_an_idle_entry_of_a_gone_process_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held (kept entries are new in round 40's speed pass): an idle entry is unlocked, so its
    process's death cannot be read from the lock; a look removes it by its pid. In a registry of
    the test's own: another worker's busy entry with no roots counts as overlapping (fail closed),
    and the look stopped there before it met the gone one's (round 42 supervisor2 saw it under -n 2)."""
    from shellrt.supervisor import _host_pause_peers as peers

    place = str(tmp_path / "registry")
    monkeypatch.setattr(peers, "peers_dir", lambda: place)
    monkeypatch.setattr(peers, "peers_places", lambda: [place])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}
    done = subprocess.run(
        [sys.executable, "-c", _IDLE_THEN_GONE, str(tmp_path), place],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
    )
    path = done.stdout.strip()
    assert path and os.path.exists(path), (done.stdout, done.stderr[-2000:])
    mine = os.path.realpath(tmp_path)
    assert not peers.others_live("b", lambda roots: mine in roots), "a gone process's idle entry counted as busy"
    assert not os.path.exists(path), "a gone process's idle entry stayed in the registry"


async def test_an_entry_removed_under_an_idle_session_is_made_again(tmp_path: Path) -> None:
    """Held: a look that took an idle entry for a dead process's (a pid of another pid namespace)
    removed it; the session's next start makes another, never holds the removed one unseen."""
    from shellrt.supervisor import _host_pause_peers as peers
    from shellrt.supervisor._host_pause import Reach

    presence = peers.Presence()
    try:
        assert presence.enter((str(tmp_path),), lambda: Reach.of((str(tmp_path),)))
        presence.leave()
        first = presence._entry.path if presence._entry else ""
        os.unlink(first)
        assert presence.enter((str(tmp_path),), lambda: Reach.of((str(tmp_path),)))
        ours = f"b-{peers._SELF}-{os.getpid()}-"
        assert _held_entries(ours), "the start held an entry no look can see"
        assert not os.path.exists(first)
    finally:
        presence.close()
    assert not [n for n in os.listdir(peers.registry()) if n.startswith(f"b-{peers._SELF}-{os.getpid()}-")]


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_busy_shellrt_process_on_the_workspace_refuses_the_pause",
        "test_an_idle_shellrt_process_does_not",
        "test_a_start_of_another_process_waits_for_the_hook",
        "test_no_sandboxed_command_reaches_the_registry",
    )
