"""Round 39 (locks2), the non-root caller: a read-denied file it replaced (an editor's atomic save)
was readable at its denied name by every later command of its bwrap session
(`test_redteam_round39_locks2_renamedmask.py` says why). Run by uid 65534; a skip is a failure
here (``CI=true``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests import _nonroot
from tests.conftest import require
from tests.test_sandbox_escape_nonroot import _prerequisites

pytestmark = [pytest.mark.bwrap]

_PROBE = """
import sys, anyio
from pathlib import Path
from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.test_redteam_round39_locks2_renamedmask import replace
ws, session, denied, how = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]

async def main():
    backend = create_backend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws, read_denied=[denied]))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            first = await sup.run(f"cat {denied}; echo end", timeout_s=60)
            print("first", first.preview.replace(chr(10), " | "), flush=True)
            replace(denied, how)
            for _ in range(6):
                later = await sup.run(f"cat {denied}; echo end", timeout_s=60)
                print("later", later.preview.replace(chr(10), " | "), flush=True)
                await anyio.sleep(0.05)
    finally:
        await backend.close()

anyio.run(main)
"""


@pytest.mark.parametrize("how", ["atomic", "rename"])
def test_a_replaced_denied_file_stays_unreadable_for_a_non_root_caller(how: str) -> None:
    """Failed before: the later commands printed the new content."""
    require(os.geteuid() == 0, "preparing the run as uid 65534 needs root")
    _prerequisites()
    base = Path(tempfile.mkdtemp(prefix="rt39-locks2-nr-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, session, d = base / "ws", base / "session", base / "d"
    for place in (ws, session, d):
        place.mkdir()
        os.chown(place, _nonroot.NOBODY, _nonroot.NOBODY)
    denied = d / "secret"
    denied.write_text("old\n")
    os.chown(denied, _nonroot.NOBODY, _nonroot.NOBODY)
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            proc = subprocess.run(
                run.argv("-c", _PROBE, str(ws), str(session), str(denied), how),
                cwd=run.repo,
                env=run.env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=240,
                check=False,
            )
        out = proc.stdout
        later = [line for line in out.splitlines() if line.startswith("later ")]
        assert proc.returncode == 0 and len(later) == 6 and all("end" in line for line in later), out
        assert "old" not in out.split("later", 1)[0].removeprefix("first"), out
        assert not any("r39-locks2-new-secret" in line for line in later), out
    finally:
        shutil.rmtree(base, ignore_errors=True)
