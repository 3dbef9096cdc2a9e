"""Red team, round 14 (classifier): ``env -C DIR cmd`` ran cmd's relative paths below DIR unseen.

GNU env's ``-C DIR``/``--chdir=DIR`` changes directory before it runs the command. The part of the
wrapped command (``cat key``) was resolved from the working directory, so under ``Bash(env:*)`` and
``Bash(cat:*)`` the command ``env -C secrets cat key`` printed ``secrets/key`` past a
``Read(./secrets/key)`` deny rule (the directory word ``secrets`` met no file rule). Such an ``env``
(also ``-iCDIR``, ``--ch DIR``, behind ``nice``) now makes every relative path of the command
unknown, like ``cd -``: the Bash tool asks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools._bashparts import _env_chdir
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "argv",
    [["env", "-C", "d", "cat", "k"], ["env", "-iCd", "cat"], ["env", "--chdir=d", "cat"], ["env", "--ch", "d", "cat"],
     ["nice", "env", "-C", "d", "cat"], ["/usr/bin/env", "-i", "-C", "d", "ls"]],
)
def test_env_changes_directory(argv: list[str]) -> None:
    assert _env_chdir(argv)


@pytest.mark.parametrize(
    "argv", [["env", "-u", "C", "cat"], ["env", "X=1", "cat", "k"], ["env", "grep", "-C", "3", "x"], ["env", "-uC", "ls"]]
)
def test_other_env_forms_do_not(argv: list[str]) -> None:
    assert not _env_chdir(argv)


async def test_a_denied_file_is_not_printed(ws: Path) -> None:
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("hunter2\n")
    commands = ["env -C secrets cat key", "env -iCsecrets cat key", "env --chdir=secrets cat key"]
    envelopes = await run_bash(
        ws, commands, mode="default", id_prefix="r14e", allow=["Bash(env:*)", "Bash(cat:*)"],
        deny=["Read(./secrets/key)"],
    )
    for command, envelope in zip(commands, envelopes, strict=True):
        assert envelope.is_error and "hunter2" not in _text(envelope), (command, _text(envelope))
