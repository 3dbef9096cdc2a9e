"""Red team round 4: docker's copy-mode export extracts an archive the container made.

``export_workspace`` fetched the container's workspace with ``get_archive`` and
extracted it with ``tarfile``'s ``data`` filter. That filter judges each member
by ``os.path.realpath`` of its path and then creates the member *by path*; on
Python 3.11.7 a chain of symlinks longer than ``PATH_MAX`` is left unresolved by
``realpath`` (CVE-2025-4517) and the extraction writes outside the destination.
Docker's walk of a running container can also be raced (a symlink ``./d``, then
members below it). The archive is fed here through a stand-in for the docker
client's ``get_archive`` (hand-crafted hostile streams), and once through a real
container.
"""

from __future__ import annotations

import io
import os
import stat
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
from tests._docker_support import BUSYBOX, config, policy, require_docker


class _Api:
    def __init__(self, archive: bytes) -> None:
        self.archive = archive

    def get_archive(self, cid: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        data = self.archive
        return iter([data[i : i + 7000] for i in range(0, len(data), 7000)]), {}


class _Client:
    """What `export_workspace` uses of a docker client: ``api.get_archive``."""

    def __init__(self, archive: bytes) -> None:
        self.api = _Api(archive)


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, *, link: str = "", mode: int = 0o644
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = mode
    return info


def _export(archive: bytes, dest: Path, **kw: Any) -> None:
    export_workspace(cast(Any, _Client(archive)), "cid", "/workspace", dest, **kw)


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``(dest, outside)``: the export's destination and a sibling directory it must never touch."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "flag").write_text("original\n")
    return tmp_path / "dest", outside


def test_the_cve_2025_4517_chain_writes_nothing_outside(layout: tuple[Path, Path]) -> None:
    """Directories of 247-character names and one-letter symlinks to them: the final link's
    resolved path passes ``PATH_MAX``, realpath gives up, and ``escape`` (-> the link's ``..``)
    led out of the destination, where a hard link and a file were written."""
    dest, outside = layout
    dest.mkdir()
    comp, steps, path = "d" * 247, "abcdefghijklmnop", ""
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    for step in steps:
        members.append((_member(os.path.join(path, comp), tarfile.DIRTYPE, mode=0o777), None))
        members.append((_member(os.path.join(path, step), tarfile.SYMTYPE, link=comp), None))
        path = os.path.join(path, comp)
    linkpath = os.path.join(*steps, "l" * 254)
    members.append((_member(linkpath, tarfile.SYMTYPE, link=os.path.join(*[".."] * len(steps))), None))
    members.append((_member("escape", tarfile.SYMTYPE, link=os.path.join(linkpath, "..")), None))
    members.append((_member("flaglink", tarfile.LNKTYPE, link="escape/outside/flag"), None))
    members.append((_member("flaglink"), b"overwritten\n"))
    members.append((_member("escape/outside/newfile"), b"planted\n"))
    with pytest.raises(WorkspaceExportError):
        _export(_tar(*members), dest)
    assert (outside / "flag").read_text() == "original\n"
    assert not (outside / "newfile").exists()
    assert not (dest.parent / "newfile").exists()


@pytest.mark.parametrize("target", ["sub", "../outside", "/tmp"])
def test_members_below_a_symlink_are_refused(layout: tuple[Path, Path], target: str) -> None:
    """The raced shape: docker archived ``d`` as a symlink, then files it had listed below ``d``."""
    dest, outside = layout
    archive = _tar(
        (_member("./sub", tarfile.DIRTYPE, mode=0o755), None),
        (_member("./d", tarfile.SYMTYPE, link=target), None),
        (_member("./d/flag"), b"overwritten\n"),
        (_member("./d/new"), b"planted\n"),
    )
    with pytest.raises(WorkspaceExportError, match="d/flag"):
        _export(archive, dest)
    assert (outside / "flag").read_text() == "original\n"
    assert not (outside / "new").exists() and not (dest / "sub" / "new").exists()
    assert not (dest / "d").exists() or (dest / "d").is_symlink()


@pytest.mark.parametrize(
    "name", ["../outside/flag", "sub/../../outside/flag", "/OUTSIDE/flag", "./../outside/new"]
)
def test_names_leaving_the_destination_are_refused(layout: tuple[Path, Path], name: str) -> None:
    dest, outside = layout
    name = name.replace("/OUTSIDE", str(outside))
    archive = _tar((_member("sub", tarfile.DIRTYPE), None), (_member(name), b"overwritten\n"))
    with pytest.raises(WorkspaceExportError):
        _export(archive, dest)
    assert (outside / "flag").read_text() == "original\n" and not (outside / "new").exists()
    assert _tree(dest) == {"sub"}


@pytest.mark.parametrize("link", ["/etc/passwd", "OUTSIDE/flag", "../outside/flag"])
def test_hard_links_to_files_outside_are_refused(layout: tuple[Path, Path], link: str) -> None:
    """A hard link to a host file, then a regular member of the same name: written through the
    link, the host file would change."""
    dest, outside = layout
    link = link.replace("OUTSIDE", str(outside))
    members: list[tuple[tarfile.TarInfo, bytes | None]] = [(_member("h", tarfile.LNKTYPE, link=link), None)]
    if link != "/etc/passwd":
        members.append((_member("h"), b"overwritten\n"))
    with pytest.raises(WorkspaceExportError, match="hard link"):
        _export(_tar(*members), dest)
    assert (outside / "flag").read_text() == "original\n"
    passwd = os.stat("/etc/passwd")
    for entry in dest.rglob("*"):
        assert (entry.lstat().st_dev, entry.lstat().st_ino) != (passwd.st_dev, passwd.st_ino)


def test_a_hard_link_to_a_member_is_kept(layout: tuple[Path, Path]) -> None:
    dest, _ = layout
    _export(_tar((_member("./a"), b"data\n"), (_member("./b", tarfile.LNKTYPE, link="./a"), None)), dest)
    assert (dest / "b").read_text() == "data\n"
    # Kept as a copy since round 13: never two names of one inode on the host.
    assert not os.path.samefile(dest / "a", dest / "b")


def test_special_files_and_privilege_bits_do_not_come_out(layout: tuple[Path, Path]) -> None:
    dest, _ = layout
    archive = _tar(
        (_member("suid", mode=0o6777), b"#!/bin/sh\n"),
        (_member("shared", mode=0o666), b"x\n"),
        (_member("dir", tarfile.DIRTYPE, mode=0o3777), None),
        (_member("dev", tarfile.CHRTYPE), None),
        (_member("fifo", tarfile.FIFOTYPE), None),
        (_member("blk", tarfile.BLKTYPE), None),
    )
    with pytest.raises(WorkspaceExportError, match="fifo"):
        _export(archive, dest)
    assert _tree(dest) == {"suid", "shared", "dir"}
    assert stat.S_IMODE((dest / "suid").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "shared").stat().st_mode) == 0o644
    assert stat.S_IMODE((dest / "dir").stat().st_mode) == 0o755


