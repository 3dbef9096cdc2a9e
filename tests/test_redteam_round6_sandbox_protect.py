"""Red team round 6: a command made the host's protected-files check misread a git config.

The check judges a git directory's ``config`` by its code-running keys; what it could not read,
it judged as empty (inert), and it read at most 64 MiB of it:

- **a lease**: a background command appends ``core.fsmonitor`` to ``.git/config`` and holds a
  write lease (``fcntl(F_SETLEASE, F_WRLCK)``) on it. The host's non-blocking open then fails
  with ``EWOULDBLOCK``; the check took the config for one without keys, recorded its signature
  as accepted, and never read it again (same signature) when the session closed and the lease
  holder was gone. The next ``git status`` on the host ran the command's program.
- **size**: a config of 64 MiB of comment followed by ``core.fsmonitor``: git reads it whole,
  the check only its first 64 MiB.

A file the check cannot read whole now counts as changed and code-running (reverted), for every
kind of protected file.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import CommandResult, Supervisor
from tests.conftest import require

#: Appends core.fsmonitor, then keeps a write lease on the config (re-taken whenever broken).
_LEASE_HOLDER = r"""
import fcntl, os, signal, time
signal.signal(signal.SIGIO, signal.SIG_IGN)
with open(".git/config", "a") as f:
    f.write("[core]\n\tfsmonitor = touch /tmp/pwned-by-lease\n")
time.sleep(0.3)
while True:
    fd = os.open(".git/config", os.O_RDONLY)
    try:
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        except PermissionError:
            open("refused", "w").close()  # round 8: the filter refuses leases (EPERM)
            raise
        open("leased", "w").close()
        while fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_WRLCK:
            time.sleep(0.01)
    except OSError:
        pass
    os.close(fd)
    time.sleep(0.01)
"""


def _repo(tmp_path: Path) -> Path:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def test_a_lease_on_the_git_config_does_not_hide_a_planted_fsmonitor(tmp_path: Path) -> None:
    ws = _repo(tmp_path)

    async def main() -> CommandResult:
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                await sup.start_background(["python3", "-c", _LEASE_HOLDER])
                with anyio.fail_after(30):
                    while not (ws / "leased").exists() and not (ws / "refused").exists():
                        await anyio.sleep(0.05)
                await anyio.sleep(0.3)  # past the check's 150 ms window for recent changes
                return await sup.run("true", timeout_s=60)
        finally:
            await backend.close()

    result = anyio.run(main)
    assert "fsmonitor" not in (ws / ".git/config").read_text(), result.notes
    assert (ws / "refused").exists() and not (ws / "leased").exists()  # no lease since round 8


@pytest.mark.parametrize("kind", ["config", "hook"])
def test_a_protected_file_larger_than_the_check_reads_is_reverted(tmp_path: Path, kind: str) -> None:
    ws = _repo(tmp_path)
    pad = "#" + "a" * (65 << 20) + "\n"
    if kind == "config":
        path, tail = ws / ".git/config", "[core]\n\tfsmonitor = touch /tmp/pwned-by-size\n"
        plant = (
            'python3 -c \'f = open(".git/config", "a"); '
            'f.write("#" + "a" * (65 << 20) + "\\n[core]\\n\\tfsmonitor = touch /tmp/pwned-by-size\\n")\''
        )
    else:
        # an operator's big executable hook exists; the command changes only its tail
        path, tail = ws / ".git/hooks/pre-commit", "touch /tmp/pwned-by-size\n"
        path.write_text("#!/bin/sh\n" + pad + "true\n")
        path.chmod(0o755)
        plant = "sed -i '$ s|^true$|touch /tmp/pwned-by-size|' .git/hooks/pre-commit"

    async def main() -> CommandResult:
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                return await sup.run(plant, timeout_s=120)
        finally:
            await backend.close()

    result = anyio.run(main)
    assert result.exit_code == 0, result
    # quarantined; the old content is put back when it was small enough to keep a copy of
    assert not path.exists() or not path.read_text().endswith(tail), result.notes
    assert "reverted" in "\n".join(result.notes), result.notes


#: Dirties the config's page through a shared mapping (its one timestamp update), waits for a
#: check to accept that, then writes core.fsmonitor through the same still-dirty page.
_MMAP_WRITER = r"""
import mmap, os, sys, time
fd = os.open(".git/config", os.O_RDWR)
size = os.fstat(fd).st_size
mm = mmap.mmap(fd, size)
mm[0:1] = mm[0:1]
open("step1", "w").close()
while not os.path.exists("go"):
    time.sleep(0.01)
