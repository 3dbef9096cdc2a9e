"""Red team round 7: with ``root_can_administer``, a root command stole the docker control channel.

The executor's runner resolves a per-call user by reading the image's ``/etc/passwd`` and
``/etc/group`` as the executor's identity. With ``DockerConfig.root_can_administer`` a root
command may edit the image, so it replaced ``/etc/passwd`` with a symlink to
``/proc/<executor>/fd/0``: the control channel's request stream, which only the executor's
identity may open, and the runner is that identity. The next per-call user's lookup then read
the host's requests off the channel (every later ``R``, ``K`` and ``P``): the lookup itself
hung, and so did every later command of the session until a kill timed out and the container
was replaced. (A FIFO there only stalls the one lookup, as documented.)

The runner now opens each of the two files once and reads it only when what it opened is a
regular file; otherwise the call is refused (``E user-db``), nothing is read.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox._collect import run_collected
from sandbox.docker import DockerBackend
from sandbox.errors import SandboxExecError
from tests._docker_support import DEBIAN, config, policy, require_docker

#: Points the image's user database at the executor's request stream.
_PLANT = r"""
for d in /proc/[0-9]*; do
  case $(cat "$d/cmdline" 2>/dev/null | tr '\0' ' ') in *executor.sh*) e=${d#/proc/}; break ;; esac
done
[ -n "$e" ] || { echo "no executor"; exit 9; }
ln -sf "/proc/$e/fd/0" /etc/passwd.new && mv -f /etc/passwd.new /etc/passwd && echo planted
"""


def test_a_root_command_cannot_point_the_user_lookup_at_the_channel(tmp_path: Path) -> None:
    require_docker()
    outcome: list[str] = []

    async def main() -> None:
        ws = tmp_path / "ws"
        ws.mkdir()
        backend = DockerBackend(config(DEBIAN, root_can_administer=True), policy(ws))
        await backend.start()
        try:
            plant = await run_collected(
                backend, ExecRequest(argv=("sh", "-c", _PLANT), cwd="/workspace", user="root")
            )
            assert plant.stdout == b"planted\n", plant
            with anyio.fail_after(20):
                with pytest.raises(SandboxExecError, match="passwd"):
                    await run_collected(backend, ExecRequest(argv=("true",), cwd="/workspace", user="nobody"))
                after = await run_collected(backend, ExecRequest(argv=("echo", "still"), cwd="/workspace"))
            outcome.append(after.stdout.decode())
            assert not backend.recoveries, backend.recoveries
        finally:
            await backend.close()

    anyio.run(main)
    assert outcome == ["still\n"]
