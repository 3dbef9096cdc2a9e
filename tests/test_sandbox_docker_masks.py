"""Bind mode: no command can move, remove or link a masked path out of its mask (`sandbox/docker/_pins.py`).

Each attack runs in one session; a second session on the same host workspace
then looks for the secret anywhere, and the host checks it is still where it
was, unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._pins import Pin, masked_ancestors, verify_pins
from sandbox.errors import BackendUnavailableError
from tests._docker_support import DEBIAN, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

SECRET = "DBPASS=hunter2"

#: Each script tries to carry a/b/conf/db.env somewhere no mask covers (failures are expected).
ATTACKS = {
    "parent": "mv a/b/conf a/b/conf2",
    "grandparent": "mv a/b a/b2",
    "great_grandparent": "mv a a2",
    "file": "mv a/b/conf/db.env a/b/conf/moved",
    "rm_rf_then_recreate": "rm -rf a; mkdir -p a/b/conf; echo decoy > a/b/conf/db.env",
    "hard_link": "ln a/b/conf/db.env hard; ln -P a/b/conf/db.env a/hard2",
    "copy": "cp a/b/conf/db.env copied; cp -a a/b/conf copied_dir; tar cf all.tar a",
    "rename_over": "mkdir x; mv x a/b/conf; mv -T x a/b",
    "workspace_contents": "mkdir ../w2 2>/dev/null; mv a /tmp/a; cp -a . /tmp/ws",
}


async def _sh(backend: DockerBackend, script: str) -> str:
    return await backend.run_capture(["sh", "-c", f"{script}; true"], cwd="/workspace")


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_a_masked_file_cannot_be_moved_out_of_its_mask(attack: str, tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    secret = ws / "a" / "b" / "conf" / "db.env"
    secret.parent.mkdir(parents=True)
    secret.write_text(SECRET + "\n")
    (ws / "a" / "b" / "conf" / "other").write_text("ordinary\n")  # may go: only the secret is pinned
    pol = policy(ws, read_denied=(secret,))
    async with DockerBackend(config(DEBIAN, workspace_mode="bind"), pol) as backend:
        first = await _sh(backend, f"{ATTACKS[attack]} 2>&1")
        seen = await _sh(backend, "grep -rs hunter2 /workspace /tmp")
    async with DockerBackend(config(DEBIAN, workspace_mode="bind"), pol) as backend:
        later = await _sh(backend, "grep -rs hunter2 /workspace /tmp")
    assert SECRET not in seen + later, (first, seen, later)
    assert secret.read_text() == SECRET + "\n"


async def test_a_masked_directory_cannot_be_renamed_or_removed(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    (ws / "sub" / "secrets").mkdir(parents=True)
    (ws / "sub" / "secrets" / "key").write_text(SECRET + "\n")
    pol = policy(ws, read_denied=(ws / "sub" / "secrets",))
    async with DockerBackend(config(DEBIAN, workspace_mode="bind"), pol) as backend:
        out = await _sh(backend, "mv sub/secrets s2 2>&1; mv sub sub2 2>&1; rm -rf sub 2>&1; ls sub")
    assert "Device or resource busy" in out and "secrets" in out, out
    assert (ws / "sub" / "secrets" / "key").read_text() == SECRET + "\n"


def test_pins_are_the_real_directories_inside_the_workspace(tmp_path: Path) -> None:
    """Symlinked ancestors pin their real directory; a path leading outside the workspace pins nothing."""
    ws = tmp_path / "ws"
    (ws / "real" / "deep").mkdir(parents=True)
    (ws / "real" / "deep" / "db.env").write_text("x")
    os.symlink("real", ws / "link")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "db.env").write_text("x")
    os.symlink(outside, ws / "out")
    pins = masked_ancestors(
        ws, [ws / "link" / "deep" / "db.env", ws / "out" / "db.env", ws / "gone"], "/workspace"
    )
    assert [(p.source, p.target) for p in pins] == [
        (str(ws.resolve() / "real"), "/workspace/real"),
        (str(ws.resolve() / "real" / "deep"), "/workspace/real/deep"),
    ]


def test_a_pin_mounted_from_another_directory_is_refused(tmp_path: Path) -> None:
    """`verify_pins` compares the mounted inode with the one chosen (here through this process's root)."""
    (tmp_path / "ws" / "conf").mkdir(parents=True)
    (tmp_path / "ws" / "conf" / "db.env").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    [pin] = masked_ancestors(tmp_path / "ws", [tmp_path / "ws" / "conf" / "db.env"], str(tmp_path / "ws"))
    verify_pins([pin], os.getpid())
    swapped = Pin(pin.source, str(tmp_path / "elsewhere"), pin.dev, pin.ino)
    with pytest.raises(BackendUnavailableError, match="was replaced"):
        verify_pins([swapped], os.getpid())
