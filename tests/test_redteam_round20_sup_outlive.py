"""Red team, round 20: a tree that hides every way at once dies with its timeout, TaskStop, close.

One program does all of it (held on every backend when probed; kept so it stays held): double
fork + ``setsid``, SIGHUP/SIGTERM/SIGINT ignored, its environment and argv overwritten in memory
(no ``SHELLRT_RUN_ID`` left in ``/proc/<pid>/environ``) and its name changed to ``kworker/0:1``,
``PR_SET_CHILD_SUBREAPER`` with children below it: one parked in ``vfork`` whose child stopped
itself, one ``PTRACE_TRACEME`` and stopped, one in its own process group and stopped. Survivors
are found by the inode of the program's ``/proc/<pid>/exe``, which none of that changes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, LocalConfig, SandboxConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require

_HOSTILE_C = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
extern char **environ;
int main(int argc, char **argv) {
  signal(SIGHUP, SIG_IGN); signal(SIGTERM, SIG_IGN); signal(SIGINT, SIG_IGN);
  if (fork() != 0) return 0;
  setsid();
  if (fork() != 0) _exit(0);
  for (char **e = environ; *e; e++) memset(*e, 'x', strlen(*e));
  for (int i = 0; i < argc; i++) memset(argv[i], 0, strlen(argv[i]));
  prctl(PR_SET_NAME, "kworker/0:1", 0, 0, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  if (fork() == 0) { ptrace(PTRACE_TRACEME, 0, 0, 0); raise(SIGSTOP); for (;;) pause(); }
  if (fork() == 0) { if (vfork() == 0) { raise(SIGSTOP); _exit(0); } for (;;) pause(); }
  if (fork() == 0) { setpgid(0, 0); raise(SIGSTOP); for (;;) pause(); }
  for (;;) pause();
}
"""


def _build(directory: Path) -> Path:
    require(shutil.which("cc") is not None, "a C compiler is needed to build the hostile program")
    source, program = directory / "h.c", directory / "h"
    source.write_text(_HOSTILE_C)
    subprocess.run(["cc", "-O1", "-static", "-o", str(program), str(source)], check=True, timeout=60)
    program.chmod(0o755)
    return program


def _alive(identity: tuple[int, int]) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                st = os.stat(f"/proc/{entry}/exe")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == identity:
                found.append(int(entry))
    return found


async def _settled(identity: tuple[int, int]) -> list[int]:
    """The program's processes left, given a loaded machine up to 5 s to finish killing them."""
    with anyio.move_on_after(5):
        while _alive(identity):
            await anyio.sleep(0.05)
    return _alive(identity)


@pytest.mark.parametrize(
    "config",
    [LocalConfig(), BwrapConfig(persistent=True), BwrapConfig(persistent=False)],
    ids=["local", "bwrap-session", "bwrap-oneshot"],
)
def test_the_hiding_tree_dies_with_timeout_taskstop_and_close(tmp_path: Path, config: SandboxConfig) -> None:
    if isinstance(config, BwrapConfig):
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    tmp_path.chmod(0o755)
    ws.chmod(0o777)  # a root caller's bwrap commands run as a leased uid
    program = _build(ws)
    identity = (program.stat().st_dev, program.stat().st_ino)
    left: dict[str, list[int]] = {}

    async def main() -> None:
        backend = create_backend(config, SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                result = await sup.run("./h; sleep 30", timeout_s=1.5)
                assert result.timed_out, result
                left["timeout"] = await _settled(identity)
                task = await sup.start_background("./h; sleep 30")
                with anyio.move_on_after(10):
                    while len(_alive(identity)) < 5:  # it hid itself: 4 below the subreaper, 1 vfork child
                        await anyio.sleep(0.05)
                assert len(_alive(identity)) >= 4, "the program did not start as intended"
                await sup.tasks.stop(task.id)
                left["taskstop"] = await _settled(identity)
                await sup.start_background("./h; sleep 30")
                with anyio.move_on_after(10):
                    while len(_alive(identity)) < 4:
                        await anyio.sleep(0.05)
        finally:
            await backend.close()
        left["close"] = await _settled(identity)

    try:
        anyio.run(main)
    finally:
        for pid in _alive(identity):  # never leave one behind, whatever failed
            try:
                os.kill(pid, 9)
            except OSError:
                pass
    assert left == {"timeout": [], "taskstop": [], "close": []}, left
