"""Red team round 7: a docker command survived its own kill (timeout, TaskStop).

The executor's kill (``_kill`` in ``executor.sh``) finds a command's processes by reading the
first line of each ``/proc/<pid>/stat``: process group, session, parent. A process may write
anything into its own name (``/proc/self/comm``), a newline included, and ``stat`` prints the
name raw: the first line then ends inside the name, none of the fields after it are seen, and
the process matched nothing. With ``setsid`` (its own session) and ``env -i`` (no marker) it
escaped every test, and once the kill had ended its parent and the ``priv drop`` helper it was
docker-init's child: still running after the command was reported killed, until the session
ended. (When a command ends on its own, the helper's sweep reads the whole ``stat`` and held.)

The kill now reads a process's parent where the name cannot reach (after the name's last
``)``, the whole file), keeps the helper, a child subreaper, alive until everything else of
the tree is gone (so whatever a pass orphans is handed to it and found by its parent), and
kills it last.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox._collect import run_collected
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker

#: Escapes into its own session and scrubs its environment; RENAME then hides its stat fields
#: behind a newline in its name. Without it the escapee still survived when its pid had one digit
#: more than its parent's: the /proc glob lists 100 before 99, so when the escapee was looked at
#: its parent was not yet known as the command's. The loop burns pids up to 98, so the subshell
#: gets 99 and the escapee 100.
_ESCAPE = r"""
while :; do sleep 0 & p=$!; wait "$p"; [ "$p" -ge 98 ] && break; done
( setsid env -i /bin/sh -c '
  RENAME
  while :; do echo "$$" > /tmp/alive.$$; sleep 0.2; done' &
  sleep 100 ) &
sleep 100
"""

#: Lists the escapee's pid if it still runs.
_PROBE = r"""
sleep 1
for f in /tmp/alive.*; do
  [ -e "$f" ] || continue
  p=${f#/tmp/alive.}
  [ -d "/proc/$p" ] && echo "alive $p: $(head -c 60 "/proc/$p/stat")"
done
echo done
"""


@pytest.mark.parametrize("rename", ['printf "x\\n y" > /proc/$$/comm', ":"], ids=["newline-name", "plain"])
@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
def test_an_escapee_does_not_survive_its_commands_kill(tmp_path: Path, image: str, rename: str) -> None:
    require_docker()
    probe_out: list[bytes] = []

    async def main() -> None:
        backend = DockerBackend(config(image), policy(tmp_path))
        await backend.start()
        try:
            with pytest.raises(TimeoutError):
                await run_collected(
                    backend,
                    ExecRequest(argv=("sh", "-c", _ESCAPE.replace("RENAME", rename)), cwd="/workspace"),
                    timeout_s=2,
                )
            probe = await run_collected(backend, ExecRequest(argv=("sh", "-c", _PROBE), cwd="/workspace"))
            probe_out.append(probe.stdout)
        finally:
            await backend.close()

    anyio.run(main)
    [out] = probe_out
    assert out.endswith(b"done\n"), out
    assert b"alive" not in out, f"a process of the killed command still runs: {out!r}"