def test_an_archive_over_the_size_bound_stops(layout: tuple[Path, Path]) -> None:
    dest, _ = layout
    archive = _tar((_member("big"), b"x" * 200_000), (_member("after"), b"y\n"))
    with pytest.raises(WorkspaceExportError, match="larger than"):
        _export(archive, dest, max_bytes=100_000)
    assert not (dest / "after").exists()


def test_a_huge_extended_header_is_not_read_into_memory(layout: tuple[Path, Path]) -> None:
    dest, _ = layout
    archive = _tar((_member("a"), b"a\n"), (_member("pax", tarfile.XHDTYPE), b"9 a=b\n" * 400_000))
    with pytest.raises(WorkspaceExportError, match="extended header"):
        _export(archive, dest)


def test_symlinks_are_created_as_links_and_never_followed(layout: tuple[Path, Path]) -> None:
    """An existing symlink at a member's name is replaced, never written through."""
    dest, outside = layout
    dest.mkdir()
    (dest / "f").symlink_to(outside / "flag")
    archive = _tar(
        (_member("lib", tarfile.DIRTYPE), None),
        (_member("lib/x"), b"x\n"),
        (_member("link", tarfile.SYMTYPE, link="lib/x"), None),
        (_member("lib/up", tarfile.SYMTYPE, link="../link"), None),
        (_member("f"), b"overwritten\n"),
    )
    _export(archive, dest)
    assert (outside / "flag").read_text() == "original\n"
    assert not (dest / "f").is_symlink() and (dest / "f").read_text() == "overwritten\n"
    assert os.readlink(dest / "link") == "lib/x" and (dest / "lib" / "up").read_text() == "x\n"


async def _sh(backend: DockerBackend, script: str) -> str:
    proc = await backend.exec(ExecRequest(argv=("sh", "-c", script), cwd="/workspace", merge_stderr=True))
    out = b""
    try:
        while True:
            out += await proc.stdout.receive()
    except anyio.EndOfStream:
        pass
    status = await proc.wait()
    assert status.exit_code == 0, out
    return out.decode()


@pytest.mark.anyio
@pytest.mark.docker
async def test_a_real_container_export_round_trips(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README").write_text("original\n")
    dest = tmp_path / "out"
    async with DockerBackend(config(BUSYBOX, workspace_mode="copy"), policy(ws)) as backend:
        await _sh(
            backend,
            "mkdir -p src/deep && echo code > src/deep/main.c && echo run > tool && chmod 777 tool"
            " && ln -s deep/main.c src/link && ln src/deep/main.c hard && chmod 777 src"
            " && echo changed > README",
        )
        await backend.export_workspace(dest)
        assert (dest / "README").read_text() == "changed\n"
        assert (dest / "src" / "deep" / "main.c").read_text() == "code\n"
        assert os.readlink(dest / "src" / "link") == "deep/main.c"
        assert (dest / "hard").read_text() == "code\n"  # a copy since round 13
        assert not os.path.samefile(dest / "hard", dest / "src" / "deep" / "main.c")
        assert stat.S_IMODE((dest / "tool").stat().st_mode) == 0o755
        assert stat.S_IMODE((dest / "src").stat().st_mode) == 0o755
        await _sh(backend, "ln -s /etc/passwd abs")
        with pytest.raises(WorkspaceExportError, match="abs"):
            await backend.export_workspace(tmp_path / "out2")
        assert (tmp_path / "out2" / "README").read_text() == "changed\n"
        assert not (tmp_path / "out2" / "abs").exists() and not (tmp_path / "out2" / "abs").is_symlink()
    assert (ws / "README").read_text() == "original\n"
