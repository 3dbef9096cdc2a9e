"""Red team round 36: a read-denied path shown again by another mount of its file system.

A mask hides a path, not the file. When the directory that holds a denied file is also mounted
somewhere else on the host (a bind mount of the workspace, or of a directory above it, or the same
file system mounted twice), bwrap's recursive ``--ro-bind / /`` brings that second mount into the
sandbox, and ``cat /alias/secret.txt`` printed what ``Read(./secret.txt)`` denies (the policy masked
only ``ws/secret.txt``). Now every other name of a masked path through another mount of the same
file system (the same file: device and inode compared) is masked too. Root only: making a bind
mount needs it (as uid 65534 there is nothing to make, and the compiler is the same code).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig
from sandbox.factory import create_backend
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require


@pytest.fixture
def aliased() -> Iterator[tuple[Path, Path, Path]]:
    """(workspace, a bind mount of it, a bind mount of its parent)."""
    require(os.geteuid() == 0, "making a bind mount needs root")
    base = Path(tempfile.mkdtemp(prefix="rt36-bindalias-", dir="/var/tmp"))
    base.chmod(0o755)
    top = base / "top"
    ws = top / "ws"
    (ws / "keys").mkdir(parents=True)
    ws.chmod(0o777)
    for path, text in ((ws / "secret.txt", "TOPSECRET\n"), (ws / "keys" / "id", "KEYDATA\n")):
        path.write_text(text)
        path.chmod(0o666)
    alias, upper = base / "alias", base / "upper"
    alias.mkdir()
    upper.mkdir()
    mounted: list[Path] = []
    try:
        for src, dst in ((ws, alias), (top, upper)):
            subprocess.run(["mount", "--bind", str(src), str(dst)], check=True)
            mounted.append(dst)
        yield ws, alias, upper
    finally:
        for dst in reversed(mounted):
            subprocess.run(["umount", str(dst)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_the_policy_masks_every_mount_of_the_denied_files(aliased: tuple[Path, Path, Path]) -> None:
    ws, alias, upper = aliased
    policy = deny_policy(ws, "Read(./secret.txt)", "Read(./keys/**)")
    denied = set(policy.read_denied)
    for name in ("secret.txt", "keys"):
        assert {ws / name, alias / name, upper / "ws" / name} <= denied, denied


def test_mount_aliases_compares_the_file_not_the_name(aliased: tuple[Path, Path, Path]) -> None:
    from sandbox._maskaliases import mount_aliases

    ws, alias, _ = aliased
    assert mount_aliases([ws / "missing"]) == []
    assert alias / "secret.txt" in mount_aliases([ws / "secret.txt"])


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_command_reads_no_denied_file_through_another_mount(
    aliased: tuple[Path, Path, Path], persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, alias, upper = aliased
    policy = deny_policy(ws, "Read(./secret.txt)", "Read(./keys/**)")
    session = ws.parent.parent / "session"
    session.mkdir(exist_ok=True)
    out = anyio.run(
        run_in,
        create_backend(BwrapConfig(persistent=persistent), policy),
        ws,
        session,
        f"cat secret.txt {alias}/secret.txt {upper}/ws/secret.txt {alias}/keys/id {upper}/ws/keys/id; echo done",
    )
    assert "done" in out, out
    assert "TOPSECRET" not in out and "KEYDATA" not in out, out


@pytest.fixture
def inside() -> Iterator[tuple[Path, Path]]:
    """(workspace, a denied directory outside it that is also mounted at ``ws/mnt``)."""
    require(os.geteuid() == 0, "making a bind mount needs root")
    base = Path(tempfile.mkdtemp(prefix="rt36-bindalias-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, outside = base / "ws", base / "outside"
    (ws / "mnt").mkdir(parents=True)
    outside.mkdir()
    ws.chmod(0o777)
    (outside / "secret.txt").write_text("TOPSECRET\n")
    (outside / "secret.txt").chmod(0o666)
    subprocess.run(["mount", "--bind", str(outside), str(ws / "mnt")], check=True)
    try:
        yield ws, outside
    finally:
        subprocess.run(["umount", str(ws / "mnt")], check=False)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("backend_name", ["bwrap", "docker-bind", "docker-copy"])
def test_a_denied_file_mounted_into_the_workspace_stays_hidden(
    inside: tuple[Path, Path], backend_name: str
) -> None:
    from tests import _docker_support as dk

    ws, outside = inside
    if backend_name.startswith("docker"):
        dk.require_docker()
        config: object = dk.config(workspace_mode=backend_name.removeprefix("docker-"))
    else:
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        config = BwrapConfig(persistent=False)
    policy = deny_policy(ws, f"Read(/{outside}/secret.txt)")
    assert ws / "mnt" / "secret.txt" in policy.read_denied, policy.read_denied
    backend = create_backend(config, policy)  # type: ignore[arg-type]
    out = anyio.run(run_in, backend, ws, ws.parent / "session", "cat mnt/secret.txt; echo done", 120)
    assert "done" in out and "TOPSECRET" not in out, out


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_command_writes_no_edit_denied_file_through_another_mount(tmp_path: Path, persistent: bool) -> None:
    """``Edit(./conf/app.ini)`` with ``ws/mnt`` a bind mount of ``ws/conf``: ``echo > mnt/app.ini``
    rewrote the protected file (only ``conf/app.ini`` was bound read-only)."""
    require(os.geteuid() == 0, "making a bind mount needs root")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="rt36-bindalias-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    (ws / "conf").mkdir(parents=True)
    (ws / "mnt").mkdir()
    for d in (ws, ws / "conf"):
        d.chmod(0o777)
    (ws / "conf" / "app.ini").write_text("original\n")
    (ws / "conf" / "app.ini").chmod(0o666)
    subprocess.run(["mount", "--bind", str(ws / "conf"), str(ws / "mnt")], check=True)
    try:
        policy = deny_policy(ws, "Edit(./conf/app.ini)")
        assert ws / "mnt" / "app.ini" in policy.write_denied, policy.write_denied
        backend = create_backend(BwrapConfig(persistent=persistent), policy)
        anyio.run(
            run_in,
            backend,
            ws,
            tmp_path / "s",
            "echo pwned > mnt/app.ini; echo pwned >> mnt/app.ini; echo done",
        )
        assert (ws / "conf" / "app.ini").read_text() == "original\n"
    finally:
        subprocess.run(["umount", str(ws / "mnt")], check=False)
        shutil.rmtree(base, ignore_errors=True)
