"""The local hot path keeps every safety step while doing less per call (issue 22, item 2).

A foreground command whose cwd nobody reads runs with an empty trap instead of the
cwd report; one that is tracked keeps the report, and a ``cd`` is still followed. ``ps``
shows the shell and the command text either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import psutil
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.protocol import ToolContext
from shellrt.supervisor import Supervisor
from shellrt.supervisor.shells import shell_argv
from shellrt.tools.bash import Bash, BashInput
from tests._proc_words import shown_words

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sup(tmp_path: Path) -> AsyncIterator[Supervisor]:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    async with (
        LocalBackend(policy=SandboxPolicy(workspace=ws)) as backend,
        Supervisor(backend, session_dir=tmp_path / "s") as supervisor,
    ):
        yield supervisor


def test_the_report_is_left_out_only_when_no_one_reads_it() -> None:
    assert "SHELLRT_CWD_FILE" in shell_argv("true", "bash")[2]
    assert shell_argv("true", "bash", report_cwd=False) == ("bash", "-c", "trap : EXIT; true\n")


async def test_an_untracked_command_runs_without_the_report(sup: Supervisor) -> None:
    untracked = await sup.run("trap -p EXIT", timeout_s=30, track_cwd=False)
    assert untracked.exit_code == 0 and untracked.preview.strip() == "trap -- ':' EXIT"
    tracked = await sup.run("trap -p EXIT", timeout_s=30)
    assert "SHELLRT_CWD_FILE" in tracked.preview


async def test_a_tracked_cd_is_still_followed(sup: Supervisor) -> None:
    root = sup.cwd
    moved = await sup.run("cd sub", timeout_s=30)
    assert moved.cwd_changed and sup.cwd == str(Path(root) / "sub")
    stay = await sup.run("cd .. && pwd", timeout_s=30, track_cwd=False)
    assert stay.preview.strip() == root and not stay.cwd_changed and sup.cwd == str(Path(root) / "sub")


async def test_ps_shows_the_shell_and_the_command_text(sup: Supervisor) -> None:
    """``ps e`` (its owner's view): the text is in the shell's environment, not in its argv."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: sup.run("sleep 30 # fast-path-ps", timeout_s=30, track_cwd=False))
        for _ in range(500):  # a lone program is not exec'd in the shell's place: bash stays the root
            found = [
                p for p in psutil.process_iter(["cmdline"]) if "fast-path-ps" in " ".join(shown_words(p.pid))
            ]
            if found:
                break
            await anyio.sleep(0.01)
        assert found and found[0].info["cmdline"][:2] == ["bash", "-c"]
        assert "fast-path-ps" not in " ".join(found[0].info["cmdline"])
        tg.cancel_scope.cancel()


async def test_the_bash_tool_skips_the_trap_only_for_commands_that_cannot_cd(
    sup: Supervisor, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ctx = ToolContext(
        session_id="fast-path",
        session_dir=sup.session_dir,
        workspace=ws,
        cwd=sup.cwd,
        allowed_roots=(ws,),
        services={Supervisor: sup},
    )
    bash = Bash()
    plain = BashInput(command="trap -p EXIT; true")
    assert not bash.may_change_cwd(BashInput(command="echo hi"))
    out = await bash.call(BashInput(command="cd sub && trap -p EXIT"), ctx)
    assert "SHELLRT_CWD_FILE" in out.data.output and out.data.cwd_changed
    assert bash.may_change_cwd(plain)  # `trap` is not a known read-only program: tracked
