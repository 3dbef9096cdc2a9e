"""Red team round 37 (rules), the non-root caller: a workspace that is an overlay, and a read-denied
file in it shown again at its lower layer's host path. Compiled and run by uid 65534 (the overlay is
the operator's, mounted here as root). A skip is a failure here (``CI=true``)."""

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
from sandbox import BwrapConfig
from sandbox.factory import create_backend
from tests._rt11_rules import deny_policy, run_in
ws, lower, session = (Path(a) for a in sys.argv[1:4])
policy = deny_policy(ws, "Read(./secret.txt)", "Read(./keys/**)")
for persistent in (False, True):
    out = anyio.run(run_in, create_backend(BwrapConfig(persistent=persistent), policy), ws,
                    session / str(persistent), f"cat secret.txt {lower}/secret.txt {lower}/keys/id; echo done")
    print(persistent, out.replace(chr(10), " | "))
"""


def test_a_non_root_caller_reads_no_denied_file_through_its_overlay_workspace_layer() -> None:
    require(os.geteuid() == 0, "mounting the overlay needs root")
    _prerequisites()
    base = Path(tempfile.mkdtemp(prefix="rt37-overlay-nr-", dir="/var/tmp"))
    base.chmod(0o755)
    lower, upper, work, ws, session = (base / n for n in ("lower", "upper", "work", "ws", "session"))
    for d in (lower / "keys", upper, work, ws, session):
        d.mkdir(parents=True)
    (lower / "secret.txt").write_text("TOPSECRET\n")
    (lower / "keys" / "id").write_text("KEYDATA\n")
    for d in (lower, lower / "keys", lower / "secret.txt", lower / "keys" / "id", upper, session):
        os.chown(d, _nonroot.NOBODY, _nonroot.NOBODY)
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(ws)], check=True)
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            proc = subprocess.run(
                run.argv("-c", _PROBE, str(ws), str(lower), str(session)),
                cwd=run.repo,
                env=run.env(),
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and out.count("done") == 2, out
        assert "TOPSECRET" not in out and "KEYDATA" not in out, out
    finally:
        subprocess.run(["umount", str(ws)], check=False)
        shutil.rmtree(base, ignore_errors=True)
