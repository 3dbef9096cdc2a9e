"""Red team round 6: a non-root caller's command hid a planted git hook from the protected-files check.

With a non-root caller, bwrap commands keep the caller's uid, so they may change the modes of
what they create. A command planted ``.git/hooks/pre-commit`` and then ran ``chmod 111
.git/hooks``: the host (the same uid, without ``CAP_DAC_READ_SEARCH``) could no longer list the
directory and the check took it for empty, while git opens hooks by name and needs only search
permission: the operator's next ``git commit`` on the host ran the hook. A directory the host
cannot list is now given back its owner's read and search bits and checked like the rest. With
``chmod 555 .git/hooks`` the hook was found, but the revert could neither move nor remove it (the
note said "reverted"): the parent now gets its owner's write bit back first.

The attack tests here run for whoever runs pytest; `test_the_attacks_hold_for_an_unprivileged_caller`
(root) runs them as uid 65534, where the hole was (a root host reads every directory).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import CommandResult, Supervisor
from tests import _nonroot
from tests.conftest import require

_PLANT = (
    "printf '#!/bin/sh\\ntouch \"$HOME/pwned-by-hook\"\\n' > .git/hooks/pre-commit && "
    "chmod +x .git/hooks/pre-commit && chmod {mode} {locked}"
)


def _run(ws: Path, session: Path, command: str) -> CommandResult:
    async def main() -> CommandResult:
        backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                return await sup.run(command, timeout_s=60)
        finally:
            await backend.close()

    return anyio.run(main)


@pytest.mark.parametrize(
    ("mode", "locked"), [("111", ".git/hooks"), ("111", ".git"), ("311", "."), ("555", ".git/hooks")]
)
def test_an_unlistable_directory_does_not_hide_a_planted_hook(tmp_path: Path, mode: str, locked: str) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    result = _run(ws, tmp_path / "session", _PLANT.format(mode=mode, locked=locked))
    assert result.exit_code == 0, result
    assert not (ws / ".git/hooks/pre-commit").exists(), result.notes
    assert "reverted" in "\n".join(result.notes), result.notes
    assert os.access(ws / locked, os.R_OK), "the directory is listable again"


def test_a_deleted_settings_file_is_restored_into_a_read_only_directory(tmp_path: Path) -> None:
    """The workspace's settings carry deny rules: deleted, they are put back, also when the command
    then took the write bit off ``.claude`` (non-root: its own directory)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    rules = '{"permissions": {"deny": ["Read(./secrets/**)"]}}'
    (ws / ".claude/settings.json").write_text(rules)
    result = _run(ws, tmp_path / "session", "rm .claude/settings.json && chmod 555 .claude")
    assert result.exit_code == 0, result
    assert (ws / ".claude/settings.json").read_text() == rules, result.notes


def test_the_attacks_hold_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    tests = (
        "test_an_unlistable_directory_does_not_hide_a_planted_hook",
        "test_a_deleted_settings_file_is_restored_into_a_read_only_directory",
    )
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}" for name in tests],
        collect_args=[f"{__file__}::{name}" for name in tests],
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
