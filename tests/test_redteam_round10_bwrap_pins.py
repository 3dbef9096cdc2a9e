"""Red team round 10 (bwrap): round 9's pin race, with a swapper in C, closed.

Round 9 bound pins from ``O_PATH`` fds (``--bind-fd``), but bwrap 0.8 turns the fd back into
its path, mounts that path and only then compares the mount with the fd: a command running in
an older sandbox of the session (where ``d`` is no mount point) that swaps ``d`` with a symlink
and back fast enough still got a host directory bound writable now and then (0-1 of 40 with
round 9's Python loop). Here the loop is a compiled ``renameat2(RENAME_EXCHANGE)``; and a second
shape goes for a read-only bind below the workspace (``SandboxPolicy.read_only``), which bwrap
mounts after the masks: swapped, it put the host's masked ``~/.ssh``-like directory back over
its mask. Now every mount below a writable root is checked in the sandbox's own mount table
before the command runs (``sandbox._mountcheck``); a start whose mounts went astray runs nothing
and says why. Both tests failed before (the write or the read got through in most runs);
`test_the_attack_holds_for_an_unprivileged_caller` runs them again as uid 65534.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._mountcheck import REFUSED, checked_mounts, guard_argv
from sandbox.errors import SandboxError
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require

#: Run in the workspace (compiled on the host first): swap two names until the time is up.
_SWAPPER = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    time_t end = time(NULL) + atoi(argv[3]);
    unsigned long n = 0;
    while (time(NULL) < end)
        for (int i = 0; i < 4096; i++, n++)
            syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], 2 /* RENAME_EXCHANGE */);
    return 0;
}
"""

#: Made by the background command: the pin (or read-only bind) needed, and the symlink to swap in.
_SETUP = """
depth=$(pwd | tr -cd / | wc -c)
up=$(printf '../%.0s' $(seq "$depth"))
: > .env; mkdir -p d/ro; ln -f .env d/x
ln -sfn "$up${TARGET#/}" L
exec ./swapper d L 25
"""

