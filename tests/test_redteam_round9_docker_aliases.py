"""Red team round 9, docker bind mode: a hard link made before a read-denied path existed.

A mask covers a path, not an inode, and a read-denied path that does not exist is not masked.
In bind mode a command ran ``touch .env && ln .env notes.txt``; the next command started in a
new container whose masks covered the ``.env`` that had appeared, but ``notes.txt`` is the same
file: once the operator wrote the secret into ``.env`` in place (a shell's ``>``), every later
command read it at ``notes.txt``. bwrap closed this in round 8 (`sandbox._maskaliases`); the
docker backend now masks every other name of a read-denied file in the workspace too, found
when each container starts (the same bounded search).

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

SECRET = "rt9-secret-token-0xC0FFEE"


async def _run(backend: DockerBackend, command: str) -> str:
    return (await run_sh(backend, command))[1]


async def test_a_link_made_before_the_mask_does_not_show_the_secret(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    denied = ws / ".env"
    async with DockerBackend(config(workspace_mode="bind"), policy(ws, read_denied=[denied])) as backend:
        await _run(backend, "touch .env && ln .env notes.txt && mkdir -p sub && ln .env sub/also")
        denied.write_text(SECRET + "\n")  # the operator fills it in place: same inode
        seen = await _run(backend, "cat notes.txt sub/also .env 2>&1; echo end")
        assert SECRET not in seen, f"the read-denied file's secret was read through a hard link: {seen!r}"
        assert seen.strip().endswith("end")
    async with DockerBackend(config(workspace_mode="bind"), policy(ws, read_denied=[denied])) as fresh:
        assert SECRET not in await _run(
            fresh, "cat notes.txt sub/also 2>&1; mv notes.txt n2 2>&1; cat n2 2>&1"
        )
