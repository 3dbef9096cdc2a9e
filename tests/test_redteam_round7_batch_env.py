"""Red team round 7: a command's environment ran code on the host, outside the bwrap sandbox.

A batch task's ``env`` (or Inspect's ``exec(env=...)``, or ``Supervisor.run(env=...)``) is the
command's environment. With one bwrap per command, the host started ``prlimit``, ``nsenter`` and
``bwrap`` with that very environment, and the dynamic loader obeys it before any namespace
exists: ``LD_PRELOAD=/path/evil.so`` (a file of the task's own workspace source) ran inside the
host-side bwrap as the sandbox uid with the host's mount and network namespaces -- it wrote into
the host's ``/var/tmp`` here; without the root caller's spawner the same library ran in
``prlimit`` and ``nsenter``, as root. The launchers now get a fixed environment of their own, and
the command's environment reaches only the command (``bwrap --clearenv --setenv ...``, read from
an fd: never on a command line other host users can list).

Each test failed before the fix (a hit written by ``/usr/bin/bwrap``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, ExecRequest, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.factory import create_backend
from shellrt.batch import Task, run_sync
from tests import _nonroot
from tests.conftest import require

_EVIL = r"""
#include <stdio.h>
#include <unistd.h>
#include <limits.h>
__attribute__((constructor)) static void hit(void) {
  char exe[PATH_MAX] = {0};
  readlink("/proc/self/exe", exe, sizeof exe - 1);
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%d-%d", HITS, (int)getuid(), (int)getpid());
  FILE *f = fopen(p, "w");
  if (f) { fprintf(f, "%s\n", exe); fclose(f); }
}
"""


@pytest.fixture
def preload() -> Iterator[tuple[Path, Path]]:
    """(a preload library, the directory it records its hits in) where the sandbox uid can reach both.

    Outside ``/tmp`` (bwrap's is private, so only a host-side process can load it from there
    and write its hit) and outside pytest's 0700 base directory.
    """
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("gcc") is not None, "gcc is needed to build the preload library")
    base = Path(tempfile.mkdtemp(prefix="shellrt-rt7-env-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        hits = base / "hits"
        hits.mkdir()
        hits.chmod(0o777)
        source = base / "evil.c"
        source.write_text(_EVIL)
        library = base / "evil.so"
        subprocess.run(
            ["gcc", "-shared", "-fPIC", f'-DHITS="{hits}"', "-o", str(library), str(source)], check=True
        )
        yield library, hits
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _host_hits(hits: Path) -> list[str]:
    """Hits written by a process that could write the host's directory: not the sandboxed command."""
    return [f"{p.name}: {p.read_text().strip()}" for p in hits.iterdir()]


@pytest.mark.parametrize("persistent", [False, True])
def test_task_env_never_reaches_the_host_side_launchers(
    tmp_path: Path, preload: tuple[Path, Path], persistent: bool
) -> None:
    library, hits = preload
    task = Task.model_validate(
        {
            "id": f"env-{persistent}",
            "sandbox": {"type": "bwrap", "persistent": persistent},
            "env": {"LD_PRELOAD": str(library), "GREETING": "hi there"},
            "commands": ['printf "%s|%s" "$GREETING" "$LD_PRELOAD"'],
        }
    )
    [result] = run_sync([task], artifacts_dir=tmp_path / "art")
    assert result.status == "ok", result
    # The command itself still gets every variable it was given (inside, the library loads
    # read-only: its hit cannot be written there).
    assert result.commands[0].preview == f"hi there|{library}"
    assert _host_hits(hits) == []


def test_without_the_spawner_the_env_never_reaches_root_launchers(
    tmp_path: Path, preload: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root caller whose spawner cannot start runs ``prlimit`` and ``nsenter`` as root per
    command: the library ran there as root (host files, host network)."""
    require(os.geteuid() == 0, "the spawner exists for a root caller only")
    library, hits = preload

    async def no_spawner(self: BwrapBackend) -> None:
        return None

    monkeypatch.setattr(BwrapBackend, "_start_spawner", no_spawner)
    task = Task.model_validate(
        {
            "id": "env-nsenter",
            "sandbox": {"type": "bwrap", "persistent": False},
            "env": {"LD_PRELOAD": str(library), "GREETING": "hi there"},
            "commands": ['printf "%s|%s" "$GREETING" "$(id -u)"'],
        }
    )
    [result] = run_sync([task], artifacts_dir=tmp_path / "art")
    assert result.status == "ok", result
    greeting, uid = (result.commands[0].preview or "|").split("|")
    pool = BwrapConfig()  # as root: the session's leased uid
    assert (
        greeting == "hi there" and pool.uid_pool_start <= int(uid) < pool.uid_pool_start + pool.uid_pool_size
    )
    assert _host_hits(hits) == []


def test_env_is_not_on_a_launcher_command_line(tmp_path: Path) -> None:
    """Values stay off ``/proc/<pid>/cmdline`` of the host-side launchers, which every host user
    may read (``ps``); the environment itself is readable only by the same uid, as before."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    secret = "s3cr3t-rt7-" + tmp_path.name

    async def main() -> list[int]:
        ws = tmp_path / "ws"
        ws.mkdir()
        backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            proc = await backend.exec(
                ExecRequest(argv=("sleep", "3"), cwd=str(ws), env={"PATH": "/usr/bin:/bin", "TOKEN": secret})
            )
            await anyio.sleep(1.0)
            listed = [pid for pid in _pids() if secret.encode() in _cmdline(pid)]
            await proc.wait()
            return listed
        finally:
            await backend.close()

    assert anyio.run(main) == []


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def test_the_attacks_hold_for_an_unprivileged_caller() -> None:
    """The tests above as uid 65534: no spawner there, the command's environment reached ``prlimit``
    and ``bwrap`` as the caller, outside the sandbox's namespaces."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests above are it)"
    )
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    here = "tests/test_redteam_round7_batch_env.py"
    args = [
        here,
        "--deselect",
        f"{here}::test_the_attacks_hold_for_an_unprivileged_caller",
        "--deselect",  # the spawner is a root caller's
        f"{here}::test_without_the_spawner_the_env_never_reaches_root_launchers",
    ]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary
