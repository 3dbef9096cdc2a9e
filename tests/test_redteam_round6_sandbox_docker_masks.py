"""Red team round 6: in docker's bind mode, a read-denied path that appeared later was readable.

Masks are mounts made when the container starts, over the denied paths that exist then ("nothing
there to hide" otherwise). A ``Read(./.env)`` deny, a ``~/.ssh`` in a home workspace, a
``secrets/`` directory: when the operator (or any host program) created one during the session,
every later command of that container read it. bwrap promises that such a path makes the next
command use a new sandbox that hides it; docker now does the same: the next command gets a new
container (recorded in ``recoveries``), whose masks cover it.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox._collect import run_collected
from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker

pytestmark = pytest.mark.docker


def test_a_denied_path_created_during_the_session_is_hidden_from_later_commands(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    denied = (ws / "secret.env", ws / "keys")

    async def main() -> tuple[bytes, bytes, list[str]]:
        backend = DockerBackend(config(workspace_mode="bind"), policy(ws, read_denied=denied))
        await backend.start()
        try:
            read = ExecRequest(argv=("sh", "-c", "cat secret.env keys/id; ls keys"), cwd="/workspace")
            before = await run_collected(backend, read)
            (ws / "secret.env").write_text("TOKEN=hunter2\n")
            (ws / "keys").mkdir()
            (ws / "keys/id").write_text("PRIVATE KEY\n")
            after = await run_collected(backend, read)
            return before.stdout, after.stdout + after.stderr, list(backend.recoveries)
        finally:
            await backend.close()

    before, after, recoveries = anyio.run(main)
    assert before == b""
    assert b"hunter2" not in after and b"PRIVATE" not in after, after
    assert any("read-denied" in r for r in recoveries), recoveries


def test_no_new_container_while_the_denied_paths_stay_as_they_were(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret.env").write_text("TOKEN=hunter2\n")

    async def main() -> tuple[bytes, list[str]]:
        backend = DockerBackend(config(workspace_mode="bind"), policy(ws, read_denied=(ws / "secret.env",)))
        await backend.start()
        try:
            for _ in range(3):
                done = await run_collected(backend, ExecRequest(argv=("cat", "secret.env"), cwd="/workspace"))
            return done.stdout, list(backend.recoveries)
        finally:
            await backend.close()

    assert anyio.run(main) == (b"", [])
