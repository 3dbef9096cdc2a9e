"""Red team round 42 (perms5): a repository's Windows-style rule on docker (bind and copy workspaces).

The policy is compiled once for every backend (`shellrt.runtime.sandbox_policy`); before the
round a repository's ``Read(.\\secrets\\key)`` masked nothing there either, and ``cat`` read the key
(see ``test_redteam_round42_perms5_windows.py``). Apart: the uid-65534 run has no docker SDK.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from sandbox.docker import DockerBackend
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import derive_policy
from tests._docker_support import config, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.mark.parametrize("mode", ["bind", "copy"])
async def test_docker_masks_what_a_windows_rule_names(tmp_path: Path, mode: str) -> None:
    require_docker()
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key").write_text("TOPSECRET-42\n")
    rule = parse_rule("Read(.\\secrets\\key)", "deny", RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws))
    derived, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    async with DockerBackend(config(workspace_mode=mode), derived) as backend:
        seen = (await run_sh(backend, "cat secrets/key 2>&1; echo end"))[1]
    assert "TOPSECRET" not in seen and seen.strip().endswith("end"), seen
