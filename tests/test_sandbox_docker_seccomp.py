"""Docker commands run under bwrap's seccomp deny list and cannot dump core, whatever the daemon's profile.

The daemon's default profile differs between versions (docker 20.10 allows
io_uring); `priv drop` loads `sandbox._seccomp`'s whole filter for every
command. Ordinary image tools must still work under it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

PATH_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def debian(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    require_docker()
    ws = tmp_path_factory.mktemp("seccompws")
    async with DockerBackend(config(DEBIAN), policy(ws)) as backend:
        yield backend


async def _run(backend: DockerBackend, script: str, user: str | None = None) -> str:
    """stdout and stderr of ``sh -c script`` (as ``user``, else the session's user)."""
    request = ExecRequest(
        argv=("sh", "-c", script), cwd="/workspace", env=PATH_ENV, merge_stderr=True, user=user
    )
    proc = await backend.exec(request)
    chunks: list[bytes] = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await proc.stdout.receive())
    await proc.wait()
    return b"".join(chunks).decode(errors="replace")


#: (name, x86_64 number, perl arguments) of calls the deny list refuses and the daemon's profile
#: (20.10 here) may allow to a container without capabilities.
_DENIED = (
    ("keyctl", 250, "0, -4, 0, 0, 0"),  # KEYCTL_GET_KEYRING_ID of the user keyring
    ("unshare_newuser", 272, "0x10000000"),
    ("io_uring_setup", 425, "8, $z"),
    ("bpf", 321, "0, $z, 0"),
    ("io_uring_register", 427, "-1, 0, 0, 0"),
)


@pytest.mark.parametrize("user", [None, "root", "nobody"])
async def test_denied_calls_fail_with_eperm_in_docker_commands(
    debian: DockerBackend, user: str | None
) -> None:
    require(os.uname().machine == "x86_64", "syscall numbers below are x86_64's")
    script = "".join(
        f'$! = 0; print "{n} ", syscall({nr}, {args}), " ", $!+0, "\\n"; ' for n, nr, args in _DENIED
    )
    out = await _run(debian, f"perl -e 'my $z = \"\\0\" x 256; {script}'", user)
    results = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert set(results) == {n for n, _, _ in _DENIED}, out
    for name, (ret, err) in results.items():
        assert (ret, err) == ("-1", "1"), f"{name}: returned {ret}, errno {err}\n{out}"


async def test_unshare_of_a_user_namespace_is_refused(debian: DockerBackend) -> None:
    out = await _run(debian, "unshare -U id 2>&1; echo rc=$?")
    assert "rc=0" not in out and "Operation not permitted" in out, out


async def test_ordinary_tools_work_under_the_deny_list(debian: DockerBackend) -> None:
    """Shells, coreutils, perl, archives, find/xargs, fork (clone3 falls back to clone), sort --parallel (threads), dpkg-query."""
    script = (
        "set -e; cd /tmp; mkdir -p d/e; echo hi > d/e/f; ln -s f d/e/l; ln d/e/f d/hard; "
        "chmod 640 d/e/f; cp -a d d2; mv d2 d3; tar czf a.tgz d3; rm -rf d3; tar xzf a.tgz; "
        "find d3 -type f | sort | xargs cat; sort -u -S 1M --parallel=4 d3/e/f; "
        "bash -c 'echo $((6*7)) $(echo sub) <(true)' ; "
        "perl -e 'my $p = fork; exit 5 unless $p; waitpid $p, 0; print $? >> 8, qq{\\n}'; "
        "timeout 5 sleep 0.1; stat -c %a d/e/f; sha256sum d3/e/f | cut -c1-8; "
        "dpkg-query -W -f='${Package}\\n' coreutils; getent passwd root | cut -d: -f1; "
        "mkfifo p; (echo piped > p &) ; cat p; df -P /tmp >/dev/null; echo OK"
    )
    out = await _run(debian, script)
    assert out.split() == ["hi", "hi", "hi", "42", "sub", "/dev/fd/63", "5", "640", "98ea6e4f"] + [
        "coreutils",
        "root",
        "piped",
        "OK",
    ], out


async def test_busybox_tools_work_under_the_deny_list(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        out = await backend.run_capture(
            ["sh", "-c", "cd /tmp && mkdir a && echo x > a/f && cp -r a b && tar cf t b && ls b && echo OK"],
            cwd="/workspace",
        )
    assert out.split() == ["f", "OK"], out


@pytest.mark.parametrize("user", [None, "root"])
async def test_core_dumps_are_off_and_cannot_be_turned_on(debian: DockerBackend, user: str | None) -> None:
    out = await _run(
        debian,
        "ulimit -Hc; ulimit -Sc; ulimit -Hc unlimited 2>/dev/null && echo RAISED; ulimit -c 1 2>&1 | head -c 0; "
        "prlimit --core=1:1 true 2>/dev/null && echo PRLIMIT; ulimit -Hc",
        user,
    )
    assert out.split() == ["0", "0", "0"], out
