"""Round 40 (tenants2): every shellrt-owned temporary directory of one process, in the view of
another process's bwrap commands. Round 40 (tenants) moved a bwrap session's own holders below /tmp;
`shellrt run` spools, batch task directories (workspace copies with their hidden tests), batch
artifacts, the local backend's state dir, Inspect sample dirs and the docker backend's host
directory were still made below their own process's ``TMPDIR``, which no other process's sandbox
hides. Tenant B (``TMPDIR`` outside /tmp) makes each one through the code that makes it and puts a
secret in it; tenant A's bwrap command (default ``TMPDIR``) looks below B's ``TMPDIR``. Two real
processes, as uid 65534 (a shared uid: 0700 keeps no command out) and as root (leased uids: the
names were listed); a skip is a failure here (``CI=true``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import sandbox.docker  # noqa: F401  (tenant B imports it: uid 65534's packages must include docker's)
from tests import _nonroot
from tests.conftest import require
from tests.test_redteam_round40_tenants_othertemp import _made, _owned
from tests.test_sandbox_escape_nonroot import _prerequisites

pytestmark = [pytest.mark.bwrap]

#: Tenant B: makes one kind of shellrt-owned directory (argv[2]) below its ``TMPDIR`` and puts the
#: secret in it, says so, and holds it until stdin ends.
_TENANT_B = r"""
import os, sys, anyio
from pathlib import Path
base, kind = Path(sys.argv[1]), sys.argv[2]
SECRET = "r40-tenants2-" + "secret"
(base / "src").mkdir(exist_ok=True)
(base / "src" / "hidden_test.py").write_text(f"assert answer == '{SECRET}'\n")

def hold(path):
    (Path(path) / "spool.txt").write_text(SECRET)
    print("b ready", flush=True)
    sys.stdin.read()

if kind == "run-spool":  # what `shellrt run` (both paths) makes for its session
    from sandbox._scratch import OwnedDir
    owned = OwnedDir("shellrt-run-"); hold(owned.path); owned.remove()
elif kind == "artifacts":  # a batch run's default artifacts directory
    from shellrt.batch.local import _default_artifacts
    path = _default_artifacts(); hold(path)
    import shutil; shutil.rmtree(path)
elif kind == "inspect":  # an Inspect sample's directory, its workspace a copy of the source
    from shellrt.integrations._inspect_leftovers import SampleDir
    sample = SampleDir(); sample.prepare(base / "src"); hold(sample.path); sample.remove()
elif kind == "docker-dir":  # the docker backend's workspace copy / mask directory
    from sandbox.docker._hostdir import PrivateHostDir
    owned = PrivateHostDir("shellrt-docker-"); hold(owned.path); owned.remove()
elif kind == "local-state":  # the local backend's state dir
    from sandbox import LocalConfig, SandboxPolicy
    from sandbox.factory import create_backend
    async def main():
        backend = create_backend(LocalConfig(), SandboxPolicy(workspace=base / "ws-b"))
        await backend.start()
        try:
            await anyio.to_thread.run_sync(hold, backend._runner.state_dir)
        finally:
            await backend.close()
    anyio.run(main)
elif kind == "batch":  # a batch task's directory: the workspace copy, hidden tests included
    from shellrt.batch.local import LocalRunner
    from shellrt.batch.tasks import Task
    flags = base / "flags"
    task = Task(id="t1", workspace=base / "src", commands=[
        f"touch {flags}/ready; while [ ! -e {flags}/done ]; do sleep 0.05; done"], timeout=120)
    async def main():
        runner = LocalRunner(concurrency=1, prestart=0, artifacts_dir=base / "artifacts")
        async def tasks():
            yield task
        async with runner.open(tasks()) as results:
            while not (flags / "ready").exists():
                await anyio.sleep(0.05)
            print("b ready", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.read)
            (flags / "done").touch()
            async for result in results:
                pass
    anyio.run(main)
"""

#: Tenant A: one bwrap session command that looks below B's temp dir.
_TENANT_A = """
import sys, anyio
from pathlib import Path
from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
ws, session, other = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

async def main():
    backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            seen = await sup.run(f"ls -A {other}; grep -rs r40-tenants2 {other}; echo end", timeout_s=60)
            print("a", seen.preview.replace(chr(10), " | "), flush=True)
    finally:
        await backend.close()

anyio.run(main)
"""

KINDS = ["run-spool", "batch", "artifacts", "local-state", "inspect", "docker-dir"]


def _side_by_side(base: Path, kind: str, argv: Callable[..., list[str]], env: dict[str, str], cwd: Path) -> str:
    b_tmp = base / "b-tmp"
    tenant_b = subprocess.Popen(
        argv("-c", _TENANT_B, str(base), kind),
        cwd=cwd,
        env={**env, "TMPDIR": str(b_tmp)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert tenant_b.stdout is not None
        ready = tenant_b.stdout.readline()
        if ready.strip() != "b ready":
            rest, _ = tenant_b.communicate("", timeout=120)
            raise AssertionError(ready + rest)
        proc = subprocess.run(
            argv("-c", _TENANT_A, str(base / "ws-a"), str(base / "session-a"), str(b_tmp)),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=240,
            check=False,
        )
    finally:
        rest, _ = tenant_b.communicate("", timeout=120)
    assert tenant_b.returncode == 0, rest
    assert proc.returncode == 0 and "end" in proc.stdout, proc.stdout
    return proc.stdout


def _setup(uid: int) -> Path:
    base = _made(uid)
    _owned(base / "flags", base / "src", base / "artifacts", uid=uid)
    return base


@pytest.mark.parametrize("kind", KINDS)
def test_another_processes_owned_dirs_are_hidden_from_a_non_root_callers_commands(kind: str) -> None:
    """Failed before (6 of 6): A's ``grep`` printed B's secret (and its hidden test) below B's ``TMPDIR``."""
    _prerequisites()
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = _setup(_nonroot.NOBODY)
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            out = _side_by_side(base, kind, run.argv, run.env(), run.repo)
        assert "r40-tenants2-secret" not in out, out
        assert "shellrt-" not in out, out
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("kind", KINDS)
def test_another_processes_temp_dir_holds_no_owned_dir_of_a_root_caller(kind: str) -> None:
    """A root caller: the leased uid never entered root's 0700 directories, but listed their names
    below B's ``TMPDIR`` (6 of 6 failed before); now nothing of B's is there at all."""
    require(os.geteuid() == 0, "the root caller's case runs as root")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = _setup(0)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("TMPDIR", None)
    try:
        out = _side_by_side(base, kind, lambda *a: [sys.executable, *a], env, root)
        assert "r40-tenants2-secret" not in out, out
        assert "shellrt-" not in out, out
    finally:
        shutil.rmtree(base, ignore_errors=True)
