"""Red team, round 35 (docker): the host's BPF JIT budget and hugetlb pool reached from a container.

Every classic BPF program is JIT-compiled and its image charged to ``net.core.bpf_jit_limit``, one
counter for the whole host (528,482,304 bytes here, ``CONFIG_BPF_JIT_ALWAYS_ON``). Once it is spent,
a process without ``CAP_BPF``/``CAP_SYS_ADMIN`` in the host's user namespace loads no filter at all:
not a socket filter and not a seccomp filter -- so every docker session's ``priv`` (nine
capabilities, not those) fails to load the command filter and every command of every session on the
host fails, and so do a non-root caller's bwrap sandboxes. Round 33 bwrap measured it; round 34
docker2 named it for containers, whose memory ceiling (17 GB by default here) charges a program's
kernel copy but not its JIT image. A command reached it with two calls docker's profile allows:
``SO_ATTACH_FILTER`` (and ``SO_ATTACH_REUSEPORT_CBPF``) on its own sockets, and a nested seccomp
filter; the executor's shell (the image's own ``/bin/sh``) through the socket options.

Huge pages (``MAP_HUGETLB``, ``SHM_HUGETLB``, ``MFD_HUGETLB``) come from the host's one hugetlb
pool (``vm.nr_hugepages``), which no v1 memory cgroup counts and docker bounds for nobody. This
host's pool is empty, so only ``memfd_create(MFD_HUGETLB)`` shows the way in (it reserves nothing
until mapped); the others said ENOMEM before too.

Real containers of the test images and a static probe built here with gcc (FAIL, not skip, under
CI=true). The probe attaches a few filters only: never run to exhaustion on a shared machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._tcpmem import socket_memory_cap
from tests._docker_support import config, policy, require_docker, run_sh
from tests._rt11_hostile import build_hostile
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: ``sock``: a 1,024-instruction filter attached to 8 unix sockets, and
#: once as a reuseport program. ``nest``: an allow-all seccomp filter through both calls.
#: ``huge``: each way to the hugetlb pool, and the same call without it.
_PROBE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CONNS 96 /* connections whose reader never reads */
#define N 1024 /* its converted program fits net.core.optmem_max (128 KiB): held, not refused */
static struct sock_filter big[N];
static const char *said(long r) { return r >= 0 ? "ok" : strerrorname_np(errno); }
int main(int argc, char **argv) {
    if (argc != 2) return 2;
    if (!strcmp(argv[1], "sock")) {
        for (int i = 0; i < N - 1; i++) big[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
        big[N - 1] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffff);
        struct sock_fprog prog = {N, big};
        int ok = 0;
        const char *why = "none";
        for (int i = 0; i < 8; i++) {
            int s = socket(AF_UNIX, SOCK_DGRAM, 0);
            long r = setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog);
            if (r == 0) ok++; else why = said(r);
        }
        printf("ATTACHED %d\nWHY %s\n", ok, why);
        int one = 1, u = socket(AF_INET, SOCK_DGRAM, 0);
        setsockopt(u, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        struct sock_filter small[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
        struct sock_fprog sp = {1, small};
        printf("REUSEPORT %s\n", said(setsockopt(u, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &sp, sizeof sp)));
        int size = 65536;
        printf("RCVBUF %s\n", said(setsockopt(u, SOL_SOCKET, SO_RCVBUF, &size, sizeof size)));
        return 0;
    }
    if (!strcmp(argv[1], "tcp")) {
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t n = sizeof a;
        if (bind(l, (void *)&a, sizeof a) || listen(l, 16) || getsockname(l, (void *)&a, &n)) return 3;
        static char buf[1 << 16];
        long long total = 0;
        for (int i = 0; i < CONNS; i++) {
            int c = socket(AF_INET, SOCK_STREAM, 0);
            if (c < 0 || connect(c, (void *)&a, sizeof a) || accept(l, 0, 0) < 0) return 4;
            for (ssize_t w; (w = send(c, buf, sizeof buf, MSG_DONTWAIT)) > 0;) total += w;
        }
        printf("QUEUED %lld\n", total >> 20);
        return 0;
    }
    if (!strcmp(argv[1], "huge")) {
        const size_t two = 2 << 20;
        void *p = mmap(0, two, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        printf("HMMAP %s\n", p == MAP_FAILED ? strerrorname_np(errno) : "ok");
        p = mmap(0, two, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("MMAP %s\n", p == MAP_FAILED ? strerrorname_np(errno) : "ok");
        int id = shmget(IPC_PRIVATE, two, IPC_CREAT | SHM_HUGETLB | 0600);
        printf("HSHM %s\n", said(id));
        id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        printf("SHM %s\n", said(id));
        if (id >= 0) shmctl(id, IPC_RMID, 0);
        printf("HMEMFD %s\n", said(memfd_create("h", MFD_HUGETLB)));
        printf("MEMFD %s\n", said(memfd_create("s", 0)));
        return 0;
    }
    if (!strcmp(argv[1], "nest")) {
        struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
        struct sock_fprog prog = {1, allow};
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        printf("SECCOMP %s\n", said(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)));
        printf("PRCTL %s\n", said(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)));
        unsigned action = SECCOMP_RET_KILL_PROCESS;
        printf("AVAIL %s\n", said(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action)));
        printf("MODE %d\n", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
        return 0;
    }
    return 2;
}
"""

