"""Red team round 38 (rules), docker bind mode: a read-denied file *outside* the workspace with a
hard link *inside* it (``ln /srv/x/secret.txt ws/copy.txt``, the operator's, before the session).
The workspace's bind shows the link; the finder looked in the workspace only for denied files
inside it, so ``cat copy.txt`` printed what the rule hides. Real containers (FAIL, not skip, under
CI=true)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

SECRET = "rt38-outside-linked-0xBEEF"


async def test_a_link_in_the_workspace_of_a_denied_file_outside_it_shows_nothing(tmp_path: Path) -> None:
    require_docker()
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o644)
    os.link(secret, ws / "copy.txt")
    async with DockerBackend(config(workspace_mode="bind"), policy(ws, read_denied=[secret])) as backend:
        seen = (await run_sh(backend, "cat copy.txt 2>&1; echo end"))[1]
    assert SECRET not in seen, seen
    assert seen.strip().endswith("end"), seen
