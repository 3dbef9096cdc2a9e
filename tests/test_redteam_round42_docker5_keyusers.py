"""Red team round 42, docker5: every command read the host users' key accounting.

A container without ``userns-remap`` lives in the host's user namespace, where ``/proc/key-users``
lists every host uid that holds a key: its key count, instantiated count, quota and bytes used
(here root's ``0: 11 10/10 5/1000000 182/25000000`` and uid 65534's, another sandbox's). Docker
masks ``/proc/keys`` but not this file: an activity signal across tenants (logins, other sessions,
anything that makes and drops keys), the leak round 41 (bwrap4) closed for bwrap. Now the docker
backend gives the daemon its masked paths explicitly, docker's own and ``/proc/key-users``, and
refuses a container that does not keep them.

A real container (FAIL, not skip, under CI=true): the session's user, per-call ``root`` and
``nobody`` read the file; none may see a line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_no_command_reads_the_hosts_key_accounting(tmp_path: Path) -> None:
    require_docker()
    seen: dict[str | None, str] = {}
    async with DockerBackend(config(), policy(tmp_path)) as backend:
        for user in (None, "root", "nobody"):
            _, out = await run_sh(backend, "cat /proc/key-users 2>/dev/null | sed 's/^/LINE /'", user=user)
            seen[user] = out
    leaked = {u: out for u, out in seen.items() if "LINE" in out}
    assert not leaked, f"commands read the host's key accounting: {leaked}"
