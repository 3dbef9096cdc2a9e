"""Run a test script where 1.2.3.4 is a local address: a public host, without the network.

Public addresses are judged differently from private ones (the proxy's web-ports-only rule, a
tunnel's checked opening, the host's own address). A user and network namespace of its own, with
1.2.3.4 on its loopback, gives a test a public address that is still this machine: nothing leaves
it. The script gets the repository root and a directory for the proxy's socket as its arguments.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PUBLIC_ADDRESS = "1.2.3.4"


def run_with_public_address(tmp_path: Path, name: str, script_text: str) -> subprocess.CompletedProcess[str]:
    """Run ``script_text`` (written to ``tmp_path/name``) with :data:`PUBLIC_ADDRESS` local; its
    return code is asserted to be 0 (its stderr shown otherwise)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("needs unshare and ip (util-linux, iproute2) for a network namespace of its own")
    script = tmp_path / name
    script.write_text(script_text)
    run = subprocess.run(
        ["unshare", "-rn", "sh", "-c",
         f'ip link set lo up && ip addr add {PUBLIC_ADDRESS}/32 dev lo && exec "$0" "$@"',
         sys.executable, str(script), str(REPO), str(tmp_path / "px")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run
