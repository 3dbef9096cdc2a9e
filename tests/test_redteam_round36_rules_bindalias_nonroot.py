"""Red team round 36 (rules), the non-root caller: a read-denied file shown again by another host
mount, compiled and run by uid 65534 (the mounts are the operator's, made here as root; a non-root
caller cannot make them but meets them). A skip is a failure here (``CI=true``)."""

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
ws, alias, session = (Path(a) for a in sys.argv[1:4])
policy = deny_policy(ws, "Read(./secret.txt)")
for persistent in (False, True):
    out = anyio.run(run_in, create_backend(BwrapConfig(persistent=persistent), policy), ws,
                    session / str(persistent), f"cat {alias}/secret.txt; echo done")
    print(persistent, out.replace(chr(10), " | "))
"""


def test_a_non_root_caller_reads_no_denied_file_through_another_mount() -> None:
    require(os.geteuid() == 0, "making the bind mount needs root")
    _prerequisites()
    base = Path(tempfile.mkdtemp(prefix="rt36-bindalias-nr-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, alias, session = base / "ws", base / "alias", base / "session"
    for d in (ws, alias, session):
        d.mkdir()
    for d in (ws, session):
        os.chown(d, _nonroot.NOBODY, _nonroot.NOBODY)
    (ws / "secret.txt").write_text("TOPSECRET\n")
    os.chown(ws / "secret.txt", _nonroot.NOBODY, _nonroot.NOBODY)
    subprocess.run(["mount", "--bind", str(ws), str(alias)], check=True)
    try:
        with _nonroot.shared_run(_nonroot.with_requirements(_nonroot.loaded_distributions())) as run:
            proc = subprocess.run(
                run.argv("-c", _PROBE, str(ws), str(alias), str(session)),
                cwd=run.repo,
                env=run.env(),
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and out.count("done") == 2, out
        assert "TOPSECRET" not in out, out
    finally:
        subprocess.run(["umount", str(alias)], check=False)
        shutil.rmtree(base, ignore_errors=True)
