"""Red team, round 17 (bwrap's host-code refusal, docker's bind mode too): a bind-mounted
workspace on the host's import path let a container command plant a module the host imports.

Same class as `tests/test_redteam_round17_bwrap_pythonpath.py`: with the workspace a ``sys.path``
entry (``PYTHONPATH=.``), a container command wrote ``anyio.py`` into the bind-mounted workspace
and the host's next import of that name ran it, unsandboxed. Docker's bind mode only warned; it
now refuses at start with what to do instead (copy mode, or the path off ``PYTHONPATH``). Real
containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import SandboxPolicyError
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_a_bind_mounted_workspace_on_the_import_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    tmp_path.chmod(0o755)
    monkeypatch.syspath_prepend(str(ws))  # as PYTHONPATH=. from the project gives it
    outcome = "ran"
    try:
        async with DockerBackend(config(BUSYBOX, workspace_mode="bind"), policy(ws)) as backend:
            _code, out = await run_sh(backend, "echo 'import os' > /workspace/anyio.py; echo done")
            outcome = f"ran: {out}"
    except SandboxPolicyError as exc:
        outcome = f"refused: {exc}"
    assert not (ws / "anyio.py").exists(), outcome
    assert outcome.startswith("refused") and "Fix:" in outcome, outcome
