"""Red team round 13, docker copy mode: what ``--export`` writes on the host.

The export (``shellrt run --export DIR``, `DockerBackend.export_workspace`) brings the
container's copy of the workspace back onto the host, usually into the workspace itself. It
checked each member's *place* (anchored below the destination, no symlink followed), not what
the host has there:

- a **read-denied** file is left out of the copy; the command creates one of the same name in
  its copy (``echo x > .env``) and the export overwrote the host's secret with it;
- a **write-denied** path (an ``Edit``/``Write`` deny rule) that did not exist yet is not bound
  read-only in the container; the command created it and the export wrote it on the host;
- a file where the host has a **directory holding a denied path** (``rm -rf secrets; echo x >
  secrets``) replaced the directory: the host's denied file was deleted;
- a **hard link** came out as a hard link: ``ln .git/config notes`` left the host's
  ``.git/config`` and ``notes`` one inode, so a later write to the harmless-looking name changes
  the other (``--export`` to a fresh directory, and any host tool that writes in place).

Now a denied path is never written (the host's is kept; reported unless the content is the
host's own), a caller's protected names can be held back too (``refuse``), and a hard link
comes out as a copy whose bytes count against the export's bound.

Real containers (FAIL, not skip, under CI=true), and archives built here for the bounds.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker._untar import WorkspaceExportError
from sandbox.docker._workspace import export_workspace
from shellrt.supervisor.protect import protected_reason
from tests._docker_support import BUSYBOX, config, policy, require_docker

pytestmark = [pytest.mark.anyio]


async def _sh(backend: DockerBackend, script: str) -> None:
    proc = await backend.exec(
        ExecRequest(argv=("sh", "-c", script), cwd="/workspace", env={"PATH": "/usr/bin:/bin"})
    )
    status = await proc.wait()
    assert status.exit_code == 0, status


@pytest.mark.docker
async def test_a_read_denied_file_made_in_the_copy_does_not_overwrite_the_host(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / ".env").write_text("HOST-SECRET\n")
    (ws / "secrets" / "key").write_text("HOST-KEY\n")
    (ws / "README").write_text("readme\n")
    pol = policy(ws, read_denied=(ws / ".env", ws / "secrets" / "key"))
    async with DockerBackend(config(BUSYBOX, workspace_mode="copy"), pol) as backend:
        await _sh(
            backend, "echo PLANTED > .env && rm -rf secrets && echo file > secrets && echo new > README"
        )
        with pytest.raises(WorkspaceExportError) as err:
            await backend.export_workspace(ws)
    assert (ws / ".env").read_text() == "HOST-SECRET\n"
    assert (ws / "secrets" / "key").read_text() == "HOST-KEY\n"
    assert (ws / "README").read_text() == "new\n"  # the rest came out
    names = {name for name, _ in err.value.refused}
    assert names == {".env", "secrets"}, err.value.refused


@pytest.mark.docker
async def test_a_write_denied_path_is_not_written_and_an_unchanged_one_is_quiet(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "locked.txt").write_text("orig\n")
    pol = policy(ws, write_denied=(ws / "locked.txt", ws / "gen"))
    async with DockerBackend(config(BUSYBOX, workspace_mode="copy"), pol) as backend:
        await _sh(backend, "echo out > result.txt")
        await backend.export_workspace(ws)  # locked.txt comes out as it is: nothing to report
        assert (ws / "result.txt").read_text() == "out\n"
        await _sh(backend, "mkdir gen && echo bad > gen/x")
        with pytest.raises(WorkspaceExportError, match="write-denied"):
            await backend.export_workspace(ws)
    assert not (ws / "gen").exists()
    assert (ws / "locked.txt").read_text() == "orig\n"


@pytest.mark.docker
async def test_a_hard_link_comes_out_as_a_copy(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    async with DockerBackend(config(BUSYBOX, workspace_mode="copy"), policy(ws)) as backend:
        await _sh(backend, "ln .git/config notes && mkdir d && ln notes d/again")
        dest = tmp_path / "out"
        await backend.export_workspace(dest)
    inodes = {os.lstat(dest / p).st_ino for p in (".git/config", "notes", "d/again")}
    assert len(inodes) == 3, "a hard link of the container came out as one inode with two names"
    for p in (".git/config", "notes", "d/again"):
        assert (dest / p).read_text() == "[core]\n"
        assert os.lstat(dest / p).st_nlink == 1
    (dest / "notes").write_text("[core]\n\tfsmonitor = /tmp/x\n")
    assert (dest / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.docker
async def test_protected_names_are_held_back_when_the_caller_says_so(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    async with DockerBackend(config(BUSYBOX, workspace_mode="copy"), policy(ws)) as backend:
        await _sh(
            backend,
            "mkdir -p .git/hooks .shellrt && printf '#!/bin/sh\\n' > .git/hooks/pre-commit"
            " && echo '{}' > .shellrt/settings.json && echo ok > fine.txt",
        )
        dest = tmp_path / "out"
        with pytest.raises(WorkspaceExportError, match="git hook"):
            await backend.export_workspace(dest, refuse=protected_reason)
    assert (dest / "fine.txt").read_text() == "ok\n"
    assert not (dest / ".git" / "hooks" / "pre-commit").exists()
    assert not (dest / ".shellrt" / "settings.json").exists()


# --- archives built here: the copies' bound -------------------------------------------------


class _Client:
    """What `export_workspace` uses of a docker client: ``api.get_archive``."""

    def __init__(self, archive: bytes) -> None:
        self.api = self
        self._archive = archive

    def get_archive(self, cid: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        data = self._archive
        return iter([data[i : i + 65536] for i in range(0, len(data), 65536)]), {}


def test_the_copies_of_hard_links_are_bounded(tmp_path: Path) -> None:
    """A hard link carries no data in the archive: 64 names of a 1 MiB file are 64 MiB on the
    host as copies. They count against the export's bound."""
    buf = io.BytesIO()
    data = os.urandom(1 << 20)
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("big")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for i in range(64):
            link = tarfile.TarInfo(f"l{i}")
            link.type, link.linkname = tarfile.LNKTYPE, "big"
            tar.addfile(link)
    dest = tmp_path / "out"
    with pytest.raises(WorkspaceExportError, match="hard link"):
        export_workspace(cast(Any, _Client(buf.getvalue())), "cid", "/workspace", dest, max_bytes=8 << 20)
    used = sum(os.lstat(p).st_blocks * 512 for p in dest.iterdir())
    assert used <= 16 << 20, f"{used} bytes written for an 8 MiB bound"


