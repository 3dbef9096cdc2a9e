"""Red team round 20, docker: the classic container escapes, tried as a root and a leased command (held).

Each is a published escape from a container that keeps some privilege: cgroup v1 ``release_agent``
and ``notify_on_release`` (the host runs the agent as root when a cgroup empties), the kernel's
``core_pattern`` pipe handler, ``/proc/sysrq-trigger``, ``/sys/kernel/uevent_helper``,
``binfmt_misc`` interpreters, a block device made with ``mknod``, and the docker host's own
listeners through its gateway and addresses while the network is denied. On this host (20.10,
cgroup v1, runc) every one is refused: the cgroup mounts are ``ro`` (and ``/sys/fs/cgroup`` is in
``ReadonlyPaths``), ``/proc/sys`` and ``/sys`` are read-only, ``/proc/sysrq-trigger`` is masked,
``binfmt_misc`` is not mounted, commands hold no capability (``mknod`` needs ``CAP_MKNOD``; also
refused by seccomp), ``/dev`` holds no block device, and ``network: none`` leaves only ``lo``.
They passed before and after round 20; they guard the promises of docs/security.md ("What each
backend promises") against a change of the create call, the daemon or the seccomp filter. A host
TCP listener on every address counts the connections it got. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_ESCAPES = r"""
for c in /sys/fs/cgroup/*/; do
  echo /tmp/agent > ${c}release_agent; echo 1 > ${c}notify_on_release; mkdir ${c}x && echo "MADE $c"
done 2>/dev/null
grep -Ec ' cgroup2? ' /proc/self/mountinfo; grep -E ' cgroup2? ' /proc/self/mountinfo | grep -v ' /.shellrt-cmds ' | grep -vc ' ro,'
echo '|/tmp/handler %p' > /proc/sys/kernel/core_pattern 2>/dev/null && echo WROTE-core_pattern
echo h > /proc/sysrq-trigger 2>/dev/null && echo WROTE-sysrq
echo /tmp/handler > /sys/kernel/uevent_helper 2>/dev/null && echo WROTE-uevent
echo ':x:E::x::/tmp/handler:' > /proc/sys/fs/binfmt_misc/register 2>/dev/null && echo WROTE-binfmt
mknod /tmp/blk b 8 0 2>/dev/null && echo MADE-blk
mknod /tmp/mem c 1 1 2>/dev/null && echo MADE-mem
find /dev -type b | sed 's/^/BLOCK /'
tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sed 's/^/IF /'
for a in $ADDRS; do timeout 3 bash -c "echo x > /dev/tcp/$a/$PORT" 2>/dev/null && echo "REACHED $a"; done
echo done
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _host_addresses() -> list[str]:
    """The host's IPv4 addresses (docker0's gateway included), from ``ip``; at least the gateway."""
    found = {"172.17.0.1", "127.0.0.1"}
    out = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, timeout=10)
    for line in out.stdout.splitlines():
        words = line.split()
        if "inet" in words:
            found.add(str(ipaddress.ip_interface(words[words.index("inet") + 1]).ip))
    return sorted(found)


@contextmanager
def _counting_listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP listener on 0.0.0.0 (every host address); yields its port and the peers it accepted."""
    listener = socket.create_server(("0.0.0.0", 0))
    listener.settimeout(0.2)
    peers: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = listener.accept()
            except OSError:
                continue
            peers.append(str(peer[0]))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1]), peers
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.mark.parametrize("user", [None, "root"], ids=["leased", "root"])
async def test_classic_escapes_are_refused(tmp_path: Path, user: str | None) -> None:
    require_docker()
    core_pattern = Path("/proc/sys/kernel/core_pattern").read_text()
    addresses = _host_addresses()
    with _counting_listener() as (port, peers):
        async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
            script = f"ADDRS='{' '.join(addresses)}' PORT={port}\n{_ESCAPES}"
            with anyio.fail_after(60):
                rc, out = await run_sh(b, script, user=user)
    assert rc == 0 and out.rstrip().endswith("done"), out
    lines = out.splitlines()
    # cgroup mounts exist, none writable but the commands' own, whose files the executor's uid owns
    # (round 25: `test_redteam_round25_docker_oomscore.py` checks no command writes it)
    assert int(lines[0]) >= 1 and lines[1] == "0", out
    for word in ("MADE", "WROTE", "BLOCK", "REACHED"):
        assert not any(line.startswith(word) for line in lines), out
    assert [line for line in lines if line.startswith("IF ")] == ["IF lo"], out
    assert peers == [], peers
    assert Path("/proc/sys/kernel/core_pattern").read_text() == core_pattern


async def test_an_image_workdir_into_a_leaked_fd_is_not_obeyed(tmp_path: Path) -> None:
    """The "Leaky Vessels" escape (CVE-2024-21626) through the image: ``WORKDIR /proc/self/fd/7`` made runc
    start the container's process in a descriptor of the host's cgroup tree. The create names ``/``
    as the working directory (the image's is never used; commands start in the workspace), and a
    command's shell, root or leased, starts with exactly the descriptors the executor chose: 0 (``/dev/null``), 1 and 2 (its
    output FIFO in the I/O directory). Listed by a child (``ls``) while the shell waits, not by the
    shell's own glob or ``$(...)``: those list the shell's own directory descriptor and both ends of
    its command-substitution pipe (fds 3 and 4 seen when the child ran before the shell closed the
    write end; round 21's "Left": the old ``cd /proc/self/fd && echo fds $(ls)`` printed ``0 1 2 3 4`` in
    1,650 of 3,000 runs in a bare busybox container, no shellrt involved: benign)."""
    require_docker()
    tag = "shellrt-rt20-leaky"
    subprocess.run(
        ["docker", "build", "-q", "-t", tag, "-"],
        input=f"FROM {BUSYBOX}\nWORKDIR /proc/self/fd/7\n".encode(),
        capture_output=True,
        check=True,
        timeout=120,
    )
    try:
        async with DockerBackend(config(tag), policy(tmp_path)) as b:
            assert b.container_id is not None
            info = subprocess.run(
                ["docker", "inspect", b.container_id, "--format", "{{.Config.WorkingDir}}"],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
            # "/" since round 33 (the image's own WORKDIR is never used; the container's start cwd is
            # no longer the workspace, whose pre-idmap mount /proc/1/cwd led the executor to)
            assert info.stdout.strip() == "/", info.stdout
            for user in ("root", None):
                with anyio.fail_after(30):
                    rc, out = await run_sh(b, "pwd; ls -l /proc/$$/fd; echo end", user=user)
                lines = out.splitlines()
                assert rc == 0 and lines[0] == "/workspace" and lines[-1] == "end", out
                fds = {
                    ln.split(" -> ")[0].split()[-1]: ln.split(" -> ", 1)[1] for ln in lines if " -> " in ln
                }
                assert sorted(fds) == ["0", "1", "2"], out
                assert fds["0"] == "/dev/null", out
                assert fds["1"] == fds["2"] and re.fullmatch(
                    r"/\.shellrt-io/[0-9a-f]+\.out( \(deleted\))?", fds["1"]
                ), out
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)
