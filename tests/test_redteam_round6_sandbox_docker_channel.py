"""Red team round 6: a docker command forged a sibling's exit status through its cwd report.

The executor reports each command's end as one line on its control channel,
``X <id> <rc> <oom> <cwd>``, where ``<cwd>`` is whatever the command left in its cwd file.
The executor printed that line with ``echo``, which in dash (Debian's ``/bin/sh``) turns the
two characters ``\\n`` into a newline: a command that wrote ``/workspace\\nX <id> 0 0`` into
its cwd file put a second, forged event on the channel. A sibling's id is in its environment
(``SHELLRT_TASK``, readable by the same uid), so a sibling still running ``sleep 8; exit 3`` was
reported finished with exit code 0 after 1.8 s. Unbounded in length, the same line also broke
the channel's rule that every event is one write below ``PIPE_BUF``: a 1 MiB cwd let other
runners' lines land inside it, and their commands' exits were lost (a 30 s timeout, 1 of 60
concurrent commands per round here). And a line longer than the host's 1 MiB bound was cut,
its tail then read as a line of its own.

The executor now drops a cwd holding a backslash or longer than 1000 characters (the event
stays one short write), and the host discards the rest of a runaway line.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox._collect import run_collected
from sandbox.docker import DockerBackend
from sandbox.docker._protocol import LineSplitter
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker

#: Finds a sibling's id (in its environment, or where the sibling left it: since round 28 each
#: command's /proc is closed to the others, so the test's victim leaks it in the workspace) and
#: forges its exit through an escape in the cwd.
_FORGE = r"""
me=${SHELLRT_TASK#x}; me=${me%x}
{ for f in /proc/[0-9]*/environ; do
    tr '\0' '\n' < "$f" 2>/dev/null | sed -n 's/^SHELLRT_TASK=x\(.*\)x$/\1/p'
  done; sed -n 's/^x\(.*\)x$/\1/p' /workspace/.victim-id 2>/dev/null
} | sort -u | grep -v "^$me\$" > /tmp/ids
v=$(head -n 1 /tmp/ids)
[ -n "$v" ] || { echo "no sibling found"; exit 9; }
printf '/workspace\\nX %s 0 0 /workspace' "$v" > "$SHELLRT_CWD_FILE"
"""


@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
def test_a_command_cannot_forge_a_siblings_exit_through_its_cwd(tmp_path: Path, image: str) -> None:
    require_docker()
    victim_end: list[tuple[int | None, float]] = []
    attacker_end: list[tuple[int | None, str | None, bytes]] = []

    async def main() -> None:
        backend = DockerBackend(config(image), policy(tmp_path))
        await backend.start()
        try:
            async with anyio.create_task_group() as tg:

                async def victim() -> None:
                    t0 = time.monotonic()
                    done = await run_collected(
                        backend,
                        ExecRequest(
                            argv=("sh", "-c", 'echo "$SHELLRT_TASK" > .victim-id; sleep 6; exit 3'),
                            cwd="/workspace",
                        ),
                    )
                    victim_end.append((done.status.exit_code, time.monotonic() - t0))

                tg.start_soon(victim)
                await anyio.sleep(1.5)
                attack = await run_collected(
                    backend, ExecRequest(argv=("sh", "-c", _FORGE), cwd="/workspace", report_cwd=True)
                )
                attacker_end.append((attack.status.exit_code, attack.status.cwd, attack.stdout))
        finally:
            await backend.close()

    anyio.run(main)
    [(code, cwd, out)] = attacker_end
    assert code == 0, out
    [(exit_code, took)] = victim_end
    assert exit_code == 3 and took >= 5.5, (exit_code, took)
    assert cwd is None, "a cwd with a backslash is not reported"


def test_an_overlong_cwd_is_not_reported(tmp_path: Path) -> None:
    require_docker()

    async def main() -> tuple[int | None, str | None]:
        backend = DockerBackend(config(), policy(tmp_path))
        await backend.start()
        try:
            fill = "head -c 65536 /dev/zero | tr '\\0' A > \"$SHELLRT_CWD_FILE\"; exit 4"
            done = await run_collected(
                backend, ExecRequest(argv=("sh", "-c", fill), cwd="/workspace", report_cwd=True)
            )
            return done.status.exit_code, done.status.cwd
        finally:
            await backend.close()

    assert anyio.run(main) == (4, None)


def test_the_tail_of_a_runaway_line_is_not_read_as_a_line() -> None:
    split = LineSplitter(max_line=1000)
    lines = split.feed(b"X aaaa 7 0 " + b"A" * 1500)
    lines += split.feed(b"X victim 0 0 /workspace\n")
    lines += split.feed(b"P next\n")
    assert lines == ["P next"]
