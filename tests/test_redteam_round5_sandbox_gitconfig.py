"""Red team round 5: with the home directory as the workspace, a command rewrote the operator's git config.

``~/.gitconfig`` (and ``~/.config/git/config``) is the one git configuration shellrt trusts: its
code-running keys are the operator's. The protected-files check watched the ``config`` of git
directories only, so a command run in a home workspace added ``core.fsmonitor`` (or an alias, a
pager, a credential helper) there, and every git the operator ran on the host afterwards ran it.
A user-level git config is now judged as a repository's is: a changed set of code-running keys
is reverted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import CommandResult, Supervisor
from tests.conftest import require


def _run(home: Path, session: Path, command: str) -> CommandResult:
    async def main() -> CommandResult:
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=home))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                return await sup.run(command, timeout_s=60)
        finally:
            await backend.close()

    return anyio.run(main)


@pytest.mark.parametrize("where", [".gitconfig", ".config/git/config"])
def test_a_command_cannot_add_code_running_keys_to_the_operators_git_config(
    tmp_path: Path, where: str
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    home = tmp_path / "home"
    config = home / where
    config.parent.mkdir(parents=True)
    original = "[user]\n\tname = Operator\n"
    config.write_text(original)
    result = _run(
        home,
        tmp_path / "session",
        f"git config -f {where} core.fsmonitor 'touch /tmp/pwned' && git config -f {where} user.email a@b.c",
    )
    assert result.exit_code == 0, result
    assert "reverted" in "\n".join(result.notes), result.notes
    assert "fsmonitor" not in config.read_text()


def test_benign_changes_to_the_operators_git_config_are_kept(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Operator\n")
    result = _run(home, tmp_path / "session", "git config -f .gitconfig user.email a@b.c")
    assert result.exit_code == 0 and not result.notes, result
    assert "a@b.c" in (home / ".gitconfig").read_text()