evil = b"[core]\n\tfsmonitor = touch /tmp/pwned-by-mmap\n#"
mm[0:size] = evil + b"#" * (size - len(evil) - 1) + b"\n"
open("step2", "w").close()
if sys.argv[1] == "stay":
    time.sleep(3600)
"""


@pytest.mark.parametrize("writer", ["stay", "exit"])
def test_a_write_through_a_shared_mapping_does_not_outlive_the_check(tmp_path: Path, writer: str) -> None:
    ws = _repo(tmp_path)

    async def main() -> tuple[str, ...]:
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                await sup.start_background(["python3", "-c", _MMAP_WRITER, writer])
                with anyio.fail_after(30):
                    while not (ws / "step1").exists():
                        await anyio.sleep(0.05)
                await anyio.sleep(0.3)  # past the check's 150 ms window for recent changes
                first = await sup.run(
                    "touch go; while [ ! -e step2 ]; do sleep 0.05; done; sleep 0.2", timeout_s=60
                )
                second = await sup.run("true", timeout_s=60)
                return (*first.notes, *second.notes)
        finally:
            await backend.close()

    notes = anyio.run(main)
    assert "fsmonitor" not in (ws / ".git/config").read_text(), notes
    assert any("reverted" in n for n in notes), notes


def test_a_fifo_in_place_of_the_git_config_is_reverted(tmp_path: Path) -> None:
    """Held: the operator's next git would block on a FIFO's open for ever; the placeholder the
    check reads for a special file is no valid config, which counts as code-running."""
    ws = _repo(tmp_path)
    original = (ws / ".git/config").read_text()

    async def main() -> CommandResult:
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                return await sup.run("rm .git/config && mkfifo .git/config", timeout_s=60)
        finally:
            await backend.close()

    result = anyio.run(main)
    assert result.exit_code == 0, result
    assert (ws / ".git/config").is_file() and (ws / ".git/config").read_text() == original, result.notes


@pytest.mark.slow  # 32 s in CI56: its file is handed out first (tests/conftest.py)
def test_many_planted_files_neither_stall_the_event_loop_nor_flood_the_notes(tmp_path: Path) -> None:
    """20,000 files under a new ``.claude/x`` held the event loop (every session of the process)
    for 15 s: the check ran inline because the previous one had been fast, and returned one note
    per file. A scan below a new directory now runs in a worker thread; notes stop at 20."""
    ws = tmp_path / "ws"
    ws.mkdir()
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    worst = 0.0

    async def main() -> CommandResult:
        nonlocal worst
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        done = anyio.Event()

        async def ticker() -> None:
            nonlocal worst
            last = time.monotonic()
            while not done.is_set():
                await anyio.sleep(0.01)
                now = time.monotonic()
                worst, last = max(worst, now - last - 0.01), now

        try:
            async with (
                Supervisor(backend, session_dir=tmp_path / "session") as sup,
                anyio.create_task_group() as tg,
            ):
                await sup.run("true", timeout_s=60)
                tg.start_soon(ticker)
                result = await sup.run(
                    "mkdir -p .claude/x && cd .claude/x && seq 1 6000 | xargs touch", timeout_s=300
                )
                done.set()
        finally:
            await backend.close()
        return result

    result = anyio.run(main)
    assert not any((ws / ".claude/x").iterdir()), "every planted file is reverted"
    assert len(result.notes) <= 21 and "more reverted" in result.notes[-1], result.notes[-1:]
    assert worst < 1.5, f"the event loop stalled for {worst:.1f} s"