#: Commands per race, per mode. On the code before the fix (914f09c^) the read-only shape failed per
#: command in 9 of 10 runs at 20 commands (6 of 6 at 40); in a session its rate did not grow with the
#: count (12: 4 of 5, 20: 6 of 10, 40: 4 of 6), so the session keeps 40. The pin shape won in none
#: of 7 runs there (2 at 40, 5 at 12).
COMMANDS = {False: 20, True: 40}
MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    """A workspace with the swapper, and a host directory every user may write (not below /tmp)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("cc") is not None, "a C compiler (apt-get install gcc)")
    base = Path(tempfile.mkdtemp(prefix="rt10-pins-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, victim = base / "ws", base / "victim"
    ws.mkdir(mode=0o755)
    victim.mkdir()
    victim.chmod(0o777)
    (base / "swapper.c").write_text(_SWAPPER)
    subprocess.run(["cc", "-O2", "-o", str(ws / "swapper"), str(base / "swapper.c")], check=True)
    (ws / "setup.sh").write_text(_SETUP)
    try:
        yield ws, victim
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def _race(
    policy: SandboxPolicy, persistent: bool, session: Path, target: Path, command: str
) -> list[str]:
    """The swapper in the background, then COMMANDS commands; their outputs (a refused start: REFUSED)."""
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    await backend.start()
    outputs: list[str] = []
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            await sup.start_background(f"TARGET={target} bash setup.sh")
            await anyio.sleep(1)  # waiting just for the link (made last) lost the session race 3 of 5
            for i in range(COMMANDS[persistent]):
                try:
                    # Each command links once more: the aliases change, so the session sandbox is
                    # made again (one bwrap per command works its pins out every time anyway).
                    result = await sup.run(f"{command}; ln -f .env d/y{i} 2>/dev/null; true", timeout_s=60)
                except SandboxError as exc:
                    outputs.append(f"{REFUSED} ({exc})")  # bwrap itself saw the swap: fail closed
                    continue
                assert result.output_path is not None
                outputs.append(result.output_path.read_text())
    finally:
        await backend.close()
    return outputs


@pytest.mark.slow  # 10-25 s in CI: handed out first (tests/conftest.py)
@pytest.mark.parametrize("persistent", MODES)
def test_a_swapped_pin_never_makes_a_host_directory_writable(
    places: tuple[Path, Path], tmp_path: Path, persistent: bool
) -> None:
    ws, victim = places
    policy = SandboxPolicy(workspace=ws, read_denied=(ws / ".env",))
    command = f"echo pwned > {victim}/f$RANDOM 2>/dev/null"
    outputs = anyio.run(_race, policy, persistent, tmp_path / "s", victim, command)
    # No command wrote there. bwrap itself may have made an empty mount point of a mask there (it
    # creates a missing destination before it mounts; the start was then refused): see round 10.
    written = sorted(p.name for p in victim.iterdir() if p.name.startswith("f") or p.stat().st_size)
    assert written == [], written
    assert len(outputs) == COMMANDS[persistent]
    ran = [o for o in outputs if REFUSED not in o]
    # Refusals are fail-closed, not the point; but a run where none ran must owe it to the swapper:
    # with it on a core of its own the whole time, every start's search of the workspace saw it
    # change 3 times in a row and refused (CI113: 0 of 20 ran; 15-20 of 20 usually).
    swapped = all("changed while" in o for o in outputs)
    assert ran or persistent or swapped, f"no command ran at all: {[o[:300] for o in outputs][:3]}"


@pytest.mark.slow  # 10-25 s in CI: handed out first (tests/conftest.py)
@pytest.mark.parametrize("persistent", MODES)
def test_a_swapped_read_only_bind_never_shows_a_masked_directory(
    places: tuple[Path, Path], tmp_path: Path, persistent: bool
) -> None:
    ws, _victim = places
    hidden = ws.parent / "hidden"
    (hidden / "ro").mkdir(parents=True)
    (hidden / "ro" / "id_rsa").write_text("rt10-masked-secret\n")
    for path in (hidden, hidden / "ro"):
        path.chmod(0o755)
    (hidden / "ro" / "id_rsa").chmod(0o644)
    # ``d/ro`` is shown read-only once the background command made it; ``d`` swapped for a link to
    # ``hidden`` bound the host's ``hidden/ro`` over its own mask.
    policy = SandboxPolicy(
        workspace=ws, read_denied=(ws / ".env", hidden / "ro"), read_only=(ws / "d" / "ro",)
    )
    command = f"cat {hidden}/ro/id_rsa 2>/dev/null"
    outputs = anyio.run(_race, policy, persistent, tmp_path / "s", hidden, command)
    assert len(outputs) == COMMANDS[persistent]
    assert not [o for o in outputs if "rt10-masked-secret" in o], outputs


def test_the_attack_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    names = [
        "test_a_swapped_pin_never_makes_a_host_directory_writable",
        "test_a_swapped_read_only_bind_never_shows_a_masked_directory",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}" for name in names],
        collect_args=[f"{__file__}::{name}" for name in names],
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary


def test_the_guard_counts_each_mount_asked_for() -> None:
    """Two mounts asked at one name need two there (a swap can make two destinations one name);
    bwrap's flags are read from the program on, past nsenter's own ``--``."""
    argv = ["nsenter", "--mount=/proc/1/ns/mnt", "--", "/usr/bin/bwrap", "--bind", "/w", "/w"]
    argv += ["--bind-fd", "7", "/w/d", "--perms", "0700", "--tmpfs", "/w/a b", "--", "/w/x"]
    start = argv.index("/usr/bin/bwrap")
    assert checked_mounts(argv[start:], [Path("/w")]) == ["/w/d", "/w/a\\040b"]
    points = Counter(line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines())
    mounted = min(p for p, n in points.items() if n == 1)  # a mount point with one mount
    ran = subprocess.run([*guard_argv([mounted]), "echo", "ran"], capture_output=True, text=True, check=False)
    twice = subprocess.run([*guard_argv([mounted, mounted]), "echo", "ran"], capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (0, "ran\n"), ran
    assert twice.returncode == 125 and REFUSED in twice.stderr and not twice.stdout, twice
