"""Red team round 8, docker bind mode: a root-owned workspace no longer makes commands uid 0.

Bind mode used to run commands as the workspace's owner; for a root-owned workspace (any
directory root made: CI checkouts, /srv, a root caller's temp dir) that was uid 0 in a
container that shares the host's user namespace. Without capabilities, but still host root's
uid: it could signal docker-init (which forwards to the executor), owned /tmp, /dev/shm and
every root-owned file of the image, and its kernel per-user counts (inotify instances,
message-queue bytes) were host root's, shared with dockerd, systemd and shellrt itself.

Now a root host leases the session a uid in bind mode too and mounts the workspace into the
container *idmapped* (the owner's files appear as the leased uid's, what it creates lands on
disk as the owner's), as bwrap does. Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox._uid_lease import DEFAULT_POOL_SIZE, DEFAULT_POOL_START
from sandbox.base import ExecRequest
from sandbox.docker import DockerBackend
from shellrt.supervisor import Supervisor
from tests._docker_support import DEBIAN, config, policy, require_docker
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture
def root_host() -> None:
    require_docker()
    require(os.geteuid() == 0, "a root-owned bind workspace is a root host's (CI runs as root)")


async def _run(sup: Supervisor, command: str) -> tuple[int | None, str]:
    result = await sup.run(command, timeout_s=60)
    return result.exit_code, result.preview.strip()


@pytest.fixture
async def bound(tmp_path: Path, root_host: None) -> AsyncIterator[tuple[DockerBackend, Supervisor, Path]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "owned.txt").write_text("root's file\n")
    backend = DockerBackend(config(DEBIAN, workspace_mode="bind"), policy(ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        yield backend, sup, ws


async def test_a_root_owned_bind_workspace_runs_commands_as_a_leased_uid(
    bound: tuple[DockerBackend, Supervisor, Path],
) -> None:
    backend, sup, ws = bound
    assert os.stat(ws).st_uid == 0
    code, out = await _run(sup, "id -u; id -g")
    assert code == 0, out
    uid, gid = (int(v) for v in out.split())
    assert uid != 0 and gid != 0, "bind mode ran commands as host root's uid"
    assert DEFAULT_POOL_START <= uid < DEFAULT_POOL_START + DEFAULT_POOL_SIZE
    assert backend.command_ids == (uid, gid)


async def test_the_leased_uid_holds_no_root_power_in_the_container(
    bound: tuple[DockerBackend, Supervisor, Path],
) -> None:
    """What uid 0 could do without capabilities: signal docker-init, write root's /tmp and
    /dev/shm entries, read the image's root-only files. None of it is left."""
    _, sup, _ = bound
    code, out = await _run(
        sup,
        "kill -0 1 2>/dev/null && echo signal-init;"
        " cat /root/.bashrc >/dev/null 2>&1 && echo read-root-home;"
        " [ -O /tmp ] && echo owns-tmp; [ -O /dev/shm ] && echo owns-shm; true",
    )
    assert code == 0, out
    assert out == "", f"the command still had uid 0's powers: {out!r}"


async def test_the_workspace_stays_the_owners_on_disk(bound: tuple[DockerBackend, Supervisor, Path]) -> None:
    """The idmapped workspace: the owner's files are the command's to edit, and what it makes
    or changes is still the owner's on the host (nothing changes hands, nothing to restore)."""
    _, sup, ws = bound
    code, out = await _run(
        sup,
        "echo edited >> owned.txt && mkdir -p made/sub && echo new > made/sub/f && stat -c '%u' owned.txt made/sub/f",
    )
    assert code == 0, out
    uid = (await _run(sup, "id -u"))[1]
    assert out.split() == [uid, uid], out  # inside: the owner's files appear as the leased uid's
    assert (ws / "owned.txt").read_text() == "root's file\nedited\n"
    for path in (ws / "owned.txt", ws / "made", ws / "made/sub/f"):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (0, 0), (path, st.st_uid, st.st_gid)


async def test_another_owners_file_in_the_workspace_stays_read_only(
    bound: tuple[DockerBackend, Supervisor, Path],
) -> None:
    """A file of another host uid appears as the overflow uid: writable only as its mode lets others."""
    _, sup, ws = bound
    theirs = ws / "theirs.txt"
    theirs.write_text("someone else's\n")
    os.chown(theirs, 1000, 1000)
    theirs.chmod(0o644)
    code, out = await _run(sup, "echo x >> theirs.txt; cat theirs.txt; stat -c '%u' theirs.txt")
    assert "someone else's" in out and out.split()[-1] == "65534", out
    assert theirs.read_text() == "someone else's\n"
    assert code == 0


async def test_a_user_owned_bind_workspace_is_idmapped_too(tmp_path: Path, root_host: None) -> None:
    """Not only root: a workspace of host uid 1000 no longer shares that user's kernel limits."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 1000, 1000)
    backend = DockerBackend(config(DEBIAN, workspace_mode="bind"), policy(ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        code, out = await _run(sup, "id -u; touch made")
        assert code == 0, out
        assert int(out) not in (0, 1000)
        assert os.stat(ws / "made").st_uid == 1000


async def test_an_explicit_user_is_kept_as_asked(tmp_path: Path, root_host: None) -> None:
    """The operator's own choice (`DockerConfig.user`) is not overridden: no lease, no idmap."""
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = DockerBackend(config(DEBIAN, workspace_mode="bind", user="0:0"), policy(ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        code, out = await _run(sup, "id -u; grep CapEff /proc/self/status")
        assert code == 0, out
        assert out.split()[0] == "0" and out.split()[-1] == "0000000000000000", out


async def test_the_original_mount_below_is_out_of_reach(
    bound: tuple[DockerBackend, Supervisor, Path],
) -> None:
    """Held: docker-init and the executor keep their cwd on the original (not idmapped) mount
    below; `/proc/<pid>/cwd` of either needs ptrace access, which no command has."""
    backend, sup, _ = bound
    probe = f"for p in 1 {backend.executor_pid}; do ls /proc/$p/cwd/ >/dev/null 2>&1 && echo reached-$p; done; true"
    code, out = await _run(sup, probe)
    assert (code, out) == (0, ""), out


async def test_a_per_call_root_cannot_write_the_bound_workspace(
    bound: tuple[DockerBackend, Supervisor, Path],
) -> None:
    """Held: a per-call uid the idmap does not map (root included) creates nothing in the workspace
    (EOVERFLOW) and changes nothing of the owner's: host root's files are not its files any more."""
    backend, _, ws = bound
    proc = await backend.exec(
        ExecRequest(
            argv=("sh", "-c", "id -u; echo x > made-by-root; echo y >> owned.txt; ls"),
            cwd="/workspace",
            env={"PATH": "/usr/bin:/bin"},
            merge_stderr=True,
            user="root",
        )
    )
    chunks: list[bytes] = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await proc.stdout.receive())
    await proc.wait()
    out = b"".join(chunks).decode()
    assert out.startswith("0\n"), out
    assert not (ws / "made-by-root").exists(), out
    assert (ws / "owned.txt").read_text() == "root's file\n", out