# --- copy-in: the other names of a read-denied file -------------------------------------------


@pytest.mark.docker
async def test_copy_in_leaves_out_other_names_of_a_read_denied_file(tmp_path: Path) -> None:
    """A hard link made before the deny rule (``touch .env && ln .env notes.txt``, round 9's bind
    mode attack): copy mode copied ``notes.txt`` with the secret the operator later wrote into
    ``.env``. Also for a file below a read-denied directory."""
    require_docker()
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / ".env").write_text("ENV-SECRET\n")
    os.link(ws / ".env", ws / "notes.txt")
    (ws / "secrets" / "key").write_text("KEY-SECRET\n")
    (ws / "sub").mkdir()
    os.link(ws / "secrets" / "key", ws / "sub" / "readme")
    (ws / "plain.txt").write_text("plain\n")
    pol = policy(ws, read_denied=(ws / ".env", ws / "secrets"))
    async with DockerBackend(config(BUSYBOX, workspace_mode="copy"), pol) as backend:
        proc = await backend.exec(
            ExecRequest(argv=("sh", "-c", "cat notes.txt sub/readme plain.txt; ls -a . sub"), cwd="/workspace",
                        env={"PATH": "/usr/bin:/bin"}, merge_stderr=True)
        )  # fmt: skip
        out = b""
        with contextlib.suppress(anyio.EndOfStream):
            while True:
                out += await proc.stdout.receive()
        await proc.wait()
    text = out.decode()
    assert "SECRET" not in text, text
    assert "plain" in text
