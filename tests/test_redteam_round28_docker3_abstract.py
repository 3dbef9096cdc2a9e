"""Red team round 28, docker3: a background task answered a later command's abstract unix socket.

Round 28 put every command in a Landlock domain of its own (ptrace, ``/proc``, signals), but
abstract unix socket names are the container's network namespace's, shared by every command of
the session: a background task bound a name a later command (or a tool it runs: X11's
``@/tmp/.X11-unix/X0``, a D-Bus ``unix:abstract=`` bus, an agent's socket) connects or sends to,
and answered as it (round 28 docker "Left"). Each command's domain is now also scoped for abstract
unix sockets (``LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET``, ABI 6, ``priv.c``): it connects and sends
only to names its own processes bound. Path sockets are unchanged (file permissions decide).
Leased uid and per-call root. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, read_to_end, require_docker, run_sh, start_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Binds abstract stream and datagram names NAME and NAME-d, marks READY, answers "squat" to each
#: connection (30 s at most).
_SERVE = (
    "use Socket; my $n = shift; my ($s, $d); "
    'socket($s, AF_UNIX, SOCK_STREAM, 0) && bind($s, pack_sockaddr_un("\\0$n")) && listen($s, 5) '
    '&& socket($d, AF_UNIX, SOCK_DGRAM, 0) && bind($d, pack_sockaddr_un("\\0$n-d")) or die "bind: $!"; '
    "open(my $f, '>', shift) or die; close $f; alarm 30; "
    'while (accept(C, $s)) { print C "squat\\n"; close C }'
)
#: Connects (stream) and sends (datagram) to NAME; prints what it got.
_CLIENT = (
    "use Socket; my $n = shift; "
    "socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die; "
    'print connect($s, pack_sockaddr_un("\\0$n")) ? "got " . <$s> : "stream refused: $!\\n"; '
    "socket(my $d, AF_UNIX, SOCK_DGRAM, 0) or die; "
    'print defined(send($d, "x", 0, pack_sockaddr_un("\\0$n-d"))) ? "sent\\n" : "dgram refused: $!\\n";'
)
_WAIT = "i=0; while [ ! -e /tmp/ready-NAME ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "


def _perl(script: str, *args: str) -> str:
    return "perl -e '" + script.replace("'", "'\\''") + "' " + " ".join(args)


async def _squat(backend: DockerBackend, user: str | None) -> None:
    name = "shellrt-" + secrets.token_hex(4)
    serve = _perl(_SERVE, name, f"/tmp/ready-{name}")
    client = _perl(_CLIENT, name)
    with anyio.fail_after(90):
        squatter = await start_sh(backend, serve, user=user)
        try:
            rc, out = await run_sh(backend, _WAIT.replace("NAME", name) + client, user=user)
            # The same command's own server and client: one domain, still connected.
            own = "own-" + name
            rc2, mine = await run_sh(
                backend,
                f"{_perl(_SERVE, own, f'/tmp/ready-{own}')} & {_WAIT.replace('NAME', own)}{_perl(_CLIENT, own)}; kill $!",
                user=user,
            )
        finally:
            await squatter.kill()
            await squatter.wait()
            await read_to_end(squatter.stdout)
    # Before: "got squat\nsent\n".
    assert "squat" not in out and "sent" not in out, out
    assert (
        "stream refused: Operation not permitted" in out and "dgram refused: Operation not permitted" in out
    ), out
    assert rc2 == 0 and mine == "got squat\nsent\n", mine


async def test_a_later_command_does_not_reach_a_background_tasks_abstract_socket(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        for user in (None, "root"):
            await _squat(backend, user)
