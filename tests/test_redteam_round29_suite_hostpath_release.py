"""A backend's writable roots leave the host ``PATH`` rule when the backend goes, without a collection.

`sandbox.factory.create_backend` registers the roots a backend's commands write (`sandbox._hostpath`)
until the backend is gone (a ``weakref.finalize``). A bwrap backend sat in a reference cycle of its
own (its mask cache's callbacks held it), so a dropped one -- closed or refused at start -- stayed
registered until the cyclic collector happened to run. In CI67 a test's refused backend with its
workspace at /tmp stayed registered in its xdist worker, and a later test in that worker
(round 16's root PATH-ownership test) saw root's own directory under /tmp left out of ``PATH`` for
that reason. Round 29: 2 of 2 bwrap cases failed before; every backend kind is checked.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, DockerConfig, LocalConfig, SandboxPolicy, _hostpath
from sandbox.factory import create_backend


@pytest.fixture
def no_collection() -> Iterator[None]:
    """The cyclic collector off: what is released must be released by reference counting alone."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _registered(root: Path) -> bool:
    with _hostpath._lock:
        _hostpath._drop_pending()
        return any(str(root) in roots for roots in _hostpath._roots.values())


@pytest.mark.parametrize(
    "config",
    [LocalConfig(), BwrapConfig(), BwrapConfig(persistent=False), DockerConfig()],
    ids=["local", "bwrap-session", "bwrap-per-command", "docker"],
)
def test_a_dropped_backend_leaves_no_registered_root(
    tmp_path: Path, config: LocalConfig | BwrapConfig | DockerConfig, no_collection: None
) -> None:
    workspace = (tmp_path / "ws").resolve()
    workspace.mkdir()
    backend = create_backend(config, SandboxPolicy(workspace=workspace))
    assert _registered(workspace), "create_backend should register the workspace"
    anyio.run(backend.close)
    del backend
    # anyio's worker thread may hold the last function it ran (a bound method of the backend) until
    # it exits, just after the loop: a moment, never a collection (the collector is off here).
    deadline = time.monotonic() + 5
    while _registered(workspace) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _registered(workspace), (
        f"a closed and dropped {type(config).__name__} backend still excludes {workspace} from the host "
        "PATH: something of it holds it in a reference cycle"
    )
