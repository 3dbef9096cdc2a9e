"""Red team round 8, docker: `DockerBackend.to_host_path` judged ``..`` lexically after the fact.

``PurePosixPath.relative_to`` keeps ``..``: ``/workspace/../../etc/passwd`` mapped to
``<host workspace>/../../etc/passwd``, a host path outside the workspace (its callers normalize
first today, e.g. the cwd tracker; a cwd comes from a file commands write). Now the path is
normalized before it is mapped, and one that leaves the workspace has no host twin. No
container is started.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy


@pytest.mark.parametrize("mode", ["copy", "bind"])
@pytest.mark.parametrize(
    "escape", ["/workspace/../etc/passwd", "/workspace/a/../../../etc", "/workspace/..", "//workspace/../x"]
)
def test_a_path_leaving_the_workspace_has_no_host_twin(tmp_path: Path, mode: str, escape: str) -> None:
    backend = DockerBackend(config(DEBIAN, workspace_mode=mode), policy(tmp_path))
    host = backend.to_host_path(escape)
    assert host is None or os.path.normpath(host).startswith(str(tmp_path)), host


@pytest.mark.parametrize("mode", ["copy", "bind"])
def test_a_path_inside_still_maps(tmp_path: Path, mode: str) -> None:
    backend = DockerBackend(config(DEBIAN, workspace_mode=mode), policy(tmp_path))
    assert backend.to_host_path("/workspace/a/../b/c") == Path(tmp_path) / "b/c"
    assert backend.to_host_path("/workspace") == Path(tmp_path)
