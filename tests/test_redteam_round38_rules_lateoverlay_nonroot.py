"""Red team round 38 (rules), the non-root caller: an overlay the operator mounts after the session
started, with the workspace its lower layer. A non-root caller's bwrap starts in the host's mount
namespace and reads the mount table again at each start (round 37), but only looked for bind mounts
and for the layers of an overlay holding a denied path, not for an overlay showing a denied path's
layer: ``cat <merged>/secret.txt <merged>/keys/id`` printed what ``Read(./secret.txt)`` and
``Read(./keys/**)`` hide, in the next command (one bwrap per command) or in the session sandbox
once replaced (a read-denied path appeared). Run by uid 65534 (the mount is the operator's, made
here as root). A skip is a failure here (``CI=true``)."""

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
ws, merged, session, persistent = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "1"
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
            second = await sup.run(f"cat {merged}/secret.txt {merged}/keys/id; ls {merged}; echo two", timeout_s=60)
            print(second.output_path.read_text().replace(chr(10), " | "), flush=True)
    finally:
        await backend.close()

anyio.run(main)
"""


@pytest.mark.parametrize("persistent", ["0", "1"], ids=["per-command", "session"])
def test_an_overlay_made_mid_session_shows_no_denied_file_to_a_non_root_caller(persistent: str) -> None:
    require(os.geteuid() == 0, "making the bind mount needs root")
    _prerequisites()
    base = Path(tempfile.mkdtemp(prefix="rt38-lateov-nr-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, session, merged, upper, work = (base / n for n in ("ws", "session", "merged", "upper", "work"))
    for d in (ws, session, ws / "keys", merged, upper, work):
        d.mkdir()
    for d in (ws, session, ws / "keys"):
        os.chown(d, _nonroot.NOBODY, _nonroot.NOBODY)
    for d in (merged, upper, work):
        d.chmod(0o755)
    for path, text in ((ws / "secret.txt", "TOPSECRET\n"), (ws / "keys" / "id", "KEYDATA\n")):
        path.write_text(text)
        os.chown(path, _nonroot.NOBODY, _nonroot.NOBODY)
    mounted = False
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            proc = subprocess.Popen(
                run.argv("-c", _PROBE, str(ws), str(merged), str(session), persistent),
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
                options = f"lowerdir={ws},upperdir={upper},workdir={work}"
                subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(merged)], check=True)
                mounted = True
                # A denied path appears too: the session sandbox is replaced, and its new one starts
                # in the host's namespace as it is now, the overlay included.
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
            subprocess.run(["umount", str(merged)], check=False)
        shutil.rmtree(base, ignore_errors=True)
