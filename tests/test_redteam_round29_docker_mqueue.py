"""Round 29 merge fix, docker: POSIX message queues still open under each command's Landlock domain.

Round 29's per-command TMPDIR slots made each command's domain handle file rights, granted beneath
every entry of ``/``. ``mq_open`` creates its file in the IPC namespace's own mqueue mount, which no
path of ``/`` leads to: every ``mq_open`` was refused (EACCES; leased uid and root; caught by
tests/test_session_uid_docker.py's per-user limits test). A rule on ``/dev/mqueue`` (the same root
inode) grants it back. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: mq_open(2) by its system call (x86_64: 240; glibc's wrapper strips the leading slash), then
#: mq_unlink (241): the minimal Debian image has perl, no python.
_MQ = (
    "perl -e 'my $n = \"shellrtq$$\"; syscall(240, $n, 0100|02, 0600, 0) >= 0 or die \"mq_open: $!\\n\"; "
    "syscall(241, $n) == 0 or die \"mq_unlink: $!\\n\"; print \"mq ok\\n\"' 2>&1"
)


async def test_a_command_opens_a_posix_message_queue(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        for user in (None, "root"):
            assert await run_sh(backend, _MQ, user=user) == (0, "mq ok\n"), user
