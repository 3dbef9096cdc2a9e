"""Red team round 42 (files5): the walker entered masked directories -- on docker too.

A docker session's Glob and Grep walk the host's view of its workspace (the fd-anchored walker:
nothing is assumed about the image). In bind mode the host directory still holds the masked
place (the container sees an empty read-only mount there), so the walker read a masked
``secrets/.gitignore`` and its rules spent the walk's 10,000-rule budget: a workspace ignore
file of 10,000 - 50 rules made Glob and Grep fail with "Cannot search" exactly when the masked
file held more than 50 rules. Now the walker never enters a masked place (`_gitignore.Fence`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import shellrt
from shellrt.tools import _gitignore
from tests._calls import one_call
from tests._docker_support import DEBIAN, config, require_docker


@pytest.mark.anyio
async def test_a_masked_ignore_file_does_not_spend_the_walks_budget_on_docker(tmp_path: Path) -> None:
    require_docker()
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "a.txt").write_text("hello\n")
    (root / ".ignore").write_text("".join(f"nothing{i}\n" for i in range(_gitignore.MAX_IGNORE_RULES - 50)))
    (root / "secrets/key.txt").write_text("hello TOKEN\n")
    answers: list[tuple[str, str]] = []
    async with shellrt.Runtime(
        workspace=root,
        sandbox=config(DEBIAN, workspace_mode="bind"),
        session_dir=tmp_path / "s",
        settings_files=(),
        masked_paths=(root / "secrets",),
    ) as rt:
        for rules in (10, 60):  # the masked file's length, changed on the host between the calls
            (root / "secrets/.gitignore").write_text("".join(f"k{i}\n" for i in range(rules)))
            glob = await one_call(rt, "Glob", pattern="**/*.txt")
            grep = await one_call(rt, "Grep", pattern="hello", output_mode="files_with_matches")
            answers.append((str(glob["content"]), str(grep["content"])))
    assert answers[0] == answers[1], answers
    assert "a.txt" in answers[1][0] and "a.txt" in answers[1][1], answers
    assert "key.txt" not in "".join(answers[1]), answers


@pytest.mark.anyio
async def test_a_refusal_names_the_sandbox_path_not_the_hosts(tmp_path: Path) -> None:
    """The walker's refusals ("Cannot search: ... under <root>") named the host directory the
    docker workspace is (``/home/alice/...``, a private copy's temp path): the host's layout, which
    nothing else shows the model. Now they name the path the model searched (``/workspace``)."""
    require_docker()
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    (root / ".ignore").write_text("".join(f"nothing{i}\n" for i in range(_gitignore.MAX_IGNORE_RULES + 1)))
    async with shellrt.Runtime(
        workspace=root, sandbox=config(DEBIAN), session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        assert rt.backend is not None
        host = str(rt.backend.to_host_path("/workspace"))  # the private copy, copy mode
        for name, raw in (("Glob", {"pattern": "**/*.txt"}), ("Grep", {"pattern": "hello"})):
            got = str((await one_call(rt, name, **raw))["content"])
            assert "Cannot search" in got and "/workspace" in got, got
            assert host not in got and str(root) not in got, got
