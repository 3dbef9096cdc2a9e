"""Red team round 38 (rules), the non-root caller: an ``Edit(...)`` deny and a mount the operator
makes after the session started (round 37's "Left"). A non-root caller's bwrap starts in the host's
mount namespace, so a bind mount of a protected directory made mid-session inside the workspace
(``mount --bind ws/conf ws/mnt``) showed the protected file writable at ``mnt/app.ini`` in the next
command (one bwrap per command) or in the session sandbox once it was replaced (a read-denied
path appeared), whose write denies were the start's:
``echo pwned > mnt/app.ini`` rewrote what ``Edit(./conf/app.ini)`` protects. Run by uid 65534 (the
mount is the operator's, made here as root). A skip is a failure here (``CI=true``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests import _nonroot
from tests.conftest import require
from tests.test_sandbox_escape_nonroot import _prerequisites

pytestmark = [pytest.mark.bwrap]

_PROBE = """
import sys, time, anyio
from pathlib import Path
from sandbox import BwrapConfig
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests._rt11_rules import deny_policy
ws, session, persistent = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"
policy = deny_policy(ws, "Edit(./conf/app.ini)", "Read(./later.txt)")

async def main():
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            first = await sup.run(f"cd {ws}; echo x > conf/app.ini; echo one", timeout_s=60)
            print(first.output_path.read_text().replace(chr(10), " | "), flush=True)
            (session / "ready").write_text("")
            while not (session / "mounted").exists():
                time.sleep(0.05)
            second = await sup.run(f"cd {ws}; echo pwned > mnt/app.ini; echo two", timeout_s=60)
            print(second.output_path.read_text().replace(chr(10), " | "), flush=True)
    finally:
        await backend.close()

anyio.run(main)
"""


@pytest.mark.parametrize("persistent", ["0", "1"], ids=["per-command", "session"])
def test_a_mount_made_mid_session_writes_no_protected_file_for_a_non_root_caller(persistent: str) -> None:
    require(os.geteuid() == 0, "making the bind mount needs root")
    _prerequisites()
    base = Path(tempfile.mkdtemp(prefix="rt38-latewrite-nr-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, session = base / "ws", base / "session"
    for d in (ws, session, ws / "conf", ws / "mnt"):
        d.mkdir()
        os.chown(d, _nonroot.NOBODY, _nonroot.NOBODY)
    app = ws / "conf" / "app.ini"
    app.write_text("ORIGINAL\n")
    os.chown(app, _nonroot.NOBODY, _nonroot.NOBODY)
    mounted = False
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            proc = subprocess.Popen(
                run.argv("-c", _PROBE, str(ws), str(session), persistent),
                cwd=run.repo,
                env=run.env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            deadline = time.monotonic() + 120
            while not (session / "ready").exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if (session / "ready").exists():
                subprocess.run(["mount", "--bind", str(ws / "conf"), str(ws / "mnt")], check=True)
                mounted = True
                # A denied path appears too: the session sandbox is replaced, and its new one starts
                # in the host's namespace as it is now, the mount included.
                (ws / "later.txt").write_text("LATER\n")
                os.chown(ws / "later.txt", _nonroot.NOBODY, _nonroot.NOBODY)
                (session / "mounted").write_text("")
            try:
                out, _ = proc.communicate(timeout=180)
            finally:
                proc.kill()
        assert proc.returncode == 0 and "one" in out and "two" in out, out
        assert app.read_text() == "ORIGINAL\n", (app.read_text(), out)
    finally:
        if mounted:
            subprocess.run(["umount", str(ws / "mnt")], check=False)
        shutil.rmtree(base, ignore_errors=True)
