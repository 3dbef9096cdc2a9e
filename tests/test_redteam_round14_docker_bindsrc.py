"""Red team round 14, docker: a bind source swapped for a symlink between shellrt's check and the mount.

dockerd resolves a bind mount's *source* on the host, as root, when it starts the container:
whatever the path names then is what the container gets. shellrt checks its sources when it
builds the create request (a write-denied path is bound read-only onto itself only when it is
reached without a symlink; round 8's pins are checked again after the start), but the
workspace itself and those read-only binds were not checked after the start. A command of
another session on the same host directory (two agents on one repository, a session on a
parent directory, a bwrap session next to a docker one) that swaps the path for a symlink in
that window gets a host directory outside the workspace mounted into the new container:

* a write-denied path (``.git/hooks``): the symlink's target (``/root/.ssh``, here a secret
  directory of the test) read-only at ``/workspace/.git/hooks``;
* the workspace (a session on ``repo/sub`` while another's command owns ``repo``): the target
  as the whole workspace, read-write.

The swap is made at the worst moment by wrapping the method that returns the checked sources
(the other session's command needs only ``mv`` and ``ln -s``; its timing is what the wrapper
fixes). Now every bind source the daemon resolved is checked from the host after the start,
through the container's ``/proc/<pid>/root``, against the inode seen when it was chosen; a
mismatch discards the container before any command runs.

Real containers (FAIL, not skip, under CI=true). Root host only (the check reads the
container's root; the test is skipped otherwise).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import BackendUnavailableError
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

SECRET = "rt14-host-secret-0xBADC0DE"


def _secret_dir(tmp_path: Path) -> Path:
    """A host directory outside every workspace holding a secret (stands in for /root/.ssh)."""
    secret = tmp_path / "host-only"
    secret.mkdir()
    (secret / "id_rsa").write_text(SECRET + "\n")
    return secret


def _swap(path: Path, target: Path) -> None:
    """What the other session's command does: ``mv path path.old && ln -s target path``."""
    os.rename(path, str(path) + ".old")
    os.symlink(target, path)


def _wrap(monkeypatch: pytest.MonkeyPatch, name: str, after: Callable[[], None]) -> None:
    original = getattr(DockerBackend, name)

    def wrapped(self: DockerBackend, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        after()
        return result

    monkeypatch.setattr(DockerBackend, name, wrapped)


def _root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("the bind sources are checked through /proc/<pid>/root: a root host's check")


@pytest.mark.parametrize("mode", ["copy", "bind"])
async def test_a_write_denied_bind_swapped_for_a_symlink_is_not_mounted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    require_docker()
    _root_only()
    secret = _secret_dir(tmp_path)
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    backend = DockerBackend(
        config(BUSYBOX, workspace_mode=mode), policy(ws, write_denied=[ws / ".git" / "hooks"])
    )
    swapped: list[Path] = []

    def swap() -> None:
        # The source the container will mount: the host workspace (bind) or its private copy.
        root = ws if mode == "bind" else Path(backend._host_dir or "") / "workspace"
        _swap(root / ".git" / "hooks", secret)
        swapped.append(root)

    _wrap(monkeypatch, "_write_denied_binds", swap)
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        assert "replaced" in str(exc) or "changed" in str(exc), exc
        assert swapped
        return
    try:
        seen = (await run_sh(backend, "cat .git/hooks/id_rsa 2>&1; ls .git/hooks 2>&1; echo end"))[1]
    finally:
        await backend.close()
    assert swapped
    assert SECRET not in seen, (
        f"a host directory outside the workspace was mounted into the container: {seen!r}"
    )


async def test_a_bind_workspace_swapped_for_a_symlink_is_not_mounted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    _root_only()
    secret = _secret_dir(tmp_path)
    repo = tmp_path / "repo"
    sub = repo / "sub"
    sub.mkdir(parents=True)
    (sub / "mine.txt").write_text("mine\n")
    backend = DockerBackend(config(BUSYBOX, workspace_mode="bind"), policy(sub))
    # Called with the resolved source, just before the create request is sent.
    _wrap(monkeypatch, "_bind_extras", lambda: _swap(sub, secret))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        assert "replaced" in str(exc) or "changed" in str(exc), exc
        return
    try:
        seen = (await run_sh(backend, "cat id_rsa 2>&1; touch planted 2>&1; echo end"))[1]
    finally:
        await backend.close()
    assert SECRET not in seen, f"the workspace mount was a host directory outside it: {seen!r}"
    assert not (secret / "planted").exists(), "a command wrote into a host directory outside the workspace"


def test_the_check_never_walks_through_a_symlink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``/proc/<pid>/root`` an absolute link resolves on the host: a parent swapped for one
    could show the expected inode from elsewhere. The check walks component by component."""
    import sandbox.docker._pins as pins

    root = tmp_path / "root"
    (root / "workspace" / "real" / "hooks").mkdir(parents=True)
    hooks = os.stat(root / "workspace" / "real" / "hooks")
    os.symlink(root / "workspace" / "real", root / "workspace" / ".git")  # absolute, as on the host
    real = pins._stat_beneath
    monkeypatch.setattr(pins, "_stat_beneath", lambda _root, target: real(str(root), target))
    with pytest.raises(BackendUnavailableError):
        pins.verify_pins([pins.Pin("src", "/workspace/.git/hooks", hooks.st_dev, hooks.st_ino)], 1)
    pins.verify_pins([pins.Pin("src", "/workspace/real/hooks", hooks.st_dev, hooks.st_ino)], 1)
