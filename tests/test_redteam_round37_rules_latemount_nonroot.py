"""Red team round 37 (rules), the non-root caller: a mount the operator makes after the session
started. A non-root caller's bwrap runs in the host's mount namespace; bwrap makes its mounts slaves
of the host's, so a bind mount of the workspace made mid-session showed up in the next command (one
bwrap per command) or in the session sandbox once it was replaced (a denied path appeared), and the
mask derived at the start
(round 36: other mounts of a denied file, found when the session started) did not cover the new
name: ``cat /alias/secret.txt /alias/keys/id`` printed what ``Read(./secret.txt)`` and
``Read(./keys/**)`` hide. Run by uid 65534 (the
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
ws, alias, session, persistent = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "1"
policy = deny_policy(ws, "Read(./secret.txt)", "Read(./keys/**)", "Read(./later.txt)")

async def main():
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            first = await sup.run(f"cd {ws}; cat secret.txt; echo one", timeout_s=60)
            print(first.output_path.read_text().replace(chr(10), " | "), flush=True)
            (session / "ready").write_text("")
            while not (session / "mounted").exists():
                time.sleep(0.05)
            second = await sup.run(f"cd {ws}; cat {alias}/secret.txt {alias}/keys/id; ls {alias}; echo two", timeout_s=60)
            print(second.output_path.read_text().replace(chr(10), " | "), flush=True)
    finally:
        await backend.close()

anyio.run(main)
"""


@pytest.mark.parametrize("persistent", ["0", "1"], ids=["per-command", "session"])
def test_a_mount_made_mid_session_shows_no_denied_file_to_a_non_root_caller(persistent: str) -> None:
    require(os.geteuid() == 0, "making the bind mount needs root")
    _prerequisites()
    base = Path(tempfile.mkdtemp(prefix="rt37-latemount-nr-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, alias, session = base / "ws", base / "alias", base / "session"
    for d in (ws, alias, session):
        d.mkdir()
    for d in (ws, session):
        os.chown(d, _nonroot.NOBODY, _nonroot.NOBODY)
    (ws / "keys").mkdir()
    (ws / "secret.txt").write_text("TOPSECRET\n")
    (ws / "keys" / "id").write_text("KEYDATA\n")
    for path in (ws / "keys", ws / "secret.txt", ws / "keys" / "id"):
        os.chown(path, _nonroot.NOBODY, _nonroot.NOBODY)
    mounted = False
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            proc = subprocess.Popen(
                run.argv("-c", _PROBE, str(ws), str(alias), str(session), persistent),
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
                subprocess.run(["mount", "--bind", str(ws), str(alias)], check=True)
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
        assert "TOPSECRET" not in out and "KEYDATA" not in out and "LATER" not in out, out
    finally:
        if mounted:
            subprocess.run(["umount", str(alias)], check=False)
        shutil.rmtree(base, ignore_errors=True)
