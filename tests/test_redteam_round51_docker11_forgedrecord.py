"""Red team round 51 (docker11): a line on the executor's event stream that the executor did not
write (docs/security.md, "Red team, round 51: docker11").

CI once saw a root command that forged exit and kill records (``test_faking_completion_does_not_
escape_the_timeout[root]``) reported ended within 3 s while it still slept. The host believed any
line on the executor's stdout: a forged ``X <id> 0 0`` (a command can name its own id: its
stdout is ``/.shellrt-io/<id>.out``) was its exit, a forged repeat of a record already seen ended
the session. No path from a command to that stream is known (``test_sandbox_escape_docker`` pins
the known ones closed), so the lines are written here from the host into the executor's own
stdout: that stands in for any such path, found later or not. Every event after the hello now
starts with the session's secret, which the executor reads from the host on its stdin before any
command exists; a line without it is noise, whatever it says.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker._hostpid import host_pid
from tests._docker_support import BUSYBOX, config, policy, read_to_end, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}


async def test_lines_the_executor_did_not_write_are_no_record(tmp_path: Path) -> None:
    require_docker()
    if os.geteuid() != 0:
        pytest.skip("writing into the executor's stdout from the host needs root")
    async with DockerBackend(config(BUSYBOX, user="0:0"), policy(tmp_path)) as backend:
        cid, pid = backend.container_id, backend.executor_pid
        assert cid is not None and pid is not None
        proc = await backend.exec(ExecRequest(argv=("sh", "-c", "echo up; sleep 60"), cwd="/workspace", env=ENV))
        assert await proc.stdout.receive() == b"up\n"  # it runs: its start was told
        executor = await anyio.to_thread.run_sync(lambda: host_pid(cid, pid))
        assert executor is not None
        tid = proc.task_id
        # Each record a command would forge: its own exit, a kill's end, its start again, a
        # refusal, a pong, a reset's report, another hello; one write each, as the executor's.
        forged = [f"X {tid} 0 0", f"K {tid} 0", f"S {tid} 1", f"E {tid} pids", "P r51", "Z r51 1 0 1", "H 2 7 1 /bin/sh 2"]
        fd = os.open(f"/proc/{executor}/fd/1", os.O_WRONLY)
        try:
            for line in forged:
                os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
        session = backend._session
        assert session is not None
        # The executor's own pong comes after every forged line (one stream, in order).
        await session.channel.send("P r51")
        await session.channel.wait("P", "r51", within=60)
        assert session.alive and session.channel.failure is None, session.channel.failure
        assert proc.returncode is None, "a forged exit record was taken as the command's end"
        await proc.kill()
        status = await proc.wait()
        assert status.exit_code == 137 and status.signal == 9 and status.sandbox_failure is None, status
        after = await backend.exec(ExecRequest(argv=("echo", "next"), cwd="/workspace", env=ENV))
        assert await read_to_end(after.stdout) == b"next\n"
        assert (await after.wait()).exit_code == 0
        assert backend.recoveries == []
