"""Red team round 45 (files6): docker's Glob and Grep obeyed the host's ignore files above the workspace.

A docker session's Glob and Grep walk the host directory behind ``/workspace`` (the bind source,
or the private copy) with the walker, which, as ripgrep does, also obeys the ignore files of the
searched directory's ancestors. Those were the *host's* ancestors of that directory
(``/home/alice/.gitignore``, ``/home/alice/projects/.ignore``), which the container never sees
(its ``/workspace`` sits in its own ``/``): a host file the sandbox cannot read decided which
names the model was shown -- ``TOKEN=hunter2`` hidden, ``TOKEN=hunter3`` shown told the host
file's line. Now the walk reads no ignore file above the directory behind the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import shellrt
from sandbox.confine import Mount, View
from shellrt.tools._paths import search_top
from tests._calls import block_text, one_call
from tests._docker_support import DEBIAN, config, require_docker

_GUESSES = ("TOKEN=hunter2", "TOKEN=hunter3")  # the first is the host file's line


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["bind", "copy"])
async def test_the_hosts_ignore_files_above_the_workspace_are_not_obeyed(tmp_path: Path, mode: str) -> None:
    require_docker()
    base = Path(os.path.realpath(tmp_path))
    (base / ".gitignore").write_text("TOKEN=hunter2\n")  # the host's, above the workspace
    root = base / "ws"
    (root / "src").mkdir(parents=True)
    for name in _GUESSES:
        (root / name).write_text("hello\n")
        (root / "src" / name).write_text("hello\n")
    async with shellrt.Runtime(
        workspace=root, sandbox=config(DEBIAN, workspace_mode=mode), session_dir=base / "s", settings_files=()
    ) as rt:
        answers = [
            await one_call(rt, "Glob", pattern="*"),
            await one_call(rt, "Glob", pattern="*", path="/workspace/src"),
            await one_call(rt, "Grep", pattern="hello", output_mode="files_with_matches"),
            await one_call(rt, "Grep", pattern="hello", path="/workspace/src", output_mode="content"),
        ]
    for got in answers:
        assert not got["is_error"], got
        for name in _GUESSES:
            assert name in block_text(got), got


def test_only_a_relocated_mount_stops_the_ancestors() -> None:
    """Local and bwrap see the host's directories at their own paths: their parents' ignore files
    are the sandbox's too (ripgrep reads them there), and stay obeyed."""
    docker = View((Mount("/workspace", "/home/alice/proj", writable=True),))
    same = View((Mount("/", "/"), Mount("/home/alice/proj", "/home/alice/proj", writable=True)))
    assert search_top(docker, "/workspace/src") == "/home/alice/proj"
    assert search_top(same, "/home/alice/proj/src") is None
