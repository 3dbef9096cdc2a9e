"""Round 40 (tenants): two shellrt processes of one non-root caller, side by side, each with its own
``TMPDIR``. Each bwrap sandbox hides /tmp and *its own process's* temp dir (`sandbox.bwrap`), where
every session keeps its private /tmp, its state and its proxy; another process whose ``TMPDIR`` lies
elsewhere kept all of that in the read-only host view, and a non-root caller's sessions share one
uid (a 0700 directory keeps no command of the same uid out). Tenant A's command read tenant B's
command's /tmp. Run as uid 65534 (the attack needs the shared uid; a root caller's leased uids cannot
enter root's 0700 holders); a skip is a failure here (``CI=true``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import _nonroot
from tests.conftest import require
from tests.test_sandbox_escape_nonroot import _prerequisites

pytestmark = [pytest.mark.bwrap]

#: Tenant B: a bwrap session whose command leaves a secret in its /tmp, kept alive until stdin ends.
_TENANT_B = """
import sys, anyio
from pathlib import Path
from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
ws, session, persistent = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"

async def main():
    backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            done = await sup.run("echo r40-tenant-b-secret > /tmp/secret && echo written", timeout_s=60)
            print("b", done.preview.strip(), flush=True)
            await anyio.to_thread.run_sync(sys.stdin.read)
    finally:
        await backend.close()

anyio.run(main)
"""

#: Tenant A: one command that looks for B's secret below B's temp dir.
_TENANT_A = """
import sys, anyio
from pathlib import Path
from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
ws, session, other, persistent = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"

async def main():
    backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            seen = await sup.run(f"ls -A {other}; grep -rs r40-tenant-b {other}; echo end", timeout_s=60)
            print("a", seen.preview.replace(chr(10), " | "), flush=True)
    finally:
        await backend.close()

anyio.run(main)
"""


def _owned(*places: Path, uid: int) -> None:
    for place in places:
        place.mkdir()
        os.chown(place, uid, uid)


def _side_by_side(base: Path, flag: str, argv: Callable[..., list[str]], env: dict[str, str], cwd: Path) -> str:
    """Tenant B started with ``TMPDIR`` at ``base/b-tmp`` and its secret written; tenant A's
    command run meanwhile (default ``TMPDIR``): A's output."""
    b_tmp = base / "b-tmp"
    tenant_b = subprocess.Popen(
        argv("-c", _TENANT_B, str(base / "ws-b"), str(base / "session-b"), flag),
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
        assert ready.strip() == "b written", ready + (tenant_b.stdout.read() if tenant_b.poll() else "")
        proc = subprocess.run(
            argv("-c", _TENANT_A, str(base / "ws-a"), str(base / "session-a"), str(b_tmp), flag),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=240,
            check=False,
        )
    finally:
        tenant_b.communicate("", timeout=120)
    assert proc.returncode == 0 and "end" in proc.stdout, proc.stdout
    return proc.stdout


def _made(uid: int) -> Path:
    base = Path(tempfile.mkdtemp(prefix="rt40-tenants-", dir="/var/tmp"))
    base.chmod(0o755)
    _owned(base / "b-tmp", base / "ws-a", base / "ws-b", base / "session-a", base / "session-b", uid=uid)
    return base


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_another_processes_temp_dir_is_hidden_from_a_non_root_callers_commands(persistent: bool) -> None:
    """Failed before (2 of 2): A's ``grep`` printed B's secret from B's session /tmp below B's ``TMPDIR``."""
    _prerequisites()
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = _made(_nonroot.NOBODY)
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            out = _side_by_side(base, "1" if persistent else "0", run.argv, run.env(), run.repo)
        assert "r40-tenant-b-secret" not in out, out
        assert "shellrt-" not in out, out  # not even B's holders' names
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_another_processes_temp_dir_holds_nothing_of_a_root_callers_sessions(persistent: bool) -> None:
    """A root caller: the leased uid never entered root's 0700 holders (held before), but listed their
    names below B's ``TMPDIR``; now nothing of B's sessions is there at all."""
    require(os.geteuid() == 0, "the root caller's case runs as root")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = _made(0)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("TMPDIR", None)
    try:
        out = _side_by_side(base, "1" if persistent else "0", lambda *a: [sys.executable, *a], env, root)
        assert "r40-tenant-b-secret" not in out, out
        assert "shellrt-" not in out, out
    finally:
        shutil.rmtree(base, ignore_errors=True)
