"""Red team, round 38 (novel2): a docker command evicting and probing the host's page cache.

The page cache is one per host, and a container's files are host files (a bind workspace, the
image's layers on the host's disk). Docker's default seccomp profile allows all four primitives of
the page-cache side channel (Gruss et al., CCS 2019): ``posix_fadvise(POSIX_FADV_DONTNEED)`` and
``madvise(MADV_PAGEOUT)`` drop a file's pages for every process, ``preadv2(RWF_NOWAIT)`` tells
cached from not without touching, ``cachestat`` counts them. Every docker command runs under
shellrt's own deny list as well (priv.c loads ``shellrt_command_filter``, generated from
`sandbox._seccomp`; the helper dies if the kernel refuses it), so the round-38 rules
(`sandbox._seccomp.PAGE_CACHE_ADVICE`) reach docker commands with it: advice a no-op, RWF_NOWAIT
EOPNOTSUPP, cachestat ENOSYS. A static probe built on the host, run in a real container (FAIL,
not skip, under CI=true); the host counts its cached pages of the file before and after.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, read_to_end, require_docker, start_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_SIZE = 8 << 20
_CACHESTAT = 451
_libc = ctypes.CDLL(None, use_errno=True)

_PROBE_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror("open"); return 2; }
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    printf("FADVISE %s\n", rc == 0 ? "ok" : strerrorname_np(rc));
    void *m = mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd, 0);
    printf("PAGEOUT %s\n", m != MAP_FAILED && madvise(m, 1 << 20, 21) == 0 ? "ok" : strerrorname_np(errno));
    char buf[4096];
    struct iovec io = {buf, sizeof buf};
    printf("NOWAIT %s\n", preadv2(fd, &io, 1, 0, RWF_NOWAIT) >= 0 ? "read" : strerrorname_np(errno));
    unsigned long long range[2] = {0, 0}, st[5];
    printf("CACHESTAT %s\n", syscall(451, fd, range, st, 0) == 0 ? "ok" : strerrorname_np(errno));
    return 0;
}
"""


def _cached_pages(path: Path) -> int:
    """How many of ``path``'s pages the host's page cache holds (``cachestat``, the host's own call)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        rng = (ctypes.c_uint64 * 2)(0, 0)
        out = ctypes.create_string_buffer(40)
        assert _libc.syscall(_CACHESTAT, fd, rng, out, 0) == 0, os.strerror(ctypes.get_errno())
        return int(struct.unpack("5Q", out.raw)[0])
    finally:
        os.close(fd)


def _build_probe(ws: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    require(cc is not None, "a C compiler (apt-get install gcc): the docker backend needs one anyway")
    assert cc is not None
    source = ws.parent / "probe.c"
    source.write_text(_PROBE_C)
    subprocess.run([cc, "-O2", "-static", "-o", str(ws / "probe"), str(source)], check=True, timeout=120)
    (ws / "probe").chmod(0o755)


async def test_a_docker_command_neither_evicts_nor_probes_the_hosts_page_cache(tmp_path: Path) -> None:
    """Without the round-38 rules in the command filter (the helper built from the deny list
    before them): the host's 2,048 cached pages fell to 0, ``FADVISE ok``, ``NOWAIT read``,
    ``CACHESTAT ok`` (1 of 1)."""
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    _build_probe(ws)
    target = ws / "shared"
    target.write_bytes(os.urandom(_SIZE))
    target.chmod(0o644)
    fd = os.open(target, os.O_RDONLY)
    os.fsync(fd)  # clean pages: DONTNEED drops only those
    os.close(fd)
    target.read_bytes()
    async with DockerBackend(config(DEBIAN, workspace_mode="bind"), policy(ws)) as b:
        before = _cached_pages(target)
        assert before >= _SIZE // 4096 * 9 // 10, before
        with anyio.fail_after(120):
            proc = await start_sh(b, "./probe shared")
            out = (await read_to_end(proc.stdout)).decode(errors="replace")
            await proc.wait()
        after = _cached_pages(target)
    said = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert after >= before * 9 // 10, f"the command evicted the host's cache: {before} -> {after} pages\n{out}"
    assert said.get("FADVISE") == "ok", out  # advice: a no-op that succeeds, callers carry on
    assert said.get("PAGEOUT") == "ok", out
    assert said.get("NOWAIT") == "EOPNOTSUPP", out
    assert said.get("CACHESTAT") == "ENOSYS", out


#: The hostile image's /bin/sh, as the executor (priv boot's identity, before any command): the
#: probe on the workspace's file, its answers left where a command reads them.
_EXECUTOR_PROBES = (
    'case $1 in *executor.sh) (/workspace/probe /workspace/shared > /tmp/.said 2>&1; '
    "chmod 644 /tmp/.said; mv /tmp/.said /tmp/said) & ;; esac"
)


async def test_a_hostile_images_executor_shell_neither_evicts_nor_probes(tmp_path: Path) -> None:
    """The executor is the image's own ``/bin/sh`` (round 33: image code with the executor's
    capabilities), under the set-id part of the filter alone, and Docker's default profile. Failed
    before: the host's 2,048 cached pages fell to 4, ``FADVISE ok``, ``NOWAIT EAGAIN``,
    ``CACHESTAT ok`` (1 of 1)."""
    from tests._rt11_hostile import build_hostile

    require_docker()
    image = build_hostile("shellrt-test-rt38-novel2-pagecache", pre=_EXECUTOR_PROBES)
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    _build_probe(ws)
    target = ws / "shared"
    target.write_bytes(os.urandom(_SIZE))
    target.chmod(0o644)
    fd = os.open(target, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    target.read_bytes()
    before = _cached_pages(target)
    assert before >= _SIZE // 4096 * 9 // 10, before
    async with DockerBackend(config(image, workspace_mode="bind"), policy(ws)) as b:
        with anyio.fail_after(120):
            proc = await start_sh(b, "while [ ! -e /tmp/said ]; do sleep 0.1; done; cat /tmp/said")
            out = (await read_to_end(proc.stdout)).decode(errors="replace")
            await proc.wait()
        after = _cached_pages(target)
    said = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert after >= before * 9 // 10, f"the executor evicted the host's cache: {before} -> {after} pages\n{out}"
    assert said.get("FADVISE") == "ok", out
    assert said.get("NOWAIT") == "EOPNOTSUPP", out
    assert said.get("CACHESTAT") == "ENOSYS", out
