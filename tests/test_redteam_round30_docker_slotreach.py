"""Red team round 30, docker: a command reached a socket in another running command's ``TMPDIR``.

Round 29 gave each command a ``TMPDIR`` of its own (a tmpfs slot, a random-named 0700 directory of
the command's uid) and kept its files out of other commands' Landlock domains; but Landlock does not
check a ``connect`` to a path socket (ABI 7), and the name was secret only until it showed: a
server's command line (``/proc/<pid>/cmdline``, world-readable) and ``/proc/net/unix`` (every bound
path socket of the network namespace) print it. Another command of the same uid (or a per-call
root one, which holds no capability) then listed the directory and connected to the agent served
there. Now no other command can even traverse the slot: each slot's root is 0710, of the executor
and a group of its own that only the slot's current command holds (``priv.c``). FAIL, not skip,
under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import SandboxExecError
from sandbox.docker import EXECUTOR_UID, DockerBackend
from sandbox.docker._tmpslots import slot_gid
from tests._docker_support import DEBIAN, config, policy, require_docker, run_beside, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_SERVE = (
    "use Socket; socket(S, AF_UNIX, SOCK_STREAM, 0); bind(S, pack_sockaddr_un(shift)) or die; "
    'listen(S, 5); alarm 30; while (accept(C, S)) { print C "victim-agent\\n"; close C }'
)
_CONNECT = (
    "use Socket; socket(S, AF_UNIX, SOCK_STREAM, 0); connect(S, pack_sockaddr_un(shift)) or exit 1; "
    "print scalar <S>"
)
#: The victim: an agent on a path socket in its TMPDIR (the path in its server's command line and
#: in /proc/net/unix), which its own processes still reach.
_HOLDER = (
    f"perl -e '{_SERVE}' \"$TMPDIR/agent.sock\" & "
    'i=0; while [ ! -S "$TMPDIR/agent.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; '
    f"perl -e '{_CONNECT}' \"$TMPDIR/agent.sock\" | sed 's/^/self: /'; touch /tmp/held-@T; "
    "i=0; while [ ! -e /tmp/tried-@T ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; kill $!"
)
#: Another command: every slot path it can read anywhere (command lines, /proc/net/unix) but its
#: own, then list, stat and connect.
_PROBE = (
    "i=0; while [ ! -e /tmp/held-@T ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
    "{ cat /proc/net/unix; for f in /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done; } 2>/dev/null "
    "| grep -o '/.shellrt-tmp/[0-9]/[0-9a-f]*/[a-z.]*' | sort -u > /tmp/seen-@T; "
    'while read -r p; do case $p in "$TMPDIR"/*) continue ;; esac; echo "FOUND $p"; '
    'd=${p%/*}; ls -A "$d" >/dev/null 2>&1 && echo "HIT list $d"; '
    'ls -A "${d%/*}" >/dev/null 2>&1 && echo "HIT list ${d%/*}"; '
    'stat "$p" >/dev/null 2>&1 && echo "HIT stat $p"; '
    f"perl -e '{_CONNECT}' \"$p\" 2>/dev/null | sed 's/^/HIT connect: /'; "
    "done < /tmp/seen-@T; touch /tmp/tried-@T"
)


async def _attack(backend: DockerBackend, user: str | None) -> list[str]:
    """What went wrong for ``user`` (empty: held)."""
    tag = user or "leased"
    with anyio.fail_after(60):
        rc, said, held = await run_beside(
            backend, _HOLDER.replace("@T", tag), _PROBE.replace("@T", tag), user=user
        )
    # The name did leak (else the probe proves nothing), and nothing was reached through it; the
    # victim's own processes still reach it.
    ok = rc == 0 and "FOUND /.shellrt-tmp/" in said and "HIT" not in said and "victim-agent" not in said
    return [] if ok and "self: victim-agent" in held else [f"{user or 'leased'}: {said!r} / {held!r}"]


async def test_no_command_reaches_a_socket_in_another_commands_tmpdir(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        problems = [p for user in (None, "root") for p in await _attack(backend, user)]
        # No per-call user may hold a slot's group (it would traverse that slot): refused as the
        # executor's own id always was, before anything runs.
        for user in (str(slot_gid(EXECUTOR_UID, 3)), f"4321:{slot_gid(EXECUTOR_UID, 0)}"):
            with pytest.raises(SandboxExecError, match="reserved for shellrt's executor and its TMPDIR"):
                await run_sh(backend, "id", user=user)
    assert not problems, problems
