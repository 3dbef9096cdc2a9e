"""Red team, round 16 (bwrap): a writable root at the host's /tmp showed every other session's private scratch.

Each bwrap session keeps its private /tmp (``<temp>/shellrt-bwrap-tmp-XXXX/tmp``), its state
dir (``<temp>/shellrt-bwrap-XXXX``: the cwd reports) and, with network ``proxied``, its proxy's
socket (``/tmp/shellrt-proxy-XXXX``) under the host's temp dir. A session whose workspace (or
another writable root) *was* that directory bound it writable, and with it every other live
session's scratch: as root the idmapped root shows root's 0700 holders as the sandbox uid's own,
and a non-root caller's sessions share one uid anyway. A command of session B read what session
A's commands kept in their /tmp. Such a root is now refused at start, with what to use instead.
Real bwrap, two sessions at once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.errors import BackendUnavailableError, SandboxPolicyError
from sandbox.factory import create_backend
from shellrt.runtime.sandbox_choice import resolve_sandbox
from shellrt.supervisor import Supervisor
from tests.conftest import require


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_root_at_the_temp_dir_cannot_read_another_sessions_tmp(tmp_path: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    temp = Path(os.path.realpath(tempfile.gettempdir()))
    ws_a = tmp_path / "a"
    ws_a.mkdir()

    async def main() -> tuple[str, str]:
        a = create_backend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws_a))
        try:  # refused when made since round 31 (`sandbox._systemroots`), before at its start
            b = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=temp))
        except SandboxPolicyError as exc:
            return "refused", str(exc)
        await a.start()
        try:
            assert isinstance(a, BwrapBackend) and a.session_tmp is not None
            async with Supervisor(a, session_dir=tmp_path / "sa") as sa:
                wrote = await sa.run("echo secret-of-a > /tmp/note; cat /tmp/note", timeout_s=60)
                assert wrote.exit_code == 0 and "secret-of-a" in wrote.preview, wrote
                try:  # closed either way: a refused backend is one too (round 29: this one was not)
                    try:
                        await b.start()
                    except BackendUnavailableError as exc:
                        return "refused", str(exc)
                    async with Supervisor(b, session_dir=tmp_path / "sb") as sb:
                        target = a.session_tmp / "note"
                        read = await sb.run(f"cat {target}", timeout_s=60)
                        return "ran", read.preview
                finally:
                    await b.close()
        finally:
            await a.close()

    outcome, text = anyio.run(main)
    assert "secret-of-a" not in text, f"session B (workspace {temp}) read session A's /tmp: {text}"
    assert outcome == "refused", text
    assert str(temp) in text and "Fix:" in text, text  # says what to use instead


def test_auto_does_not_fall_back_to_no_sandbox_for_such_a_root() -> None:
    """The refusal is a policy refusal: ``auto`` (``shellrt run`` from /tmp) fell back to the local
    backend -- no isolation at all -- for it, which is worse than the hole it closes."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    temp = Path(os.path.realpath(tempfile.gettempdir()))

    async def main() -> str:
        try:
            backend, _warnings = await resolve_sandbox("auto", SandboxPolicy(workspace=temp), one_shot=True)
        except SandboxPolicyError as exc:
            return f"refused: {exc}"
        await backend.close()
        return f"started {backend.name}"

    outcome = anyio.run(main)
    assert outcome.startswith("refused") and "Fix:" in outcome, outcome
