"""Conformance: a 300 MB output keeps the runtime's memory bounded and the spool byte-identical.

The runtime runs in a child Python process that reports its own peak RSS
(``VmHWM`` of ``/proc/self/status``), so pytest's memory does not blur the measurement.
Not ``ru_maxrss``: Linux carries the RSS high-water mark across ``exec``, so the
child would report pytest's own peak whenever pytest had grown past the bound.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: ``seq 1 35000000`` prints 304,888,898 bytes.
COMMAND = "seq 1 35000000"

CHILD = r"""
import anyio, hashlib, json, sys
from pathlib import Path
from sandbox import SandboxPolicy, BackendUnavailableError
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conformance.backends import BACKENDS

name, workspace, session, command = sys.argv[1:5]

async def main():
    backend = create_backend(BACKENDS[name](), SandboxPolicy(workspace=Path(workspace)))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        print(json.dumps({"unavailable": str(exc)}))
        return
    try:
        sup = Supervisor(backend, session_dir=Path(session))
        result = await sup.run(command, timeout_s=120)
        await sup.close()
    finally:
        await backend.close()
    peak_kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    print(json.dumps({"peak_kb": peak_kb, "path": str(result.output_path), "total": result.total_bytes,
                      "exit": result.exit_code, "truncated": result.truncated, "preview_len": len(result.preview)}))

anyio.run(main)
"""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@pytest.mark.slow
def test_300mb_output_bounded_memory_and_identical_spool(backend_name: str, tmp_path: Path) -> None:
    from tests.conftest import require

    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, backend_name, str(ws), str(tmp_path / "session"), COMMAND],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if "unavailable" in report:
        require(False, report["unavailable"])
    spool = Path(report["path"])
    reference = tmp_path / "reference.out"
    subprocess.run(["bash", "-c", f"{COMMAND} > {reference}"], check=True)
    try:
        assert report["exit"] == 0
        assert report["total"] == reference.stat().st_size > 300_000_000
        assert report["peak_kb"] < 150 * 1024, f"peak RSS {report['peak_kb'] / 1024:.0f} MB"
        assert report["truncated"] and report["preview_len"] < 100_000
        assert sha256_file(spool) == sha256_file(reference)
    finally:
        spool.unlink(missing_ok=True)
        reference.unlink(missing_ok=True)
