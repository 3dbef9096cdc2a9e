"""The Python API over the docker backend: Bash runs in the container, on images with and without bash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import DockerConfig
from tests._docker_support import BUSYBOX, DEBIAN, require_docker

pytestmark = pytest.mark.anyio


def bash(id_: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}


def text(user: dict[str, Any], index: int = 0) -> str:
    content = user["content"][index]["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
async def test_bash_tool_in_container(tmp_path: Path, image: str) -> None:
    require_docker()
    (tmp_path / "sub").mkdir()
    (tmp_path / "hello.txt").write_text("from the host\n")
    async with shellrt.Runtime(
        workspace=tmp_path,
        sandbox=DockerConfig(image=image),
        mode="bypassPermissions",
        session_dir=tmp_path.parent / f"{tmp_path.name}-session",
    ) as rt:
        user = await rt.run([bash("a", "cat hello.txt; pwd"), bash("b", "cd sub")])
        assert "from the host" in text(user) and "/workspace" in text(user)
        [pwd] = [text(await rt.run(bash("c", "pwd")))]
        assert pwd.strip() == "/workspace/sub"
        wrote = await rt.run(bash("d", "echo made > /workspace/new.txt && cat /workspace/new.txt"))
        assert text(wrote).strip() == "made"
    # copy mode: the host workspace is never modified
    assert not (tmp_path / "new.txt").exists()
