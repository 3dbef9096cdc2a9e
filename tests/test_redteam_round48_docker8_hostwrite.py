"""Red team round 48, docker8: a container's command wrote the host's pressure (PSI) files.

With cgroup v1 a container's ``/proc/pressure/{cpu,io,memory}`` are the whole host's, mode 0666, on
a read-write ``/proc``. Since Linux 6.5 anyone may write ``some <stall us> <window us>`` (a window a
multiple of 2 s) and so make a trigger: the host's PSI aggregation walks every trigger every 2 s
and wakes its poller, kernel work outside the container's cgroup for as long as the command holds
the descriptor, as many triggers as it has descriptors. Round 47 made ``/proc/pressure`` read-only
in bwrap's sandboxes (sandbox7); docker's containers were left out. The class: a regular file of a
container's ``/proc``, outside the processes' directories and the network namespace's own, that a
command (the session's leased uid, and a per-call root) opens for writing. Masked files are
``/dev/null``'s character device (``find`` lists them by their directory's type: ``[ -f ]`` asks).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Every regular ``/proc`` file (not a process's, the reader's own or its network namespace's) the
#: command opens for appending, then a trigger written to the CPU pressure file, held open; its
#: averages must still read.
_SCRIPT = (
    "for f in $(find /proc -xdev \\( -path '/proc/[0-9]*' -o -path /proc/self -o -path /proc/thread-self"
    " -o -path /proc/net -o -path /proc/sys/net \\) -prune -o -type f -print 2>/dev/null); do"
    " if [ -f \"$f\" ] && ( exec 3>>\"$f\" ) 2>/dev/null; then echo \"writable $f\"; fi; done;"
    " [ -f /proc/pressure/cpu ] && ( exec 3>/proc/pressure/cpu && printf 'some 150000 2000000\\n' >&3 )"
    " 2>/dev/null && echo trigger-made;"
    " [ ! -f /proc/pressure/cpu ] || head -c 4 /proc/pressure/cpu | grep -q some || echo averages-unread; echo done"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt48write"):
        yield b


async def test_no_host_wide_proc_file_is_writable_in_a_container(backend: DockerBackend) -> None:
    said = {}
    for user in (None, "root"):
        code, out = await run_sh(backend, _SCRIPT, user=user)
        assert code == 0 and out.rstrip().endswith("done"), out
        said[user or "leased"] = [line for line in out.splitlines() if line != "done"]
    assert said == {"leased": [], "root": []}, f"host-wide /proc files a command wrote: {said}"
