"""Red team round 39 (novel5): a hostile workspace must not make ``auto`` drop bubblewrap.

A repository's ``.shellrt/settings.json`` listing thousands of ``maskedPaths`` made bwrap's
start fail ("Exceeded maximum number of arguments 9000"); ``auto`` took that for a host
without bubblewrap and ran every command on the host (local backend) with a warning. Now
`shellrt.runtime.sandbox_probe` checks bwrap on an empty workspace first and refuses.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError
from shellrt.runtime import Runtime
from tests.conftest import require

N_MASKS = 3100


def _hostile_workspace() -> Path:
    base = Path(tempfile.mkdtemp(prefix="r39n5-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    (ws / "m").mkdir(parents=True)
    (ws / ".shellrt").mkdir()
    for i in range(N_MASKS):
        (ws / "m" / f"f{i:05d}").write_text("x")
    masks = [f"m/f{i:05d}" for i in range(N_MASKS)]
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"sandbox": {"maskedPaths": masks}}))
    return ws


def test_masked_paths_flood_does_not_turn_auto_into_local() -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    ws = _hostile_workspace()

    async def main() -> str:
        async with Runtime(workspace=ws) as rt:
            return type(rt.backend).__name__

    try:
        with pytest.raises(BackendUnavailableError, match="does not drop the sandbox.*--sandbox local"):
            kind = anyio.run(main)
            pytest.fail(f"auto ran the hostile workspace's commands under {kind}")
    finally:
        shutil.rmtree(ws.parent, ignore_errors=True)
