"""Red team, round 33 (supervisor): output dribbled a byte at a time kept the owner busy.

The pump read a command's pipe as soon as it was readable, whatever it held. A command writing
one byte every ~20 µs (sleeping in between: a few % of a core) made the owner's event loop -- which
every session of the process shares, outside any CPU limit of the sandbox -- wake up, read, account
and save once per byte: ~50 µs each, 55-60% of a core for one such command. A read that found
less than a pipe's worth of output now waits out a short gap after the previous read
(`execution._ReadPacer`): the bytes gather in the pipe and come in one read. A writer fast enough to fill
the pipe is never slowed; a lone line is not delayed.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from shellrt.supervisor.execution import PACED_WINDOW_S
from tests._local_session import local_supervisor

#: The command: one byte per write, ~20 µs apart, for 1 s; then the count on stderr.
_DRIBBLE = (
    'python3 -c "import os, time\nend = time.monotonic() + 1.0\nn = 0\n'
    "while time.monotonic() < end:\n os.write(1, b'x'); n += 1; time.sleep(2e-5)\n"
    'os.write(2, str(n).encode())"'
)


def test_a_dribbling_command_costs_the_owner_few_reads(tmp_path: Path) -> None:
    """Failed before (1 of 1, load ~2): 9,000-17,000 reads for ~1 s of output, one per write."""
    ws = tmp_path / "ws"
    ws.mkdir()
    reads = {"stdout": 0, "stderr": 0}

    def count(stream: str, _chunk: bytes) -> None:
        reads[stream] += 1

    async def main() -> None:
        async with local_supervisor(ws, tmp_path / "s") as sup:
            result = await sup.run(_DRIBBLE, timeout_s=60, merge_stderr=False, on_output=count)
            writes = int(result.stderr)
            assert result.exit_code == 0 and result.stdout_bytes == writes, (result, writes)
            # ~1.1 s of paced reads at most one a gap, plus the unpaced first 20 ms (the fast pump)
            bound = int(1.5 / PACED_WINDOW_S) * 3 + 100
            assert reads["stdout"] <= bound, (reads, writes, bound)

    anyio.run(main)
