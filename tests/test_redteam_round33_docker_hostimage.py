"""Red team round 33, docker: a hostile image's executor left set-id and foreign-owned files on the host.

The executor is a script the image's own ``/bin/sh`` interprets, as ``EXECUTOR_UID`` with the
executor's ambient capabilities (``CHOWN``, ``DAC_OVERRIDE``, ``FOWNER``, ``SETUID``, ...) in the
host's user namespace. Earlier rounds said such an image "only has its own tasks at its mercy".
Not so in bind mode: before the host idmapped the workspace (after the hello) the image's shell
held the plain bind of the caller's directory (and kept it as its cwd afterwards): it read another
host user's 0600 file there (commands get its "other" bits only) and made a
set-uid-root copy of a program there, a root-owned directory the owner cannot empty and files of
the executor's uid, all on the host. Now the executor shell starts only once the host has set the
container up (the idmap included) and outside the workspace, and runs under the set-id filter.

Before any of that, docker (runc) makes shellrt's mount points as root through the image's own
symbolic links: ``/.shellrt-tmp`` linked to ``/workspace/deep/er`` made ``deep/er/0``-``15``,
root's, in the caller's directory. Such an image is refused before its start now.

The same window held ``network: bridge`` before its firewall (documented as "a few ms, only the
image's own /bin/sh"): that shell reached a service on the docker host's gateway address.

Real containers of a locally built busybox image (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, build_image, config, managed_container_ids, policy, run_argv
from tests._http_server import serve
from tests._rt11_hostile import build_hostile
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: What the image's shell tries before it runs the real executor, through its cwd (the workspace
#: mount it started in) and by the workspace's path; every failure is ignored.
_PLANT = r"""
for d in . /workspace /proc/1/cwd; do
  t=$d/rt33-$(echo "$d" | /bin/busybox tr -dc a-z)
  /bin/busybox cp /bin/busybox "$t-suid"; /bin/busybox chmod 4755 "$t-suid"
  /bin/busybox cp /bin/busybox "$t-rootsuid"; /bin/busybox chown 0:0 "$t-rootsuid"; /bin/busybox chmod 6755 "$t-rootsuid"
  /bin/busybox mkdir "$t-rootdir"; /bin/busybox touch "$t-rootdir/f"; /bin/busybox chown -R 0:0 "$t-rootdir"
  /bin/busybox mkdir "$t-own"; /bin/busybox touch "$t-own/f"
done 2>/dev/null
# After the idmap the executor's own uid creates nothing there, but FOWNER and DAC_OVERRIDE still
# reach the owner's files: a program written over one and made set-uid (the owner's, on the host).
/bin/busybox cp /bin/busybox /workspace/kept.txt 2>/dev/null; /bin/busybox chmod 4755 /workspace/kept.txt 2>/dev/null
# Another host user's 0600 file in the workspace (commands get its "other" bits only), kept in /tmp.
/bin/busybox cat ./theirs.txt /workspace/theirs.txt /proc/1/cwd/theirs.txt >/tmp/rt33-theirs 2>/dev/null; /bin/busybox chmod 644 /tmp/rt33-theirs
"""

_OWNER = (4321, 4321)


async def test_a_hostile_image_leaves_no_set_id_or_foreign_file_in_a_bind_workspace(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "bind mode idmaps the workspace only on a root host")
    image = build_hostile("shellrt-test-rt33-plant", pre=_PLANT)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kept.txt").write_text("mine\n")
    for path in (ws, ws / "kept.txt"):
        os.chown(path, *_OWNER)
    ws.chmod(0o755)
    theirs = ws / "theirs.txt"
    theirs.write_text("their-secret\n")
    os.chown(theirs, 999, 999)
    theirs.chmod(0o600)
    async with DockerBackend(config(image, workspace_mode="bind"), policy(ws)) as backend:
        # No command needs to run: the executor's own start is the attack. This one shows what it read.
        read = await run_argv(backend, "/bin/busybox", "cat", "/tmp/rt33-theirs")
    assert "their-secret" not in read, f"the image's executor read another host user's file: {read!r}"
    st = theirs.lstat()
    assert (st.st_uid, st.st_mode) == (999, 0o100600), (st.st_uid, oct(st.st_mode))
    found = {}
    for path in [ws, *sorted(p for p in ws.rglob("*") if p != theirs)]:
        st = path.lstat()
        if st.st_mode & 0o6000 or (st.st_uid, st.st_gid) != _OWNER:
            found[str(path.relative_to(tmp_path))] = (oct(st.st_mode), st.st_uid, st.st_gid)
    assert found == {}, f"the image's executor left on the host (mode, uid, gid): {found}"


#: The image's shell, at its start: an HTTP GET to the host and port the workspace names, its answer
#: kept in /tmp for a command to show.
_REACH = r"""
read -r h p </workspace/rt33-target 2>/dev/null
[ -n "$p" ] && printf 'GET / HTTP/1.0\r\n\r\n' | /bin/busybox nc -w 2 "$h" "$p" >/tmp/rt33-net 2>&1
"""


async def test_a_hostile_image_reaches_no_host_service_before_the_bridge_firewall(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "network 'bridge' needs a root host")
    image = build_hostile("shellrt-test-rt33-reach", pre=_REACH)
    gateway = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format", "{{(index .IPAM.Config 0).Gateway}}"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout.strip()  # fmt: skip
    with serve(
        {"/": (200, {"Content-Type": "text/plain"}, b"host-service-secret")}, host="0.0.0.0"
    ) as server:
        (tmp_path / "rt33-target").write_text(f"{gateway} {server.server_address[1]}\n")
        async with DockerBackend(config(image), policy(tmp_path, network="bridge")) as backend:
            seen = await run_argv(backend, "/bin/busybox", "cat", "/tmp/rt33-net")
    assert "host-service-secret" not in seen, (
        f"the image's shell reached the host before the firewall: {seen!r}"
    )


async def test_a_hostile_image_links_no_mount_point_into_a_bind_workspace(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "bind mode idmaps the workspace only on a root host")
    image = build_image(
        "shellrt-test-rt33-slotlink",
        f'FROM {BUSYBOX}\nRUN ["/bin/busybox", "ash", "-c", "rm -rf /.shellrt-tmp; ln -s /workspace/deep/er /.shellrt-tmp"]\n',
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, *_OWNER)
    before = managed_container_ids(owner_pid=os.getpid())
    backend = DockerBackend(config(image, workspace_mode="bind"), policy(ws))
    try:
        with pytest.raises(BackendUnavailableError, match="/.shellrt-tmp is a symbolic link"):
            await backend.start()
    finally:
        await backend.close()
    # Before: deep/er/0..15, root's, which uid 4321 cannot remove.
    assert [(p.name, p.lstat().st_uid) for p in ws.rglob("*")] == []
    assert managed_container_ids(owner_pid=os.getpid()) <= before
