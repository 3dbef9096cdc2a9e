"""Red team round 13 (host side): the session's cwd, judged by the host, entered by the sandbox.

The shell reports ``pwd -P`` when a command changed directory, in a file the command can write
(``$SHELLRT_CWD_FILE``), and the host adopts it when it is inside the roots and a directory *on
the host*. The host followed symlinks there and judged with its own eyes:

* a forged report through a symlink the command made (``ws/l -> /tmp``) named a directory only
  the host has (the host's ``/tmp``; the sandbox's is private): the host answered "Working
  directory is now ..." for a host directory that exists and "no longer exists" for one that
  does not (an oracle on host paths the sandbox cannot see), and adopted the first;
* the sandbox could not enter what the host adopted (that host-only directory; ``cd d && chmod
  000 .`` with the host running as root): every later command failed with "cannot enter the
  working directory" and no command could ``cd`` out: the session's Bash was wedged for good;
* a directory of the tracked cwd swapped for a symlink after it was adopted did the same.

Failed before: the oracle answered, and the second and third commands of each wedge failed.
Now a cwd is adopted (and started in) only as a physical directory, reached from its root one
component at a time without following a symlink (``pwd -P`` never reports one); and a command
that could not enter the session's cwd makes the supervisor ask the sandbox itself (the probe
`shellrt.supervisor._cwd_probe` runs for explicit cwds): when it cannot, the session's cwd goes
back to the workspace root and the result says so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from tests._rt13_host import bypass_runtime, host_ws, tool_result
from tests.conftest import require

pytestmark = pytest.mark.anyio


async def _bash(rt: shellrt.Runtime, command: str) -> tuple[str, bool]:
    return await tool_result(rt, "Bash", {"command": command})


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from host_ws(tmp_path, monkeypatch, "rt13-cwd-")


@pytest.fixture
def host_only() -> Iterator[str]:
    """A directory in the host's /tmp: the sandbox's /tmp is its own, it cannot see this one."""
    path = tempfile.mkdtemp(prefix="rt13-hostonly-", dir="/tmp")
    try:
        yield os.path.basename(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _forge(target: str) -> str:
    """A command that leaves ``target`` as its cwd report (the shell's own report switched off)."""
    return f'cd .; trap - EXIT; printf "%s" "{target}" > "$SHELLRT_CWD_FILE"'


async def test_a_forged_report_through_a_symlink_is_neither_adopted_nor_an_oracle(
    ws: Path, tmp_path: Path, host_only: str
) -> None:
    async with bypass_runtime(ws, tmp_path) as rt:
        seen, _ = await _bash(rt, f"ln -s /tmp l; ls -d /tmp/{host_only} 2>&1")
        assert "No such file" in seen, seen  # the sandbox cannot see it
        there, _ = await _bash(rt, _forge(f"{ws}/l/{host_only}"))
        missing, _ = await _bash(rt, _forge(f"{ws}/l/{host_only}-not-there"))
        # The same answer whether the host has the directory or not.
        assert there.replace(host_only, "X") == missing.replace(f"{host_only}-not-there", "X"), (
            there,
            missing,
        )
        assert "Working directory is now" not in there, there
        after, failed = await _bash(rt, "pwd")
        assert not failed and after.splitlines()[0] == str(ws), after


async def test_a_cwd_the_sandbox_cannot_enter_does_not_wedge_the_session(ws: Path, tmp_path: Path) -> None:
    require(os.geteuid() == 0, "the host must be able to enter what the sandbox's user cannot (root caller)")
    async with bypass_runtime(ws, tmp_path) as rt:
        await _bash(rt, "mkdir d && cd d && chmod 000 .")
        first, failed = await _bash(rt, "pwd")
        assert failed or "cannot enter" in first, first
        assert "workspace root" in first, first  # said: the session's cwd is back at the root
        after, failed = await _bash(rt, "pwd")
        assert not failed and after.splitlines()[0] == str(ws), after


async def test_a_tracked_cwd_swapped_for_a_symlink_is_not_followed(
    ws: Path, tmp_path: Path, host_only: str
) -> None:
    async with bypass_runtime(ws, tmp_path) as rt:
        for name, target in (("a", f"/tmp/{host_only}"), ("b", f"/tmp/{host_only}-not-there")):
            moved, _ = await _bash(rt, f"mkdir -p {name} && cd {name}")
            assert f"Working directory is now {ws}/{name}" in moved, moved
            # From inside, without changing $PWD (no report): the directory becomes a symlink.
            swapped, _ = await _bash(rt, f"mv ../{name} ../{name}.real && ln -s {target} ../{name}")
            after, failed = await _bash(rt, "pwd")
            assert not failed and after.splitlines()[0] == str(ws), (name, swapped, after)
            assert "no longer exists" in swapped + after, (swapped, after)
