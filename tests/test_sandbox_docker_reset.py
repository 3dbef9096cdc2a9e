"""Recycling a docker container between tasks: the host-side verifier (crafted data) and real resets."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker._reset import (
    empty_dir,
    inspect_container,
    parse_mountinfo,
    parse_reset_reply,
    parse_status,
)
from tests.conftest import require

# The mounts of a real shellrt container on this machine (cgroup v1 host), trimmed.
MOUNTINFO = """\
206 180 0:48 / / ro,relatime master:3 - overlay overlay rw,lowerdir=/l
207 206 0:58 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
208 206 0:59 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
209 208 0:60 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5,mode=620,ptmxmode=666
210 206 0:61 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
211 210 0:62 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
212 211 0:29 /docker/ff56 /sys/fs/cgroup/cpu ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu
219 211 0:36 /docker/ff56 /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,pids
221 208 0:57 / /dev/mqueue rw,nosuid,nodev,noexec,relatime - mqueue mqueue rw
222 208 0:63 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k
223 206 254:0 /usr/bin/tini-static /usr/sbin/docker-init ro,relatime - ext4 /dev/vda rw
224 206 254:0 /tmp/shellrt-docker-nj4f2kmh/io /.shellrt-io rw,relatime - ext4 /dev/vda rw
225 206 254:0 /tmp/shellrt-docker-nj4f2kmh/workspace /workspace rw,relatime - ext4 /dev/vda rw
226 206 0:64 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=262144k
227 206 0:65 / /.shellrt-priv rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=1024k,mode=711
229 206 254:0 /var/lib/docker/containers/ff56/hosts /etc/hosts ro,relatime - ext4 /dev/vda rw
46 207 0:58 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw
50 207 0:59 /null /proc/keys rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
"""
EXECUTOR_UID = 2147480001
EXECUTOR_CAPS = 0x801EA
STATUS = (
    f"Name:\tsh\nUid:\t{EXECUTOR_UID}\t{EXECUTOR_UID}\t{EXECUTOR_UID}\t{EXECUTOR_UID}\n"
    f"Gid:\t{EXECUTOR_UID}\t{EXECUTOR_UID}\t{EXECUTOR_UID}\t{EXECUTOR_UID}\nGroups:\t\n"
    "CapPrm:\t00000000000801ea\nCapEff:\t00000000000801ea\n"
)
EXECUTOR_PID = 9


def _fake_root(tmp_path: Path) -> Path:
    """A container tree as the host sees it through /proc/<pid>/root: pristine, owned by root."""
    root = tmp_path / "root"
    for d in (
        "proc/1",
        f"proc/{EXECUTOR_PID}",
        "dev/pts",
        "dev/shm",
        "dev/mqueue",
        "sys/fs/cgroup/cpu",
        "sys/fs/cgroup/pids",
        ".shellrt-io",
        "workspace",
        "tmp",
    ):
        (root / d).mkdir(parents=True)
    (root / "dev/fd").symlink_to("/proc/self/fd")
    (root / "sys/fs/cgroup/cpuacct").symlink_to("cpu")
    for name in ("executor.sh", "priv"):
        (root / ".shellrt-io" / name).write_text("")
    priv = root / ".shellrt-priv"
    priv.mkdir()
    os.chown(priv, EXECUTOR_UID, EXECUTOR_UID)
    priv.chmod(0o711)
    for top in (root, root / "dev", root / ".shellrt-io", root / "sys/fs/cgroup"):
        top.chmod(0o755)
    return root


def _inspect(
    root: Path, mountinfo: str = MOUNTINFO, status: str = STATUS, user: tuple[int, int] = (65534, 65534)
) -> list[str]:
    return inspect_container(
        root,
        mountinfo=mountinfo,
        status=status,
        executor_pid=EXECUTOR_PID,
        executor_uid=EXECUTOR_UID,
        executor_caps=EXECUTOR_CAPS,
        command_user=user,
        workspace="/workspace",
        io_mount="/.shellrt-io",
        io_entries={"executor.sh", "priv"},
        private_dir="/.shellrt-priv",
    )


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    require(os.geteuid() == 0, "the verifier test builds a tree owned by root and by uid 65534 (run as root)")
    return _fake_root(tmp_path)


# --------------------------------------------------------------------------- parsing
def test_mountinfo_parsing_unescapes_and_rejects_garbage() -> None:
    [mount] = parse_mountinfo("30 1 0:5 /a\\040b /mnt/with\\040space rw,relatime shared:1 - ext4 /dev/x rw\n")
    assert mount.mount_point == "/mnt/with space" and mount.root == "/a b"
    assert mount.fstype == "ext4" and mount.writable
    [ro_sb] = parse_mountinfo("31 1 0:5 / /m rw - ext4 /dev/x ro,errors=continue\n")
    assert not ro_sb.writable  # read-only super block
    with pytest.raises(ValueError):
        parse_mountinfo("not a mountinfo line\n")


def test_reset_reply_problems() -> None:
    assert parse_reset_reply("1 0 1") == []
    assert parse_reset_reply("100 1 1") == ["processes survived kill -KILL -1"]
    assert "could not empty" in parse_reset_reply("1 0 0")[0]
    assert "malformed" in parse_reset_reply("1 0 1 0 0 0")[0]


def test_status_parsing() -> None:
    who = parse_status(STATUS)
    assert who.uid == EXECUTOR_UID and who.gid == EXECUTOR_UID and who.cap_eff == EXECUTOR_CAPS
    with pytest.raises(ValueError):
        parse_status("Name:\tsh\n")


# --------------------------------------------------------------------------- verdicts
def test_pristine_container_passes(fake_root: Path) -> None:
    assert _inspect(fake_root) == []


def test_leftovers_in_wiped_places_and_workspace_are_caught(fake_root: Path) -> None:
    (fake_root / "tmp/x").write_text("x")
    (fake_root / "dev/shm/y").write_text("y")
    (fake_root / "workspace/z").write_text("z")
    (fake_root / ".shellrt-priv/7.cwd").write_text("/forged")
    problems = " | ".join(_inspect(fake_root))
    assert "/tmp/x survived" in problems and "/dev/shm/y survived" in problems
    assert "/.shellrt-priv/7.cwd survived" in problems  # the private dir must be empty
    (fake_root / ".shellrt-priv/7.cwd").unlink()
    (fake_root / ".shellrt-priv").chmod(0o1777)
    assert "no longer the executor's private tmpfs" in " | ".join(_inspect(fake_root))
    assert "workspace /workspace is not empty" in problems


def test_surviving_process_and_root_or_capabilities_are_caught(fake_root: Path) -> None:
    (fake_root / "proc/42").mkdir()
    assert any("processes still running" in p and "42" in p for p in _inspect(fake_root))
    (fake_root / "proc/42").rmdir()
    assert any("commands run as root" in p for p in _inspect(fake_root, user=(0, 0)))
    other = STATUS.replace(f"Uid:\t{EXECUTOR_UID}\t", "Uid:\t0\t")
    assert any("no longer uid" in p for p in _inspect(fake_root, status=other))
    with_caps = STATUS.replace("CapEff:\t00000000000801ea", "CapEff:\t00000000a80425fb")
    assert any("capabilities" in p for p in _inspect(fake_root, status=with_caps))
    assert _inspect(fake_root, status="garbage") != []


def test_unknown_writable_mounts_make_the_container_unfit(fake_root: Path) -> None:
    # An image VOLUME: a writable directory the reset does not know how to wipe.
    volume = fake_root / "data"
    volume.mkdir()
    volume.chmod(0o777)
    with_volume = (
        MOUNTINFO + "300 206 254:0 /var/lib/docker/volumes/v/_data /data rw,relatime - ext4 /dev/vda rw\n"
    )
    assert any("/data" in p and "cannot be wiped" in p for p in _inspect(fake_root, with_volume))
    # Not writable at its top, but a plain subdirectory could hide writable places.
    volume.chmod(0o755)
    (volume / "sub").mkdir()
    assert any("directory /data/sub" in p for p in _inspect(fake_root, with_volume))
    # Owned by the container user: it could chmod it writable.
    (volume / "sub").rmdir()
    os.chown(volume, 65534, 65534)
    assert any("/data" in p for p in _inspect(fake_root, with_volume))
    # A plain directory under a writable /dev.
    (fake_root / "dev/extra").mkdir()
    assert any("directory /dev/extra" in p for p in _inspect(fake_root))
    (fake_root / "dev/extra").rmdir()
    # A writable mount the host cannot even look at.
    missing = MOUNTINFO + "301 206 254:0 / /nowhere rw - ext4 /dev/vda rw\n"
    assert any("/nowhere" in p for p in _inspect(fake_root, missing))
    assert any("malformed" in p for p in _inspect(fake_root, "bad line\n"))


def test_io_directory_must_hold_only_shellrt_files(fake_root: Path) -> None:
    (fake_root / ".shellrt-io/planted").write_text("")
    assert any("unexpected entries in /.shellrt-io" in p for p in _inspect(fake_root))
    (fake_root / ".shellrt-io/planted").unlink()
    (fake_root / ".shellrt-io").chmod(0o777)
    assert any("writable by the container user" in p for p in _inspect(fake_root))


def test_empty_dir_removes_everything_without_following_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("k")
    ws = tmp_path / "ws"
    (ws / "deep/er").mkdir(parents=True)
    (ws / "deep/er/f").write_text("f")
    (ws / "deep").chmod(0o000)
    (ws / "link").symlink_to(outside)
    (ws / ".hidden").write_text("h")
    os.mkfifo(ws / "fifo")
    empty_dir(str(ws))
    assert os.listdir(ws) == [] and (outside / "keep").read_text() == "k"


# --------------------------------------------------------------------------- real containers


async def _sh(backend: object, command: str) -> str:
    from sandbox.docker import DockerBackend

    assert isinstance(backend, DockerBackend)
    return await backend.run_capture(["sh", "-c", command], cwd="/workspace")


@pytest.mark.docker
@pytest.mark.anyio
async def test_reset_kills_escaped_processes_and_wipes_everything(tmp_path: Path) -> None:
    from sandbox.docker import DockerBackend
    from tests._docker_support import config, policy, require_docker, reset_workspaces

    require_docker()
    first, second = reset_workspaces(tmp_path)
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        # Still running at the reset (a command's leftovers die with it when it ends on its own).
        task = await backend.exec(
            ExecRequest(
                argv=(
                    "sh",
                    "-c",
                    "echo x >/tmp/x; echo y >/dev/shm/y; echo z >/workspace/z; mkdir -p /tmp/locked/in;"
                    " chmod 000 /tmp/locked;"
                    " (setsid sleep 1000 </dev/null >/dev/null 2>&1 &);"
                    " (nohup sleep 1001 </dev/null >/dev/null 2>&1 &);"
                    " (sh -c '(sleep 1002 </dev/null >/dev/null 2>&1 &)' &);"
                    # No SysV ids (round 41: a task that allocates any is refused a successor,
                    # test_redteam_round41_docker4_ipcids.py); their removal: the test below.
                    " echo ready; sleep 1003",
                ),
                cwd="/workspace",
                env={"PATH": "/usr/bin:/bin"},
            )
        )
        assert (await task.stdout.receive()) == b"ready\n"
        before = await _sh(backend, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; wc -l </proc/sysvipc/shm")
        assert "sleep 1000" in before and "sleep 1001" in before and "sleep 1002" in before
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(second))
        assert backend.resets == 1
        after = await _sh(
            backend,
            # /dev/shm is 1733 (round 30): no command lists it; the object is looked for by name.
            "ls -A /tmp /dev/mqueue /workspace; [ -e /dev/shm/y ] && echo shm-y-\"\"left;"
            " cat /proc/[0-9]*/cmdline | tr '\\0' ' ';"
            " cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem | wc -l",
        )
        assert "sleep 100" not in after
        assert "/tmp:\n\n" in after and "shm-y-left" not in after
        assert "/workspace:\nmine.txt\n" in after
        assert after.rstrip().endswith("3")  # three header lines, no IPC object
        assert not any(p.name == "z" for p in backend.to_host_path("/workspace").iterdir())  # type: ignore[union-attr]
        # The next task's commands run normally.
        proc = await backend.exec(
            ExecRequest(argv=("cat", "mine.txt"), cwd="/workspace", env={"PATH": "/usr/bin:/bin"})
        )
        assert (await proc.stdout.receive()) == b"second\n"
        assert (await proc.wait()).exit_code == 0


@pytest.mark.docker
@pytest.mark.anyio
async def test_reset_fails_closed_when_the_container_cannot_be_trusted(tmp_path: Path) -> None:
    from sandbox.docker import DockerBackend, ResetError
    from tests._docker_support import config, policy, require_docker

    require_docker()
    # A container killed during the task: the reset must refuse it.
    async with DockerBackend(config(), policy(tmp_path)) as backend:
        await backend.protect_executor()
        assert backend.container_id is not None
        subprocess.run(["docker", "kill", backend.container_id], capture_output=True, timeout=60)
        with anyio.fail_after(30), pytest.raises(ResetError):
            await backend.reset()
    # An executor whose identity was not verified from the host is never recycled.
    async with DockerBackend(config(), policy(tmp_path)) as unprotected:
        with pytest.raises(ResetError, match="not verified"):
            await unprotected.reset()
    # Bind mode and root users are never recycled.
    async with DockerBackend(config(workspace_mode="bind"), policy(tmp_path)) as bind:
        assert "bind mode" in (bind.reuse_blocker() or "")
        with pytest.raises(ResetError, match="bind mode"):
            await bind.reset()
    async with DockerBackend(config(user="0:0"), policy(tmp_path)) as as_root:
        assert as_root.reuse_blocker() == "runs as root"


@pytest.mark.docker
@pytest.mark.anyio
@pytest.mark.parametrize("image", ["debian", "busybox"])
async def test_protected_executor_is_out_of_the_commands_reach(tmp_path: Path, image: str) -> None:
    """The executor runs under its own uid with capabilities the commands lack: its memory is closed to them."""
    from sandbox.docker import DockerBackend
    from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker

    require_docker()
    async with DockerBackend(config(DEBIAN if image == "debian" else BUSYBOX), policy(tmp_path)) as backend:
        probe = f"(exec 3<>/proc/{backend.executor_pid}/mem && echo WRITABLE) 2>/dev/null; echo done"
        assert await _sh(backend, probe) == "done\n"
        await backend.protect_executor()
        assert backend.reuse_blocker() is None
        await backend.reset()
        assert await _sh(backend, "echo still works") == "still works\n"


# --------------------------------------------------------------------------- outside checks
def test_diff_allows_only_mount_points() -> None:
    from sandbox.docker._reset import diff_problems

    allowed = {"/", "/tmp", "/sbin", "/sbin/docker-init"}
    assert (
        diff_problems([{"Path": "/tmp", "Kind": 0}, {"Path": "/sbin/docker-init", "Kind": 1}], allowed) == []
    )
    problems = diff_problems([{"Path": "/etc/profile", "Kind": 0}, {"Path": "/tmp", "Kind": 0}], allowed)
    assert problems and "/etc/profile" in problems[0]


def test_listening_sockets_are_seen_from_outside() -> None:
    """Read through /proc/<pid>/net of a process (here: this one, in the host's namespace)."""
    import socket

    from sandbox.docker._reset import open_sockets

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = f"{listener.getsockname()[1]:04X}"
        assert any("listening" in p and port in p for p in open_sockets(f"/proc/{os.getpid()}"))


def test_executor_environment_must_be_what_shellrt_gave_it(tmp_path: Path) -> None:
    import subprocess
    import time

    from sandbox.docker._reset import environment_problems

    proc = subprocess.Popen(["/bin/sleep", "30"], env={"PATH": "/bin", "SHELLRT_PLANTED": "1"})
    try:
        for _ in range(100):  # until the child has exec'd (Popen may return before)
            with open(f"/proc/{proc.pid}/environ", "rb") as fh:
                if fh.read():
                    break
            time.sleep(0.02)
        problems = environment_problems(f"/proc/{proc.pid}", {"PATH": "/bin"})
        assert problems == ["unexpected executor environment entry SHELLRT_PLANTED"]
        assert environment_problems(f"/proc/{proc.pid}", {"PATH": "/bin", "SHELLRT_PLANTED": "1"}) == []
    finally:
        proc.kill()
        proc.wait()


def test_sysv_objects_are_counted_and_removed_in_the_target_namespace() -> None:
    """A process in a fresh IPC namespace: its objects are counted and removed by the host, not ours."""
    import subprocess

    from sandbox.docker._pidref import pid_ref
    from sandbox.docker._reset import sysv_ipc_objects

    require(os.geteuid() == 0, "joining another IPC namespace needs root")
    proc = subprocess.Popen(
        ["unshare", "--ipc", "sh", "-c", "ipcmk -M 4096 >/dev/null && ipcmk -Q >/dev/null && exec sleep 30"]
    )
    ref = pid_ref(proc.pid, lambda p: True, "the test's unshare")
    try:
        deadline = 50
        counts: dict[str, int] = {}
        while deadline:
            counts = sysv_ipc_objects(ref)
            if counts.get("shm") == 1 and counts.get("msg") == 1:
                break
            import time

            time.sleep(0.1)
            deadline -= 1
        assert counts == {"shm": 1, "msg": 1, "sem": 0}
        assert sysv_ipc_objects(ref, remove=True) == {"shm": 0, "msg": 0, "sem": 0}
    finally:
        os.close(ref.pidfd)
        proc.kill()
        proc.wait()
