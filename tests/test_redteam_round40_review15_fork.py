"""Red team, round 40 (review15): a forked shellrt process among the peers' registry.

`_host_pause_peers` names each entry ``<kind>-<process>-<pid>-<n>`` and a look skips the entries of
its own process by ``<process>``, a token drawn at import. A child forked after the import (a
worker pool forked by an embedding program, a batch driver's forked workers) kept the parent's token:
each skipped the other's entries, so a hook of one ran while the other's command or task wrote the
workspace, and a start ran under the other's hook. A forked child also kept the parent's entries'
descriptors: their locks outlived the parent (its entry read as live: hooks refused), and dropping
its copy of a session unlinked the parent's live entry (hooks of others no longer saw it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests import _nonroot
from tests._bwrap_session import require_bwrap

ROOT = Path(__file__).resolve().parents[1]

#: A process that imported shellrt forks: the child runs a bwrap session's background task (a
#: counter), the parent then a hook's pause on the same workspace; prints the pause's answer.
_FORKED = textwrap.dedent(
    """
    import os, sys, time, anyio
    from pathlib import Path
    from sandbox import BwrapConfig, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from shellrt.supervisor import Supervisor
    import shellrt.supervisor._host_pause_peers  # a process that ran a command has it

    ws, base = Path(sys.argv[1]), Path(sys.argv[2])

    async def child(w):
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        sup = Supervisor(backend, session_dir=base / "s-child")
        try:
            await sup.start_background("n=0; while :; do n=$((n+1)); echo $n >> c.cnt; done")
            while not (ws / "c.cnt").exists():
                await anyio.sleep(0.01)
            os.write(w, b"r")
            await anyio.sleep(30)
        finally:
            await sup.close()
            await backend.close()

    async def parent():
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        sup = Supervisor(backend, session_dir=base / "s-parent")
        try:
            await sup.start_background("sleep 300")
            async with sup.quiet_for_host() as failure:
                before = (ws / "c.cnt").stat().st_size
                await anyio.sleep(0.4)
                grew = (ws / "c.cnt").stat().st_size - before
            print(repr(failure), grew, flush=True)
        finally:
            await sup.close()
            await backend.close()

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            anyio.run(child, w)
        finally:
            os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"r", "the forked child's task did not start"
    try:
        anyio.run(parent)
    finally:
        os.kill(pid, 15)
        os.waitpid(pid, 0)
    """
)

#: An entry announced, then a fork: the child drops its copy (a session of the parent's that it
#: closes or lets go) and exits; prints whether the parent's entry is still there.
_DROPPED = textwrap.dedent(
    """
    import os, sys
    from shellrt.supervisor import _host_pause_peers as p
    entry = p.announce("b", (sys.argv[1],))
    pid = os.fork()
    if pid == 0:
        entry.withdraw()
        os._exit(0)
    os.waitpid(pid, 0)
    print(os.path.exists(entry.path), flush=True)
    entry.withdraw()
    """
)

#: An entry announced, then a fork whose child lives on (a worker); then the parent dies by SIGKILL.
_ORPHANED = textwrap.dedent(
    """
    import os, signal, sys, time
    from shellrt.supervisor import _host_pause_peers as p
    entry = p.announce("b", (sys.argv[1],))
    pid = os.fork()
    if pid == 0:
        os.closerange(0, 3)
        time.sleep(20)
        os._exit(0)
    print(pid, entry.path, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=_env(), cwd="/", timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_a_forked_childs_busy_session_refuses_the_parents_hook(tmp_path: Path) -> None:
    """Failed before: the pause answered None while the forked child's task counted on."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    failure, grew = _run(_FORKED, str(ws), str(tmp_path)).rsplit(" ", 1)
    assert failure != "None", f"the pause said all were still; the forked child's task wrote {grew} bytes"
    assert "another shellrt process" in failure, failure


def test_a_forked_child_dropping_its_copy_keeps_the_parents_entry(tmp_path: Path) -> None:
    """Failed before: the child's withdraw unlinked the parent's live entry."""
    assert _run(_DROPPED, str(tmp_path)) == "True", "a forked child removed its parent's live entry"


def test_a_forked_child_does_not_keep_a_dead_parents_entry_live(tmp_path: Path) -> None:
    """Failed before: the child held the entry's lock, so the dead parent's entry read as live."""
    from shellrt.supervisor._host_pause_peers import others_live

    proc = subprocess.Popen(
        [sys.executable, "-c", _ORPHANED, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=_env(), cwd="/"
    )
    assert proc.stdout is not None
    child, path = proc.stdout.readline().split(" ", 1)
    proc.wait(30)
    try:
        deadline = time.monotonic() + 5
        while os.path.exists(path.strip()) and time.monotonic() < deadline:
            others_live("b", lambda roots: str(tmp_path) in roots)
            time.sleep(0.05)
        assert not os.path.exists(path.strip()), "the dead parent's entry stayed live in its forked child"
    finally:
        os.kill(int(child), signal.SIGKILL)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_forked_childs_busy_session_refuses_the_parents_hook",
        "test_a_forked_child_dropping_its_copy_keeps_the_parents_entry",
        "test_a_forked_child_does_not_keep_a_dead_parents_entry_live",
    )
