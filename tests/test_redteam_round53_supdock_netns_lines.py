"""Red team round 53 (supdock): a sandboxed command's socket pairs made every host check read them.

Before each bwrap command (every session's on the host, per-command sandboxes too) the host lists the
unix sockets of every other network namespace (`sandbox._netns_sockets.namespace_lines`) and judges
them line by line in Python. A session command holding 60,000 socket pairs (no path: nothing can
connect to them) made each later command of every session cost ~0.27 s of the host's event loop, a
third of it the kernel's read, the rest Python parsing lines no path reaches. Now lines of sockets
without a path, and abstract ones (only their own namespace reaches those), are dropped at the read,
by one pattern, and a table read again unchanged costs one comparison.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from sandbox import _netns_sockets
from tests._bwrap_session import zygote_session

pytestmark = [pytest.mark.bwrap, pytest.mark.anyio]

#: Socket pairs the command holds (one process: under the sandbox's 20,000 descriptors).
_PAIRS = 9_000

_HOLD = r"""
import os, socket, sys, time
keep = [s for _ in range({pairs}) for s in socket.socketpair(socket.AF_UNIX)]
named = socket.socket(socket.AF_UNIX)
named.bind("/tmp/r53-named-{tag}.sock")
abstract = socket.socket(socket.AF_UNIX)
abstract.bind("\0r53-abstract-{tag}")
open("ready", "w").close()
time.sleep(3000)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_socket_pairs_in_a_sandbox_do_not_reach_the_hosts_per_command_parsing(tmp_path: Path) -> None:
    """Failed before: the session's namespace gave the host 18,000+ lines to parse at every check."""
    tag = tmp_path.name
    async with zygote_session(tmp_path) as (_backend, sup):
        ws = tmp_path / "ws"
        (ws / "hold.py").write_text(_HOLD.format(pairs=_PAIRS, tag=tag))
        task = await sup.start_background("exec python3 hold.py")
        with anyio.fail_after(60):
            while not (ws / "ready").exists():
                await anyio.sleep(0.05)
        # What a command costs the host now (printed for the report; no timing assertion on a busy host).
        cpu = time.process_time()
        for _ in range(3):
            assert (await sup.run("true", timeout_s=60)).exit_code == 0
        print(
            f"host CPU a command beside {2 * _PAIRS} sockets: {(time.process_time() - cpu) / 3 * 1000:.1f} ms"
        )
        ours, _theirs = _netns_sockets.namespace_lines()
        lines = ours.splitlines()
        assert len(lines) < 1_000, (
            f"{len(lines)} socket lines of the sandbox's namespace reach the host's per-command parsing; "
            f"{2 * _PAIRS} of them are socket pairs no path reaches"
        )
        assert f"/tmp/r53-named-{tag}.sock".encode() in ours, "a pathname socket must still be listed"
        assert f"@r53-abstract-{tag}".encode() not in ours, "an abstract socket reaches no path"
        await sup.tasks.stop(task.id)


def test_only_lines_no_path_reaches_are_dropped() -> None:
    """The filter keeps every pathname line (absolute, relative, one with spaces), and a line of a
    format it does not know; drops an unnamed and an abstract socket's. A path holding a line end
    keeps its first part (what the callers judged before)."""
    head = b"0000000000000000: 00000003 00000000 00000000 0001 03 "
    kept = [head + b"15788 /run/a b.sock", head + b"15790 rel.sock", b"odd line", head + b"15791 /x\ny"]
    dropped = [head + b" 5788", head + b"15789 @abstract", head + b"15792"]
    table = b"".join(
        line + b"\n" for line in (dropped[0], kept[0], dropped[1], kept[1], kept[2], dropped[2], kept[3])
    )
    got = _netns_sockets._Pathnames().of(1, table)
    assert got == b"".join(line + b"\n" for line in kept)