#: The executor's shell (the image's own) runs the probe before the real executor and keeps what
#: it said in /tmp for a command to show.
_PRE = (
    "[ -e /tmp/rt35 ] || { /workspace/probe sock >/tmp/rt35 2>&1; /workspace/probe huge >>/tmp/rt35 2>&1; "
    "/workspace/probe tcp >>/tmp/rt35 2>&1; }"
)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace holding the probe, built once, statically (it runs in busybox and debian alike)."""
    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc builds the static probe (apt-get install gcc libc6-dev)")
    ws = tmp_path_factory.mktemp("rt35-budgets") / "ws"
    ws.mkdir()
    build = [str(gcc), "-O1", "-static", "-x", "c", "-o", str(ws / "probe"), "-"]  # the source on stdin
    made = subprocess.run(build, input=_PROBE, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    return ws


def _lines(out: str) -> dict[str, str]:
    """The probe's ``NAME value`` lines."""
    return dict(re.findall(r"^([A-Z]+) (.*)$", out, re.MULTILINE))


def _assert_no_socket_filter(out: str) -> None:
    said = _lines(out)
    assert said.get("ATTACHED") == "0", out
    # priv.c's filter answers ENOPROTOOPT; a command is also under bwrap's copy of shellrt's
    # filter (round 35 bwrap: EPERM), and the most recently loaded filter's answer is the one seen
    assert said.get("WHY") in ("ENOPROTOOPT", "EPERM"), out
    assert said.get("REUSEPORT") in ("ENOPROTOOPT", "EPERM"), out
    assert said.get("RCVBUF") == "ok", out  # other socket options pass


def _assert_socket_memory_capped(out: str) -> None:
    """A root host with cgroup v1: at most the container's share of tcp_mem, plus what each
    connection may force past the cap (one skb each). 358 MiB before."""
    if os.geteuid() == 0 and os.path.isfile("/sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes"):
        assert int(_lines(out)["QUEUED"]) <= (socket_memory_cap() >> 20) + 16, out


def _assert_no_huge_pages(out: str) -> None:
    said = _lines(out)
    assert (said.get("HMMAP"), said.get("HSHM")) == ("ENOMEM", "ENOMEM"), out
    assert said.get("HMEMFD") in ("EINVAL", "ENOMEM"), out  # priv.c's answer, or shellrt's filter's
    assert (said.get("MMAP"), said.get("SHM"), said.get("MEMFD")) == ("ok", "ok", "ok"), out


async def test_a_command_takes_neither_budget(ws: Path) -> None:
    """Failed before: ATTACHED 8 (~52 KB of JIT image each, charged to no cgroup), REUSEPORT ok,
    SECCOMP ok and PRCTL ok, HMEMFD ok and QUEUED 358 (MiB), as the session's user and as a
    per-call root command."""
    require_docker()
    async with DockerBackend(config(), policy(ws)) as backend:
        for user in (None, "root"):
            code, out = await run_sh(backend, "./probe sock; ./probe nest; ./probe huge; ./probe tcp", user=user)
            assert code == 0, out
            _assert_no_socket_filter(out)
            _assert_no_huge_pages(out)
            _assert_socket_memory_capped(out)
            said = _lines(out)
            # What a kernel built without seccomp filters answers; the other seccomp operations
            # (no program) still work, and the command is still under its filters (mode 2).
            assert (said.get("SECCOMP"), said.get("PRCTL")) == ("EINVAL", "EINVAL"), out
            assert (said.get("AVAIL"), said.get("MODE")) == ("ok", "2"), out


async def test_a_hostile_images_shell_takes_neither_budget(ws: Path) -> None:
    """Failed before: ATTACHED 8, REUSEPORT ok, HMEMFD ok and QUEUED 358 from the executor's shell."""
    image = build_hostile("shellrt-test-rt35-budgets", pre=_PRE)
    async with DockerBackend(config(image), policy(ws)) as backend:
        code, out = await run_sh(backend, "cat /tmp/rt35")
    assert code == 0, out
    _assert_no_socket_filter(out)
    _assert_no_huge_pages(out)
    _assert_socket_memory_capped(out)
