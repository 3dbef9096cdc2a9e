"""`resolve_sandbox` and a bubblewrap found only where commands write (round 15's host-program class).

The backend's own start refuses such a bwrap (`sandbox.bwrap`, through `sandbox._hostpath`); these
pin what each sandbox choice makes of that refusal: ``auto`` falls back to local with a warning that
says why, ``bwrap`` by name fails with the fix, and the planted program never runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, SandboxPolicy
from sandbox._hostpath import register_writable, unregister_writable
from shellrt.runtime.sandbox_choice import resolve_sandbox
from tests.conftest import require


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """A registered workspace whose ``bin/bwrap`` is the only bwrap on ``PATH``; and its marker."""
    require(shutil.which("bwrap") is not None, "bwrap is needed (the real one must exist elsewhere)")
    base = Path(tempfile.mkdtemp(prefix="choice-planted-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    (ws / "bin").mkdir(parents=True)
    marker = tmp_path / "PWNED"
    program = ws / "bin" / "bwrap"
    program.write_text(f"#!/bin/sh\n: > {marker}\nexit 1\n")
    program.chmod(0o755)
    bare = tmp_path / "empty-bin"  # PATH keeps no system directory with a bwrap in it
    bare.mkdir()
    monkeypatch.setenv("PATH", f"{ws / 'bin'}:{bare}")
    token = register_writable([ws])
    try:
        yield ws, marker
    finally:
        unregister_writable(token)
        shutil.rmtree(base, ignore_errors=True)


def test_auto_falls_back_to_local_and_says_why(planted: tuple[Path, Path]) -> None:
    ws, marker = planted

    async def main() -> tuple[str, list[str]]:
        backend, warnings = await resolve_sandbox("auto", SandboxPolicy(workspace=ws))
        try:
            return type(backend).__name__, warnings
        finally:
            await backend.close()

    kind, warnings = anyio.run(main)
    assert kind == "LocalBackend", kind
    assert len(warnings) == 1 and "found only at" in warnings[0] and str(ws / "bin" / "bwrap") in warnings[0]
    assert "running without isolation" in warnings[0]
    assert not marker.exists(), "the planted bwrap ran on the host"


def test_bwrap_by_name_is_refused_with_the_fix(planted: tuple[Path, Path]) -> None:
    ws, marker = planted

    async def main() -> None:
        backend, _ = await resolve_sandbox("bwrap", SandboxPolicy(workspace=ws))
        await backend.close()

    with pytest.raises(BackendUnavailableError, match="found only at .*install bubblewrap in a system directory"):
        anyio.run(main)
    assert not marker.exists(), "the planted bwrap ran on the host"
    assert os.environ["PATH"].startswith(str(ws / "bin"))
