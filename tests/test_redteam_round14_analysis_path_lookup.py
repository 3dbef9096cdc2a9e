"""Red team, round 14 (classifier): a relative ``PATH`` entry makes a read-only name run a workspace file.

The command environment takes ``PATH`` from the host (``supervisor.env.base_env``). A host ``PATH``
holding a relative entry (``bin``, ``node_modules/.bin``, ``.``, an empty entry, a trailing ``:``)
is searched from the command's working directory, so with ``PATH=bin:/usr/bin:...`` a hostile
repository's ``bin/ls`` ran for ``ls``: judged read-only, auto-allowed in default mode, no part
naming anything but ``ls``. Now a part whose program a relative entry may supply (one searched
before the first absolute entry holding the program) carries a hazard: not read-only, and allow
rules do not cover it (the engine asks). Shell builtins (``echo``, ``cd``) search no ``PATH``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from shellrt.protocol import ResultEnvelope
from shellrt.tools._bashparts import path_lookup_hazard
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_SYSTEM = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r14p", **kw)


@pytest.mark.parametrize("search", [f"bin:{_SYSTEM}", f".:{_SYSTEM}", f":{_SYSTEM}", f"node_modules/.bin:{_SYSTEM}"])
@pytest.mark.parametrize("name", ["ls", "cat", "git", "grep"])
def test_a_relative_entry_before_the_program_is_a_hazard(search: str, name: str) -> None:
    assert "relative directory" in path_lookup_hazard(name, "bash", search)


@pytest.mark.parametrize("search", [_SYSTEM, f"{_SYSTEM}:bin", f"{_SYSTEM}:", ""])
def test_absolute_entries_first_are_no_hazard(search: str) -> None:
    assert path_lookup_hazard("ls", "bash", search) == ""


@pytest.mark.parametrize("name", ["echo", "cd", "pwd", "printf", "test", "true", "type"])
def test_builtins_search_no_path(name: str) -> None:
    assert path_lookup_hazard(name, "bash", f"bin:{_SYSTEM}") == ""
    assert path_lookup_hazard(name, "sh", f"bin:{_SYSTEM}") == ""


def test_bash_only_builtins_are_programs_to_sh() -> None:
    assert path_lookup_hazard("history", "bash", f"bin:{_SYSTEM}") == ""
    assert path_lookup_hazard("history", "sh", f"bin:{_SYSTEM}") != ""


async def test_a_workspace_ls_does_not_run_unasked(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"bin:{os.environ['PATH']}")
    (ws / "bin").mkdir()
    fake = ws / "bin" / "ls"
    fake.write_text("#!/bin/sh\ntouch PWNED\n")
    fake.chmod(0o755)
    envelopes = await _bash(ws, ["ls", "ls -la", "echo hi"], mode="default", allow=["Bash(ls:*)"])
    assert not (ws / "PWNED").exists(), [_text(e) for e in envelopes]
    assert all(e.is_error for e in envelopes[:2]), [_text(e) for e in envelopes]
    assert not envelopes[2].is_error and "hi" in _text(envelopes[2])


def test_man_runs_helpers_from_any_relative_entry() -> None:
    # man-db runs nroff/groff/tbl/preconv through PATH: a helper not installed comes from `bin`.
    assert "helper programs" in path_lookup_hazard("man", "bash", f"{_SYSTEM}:bin")
    assert path_lookup_hazard("man", "bash", _SYSTEM) == ""
    assert "helper programs" in path_lookup_hazard("locale", "bash", f"{_SYSTEM}:bin")  # --charmaps: gzip


async def test_bypass_mode_asks_too(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"bin:{os.environ['PATH']}")
    (ws / "bin").mkdir()
    fake = ws / "bin" / "cat"
    fake.write_text("#!/bin/sh\ntouch PWNED\n")
    fake.chmod(0o755)
    [envelope] = await _bash(ws, ["cat README"], mode="bypassPermissions")
    assert envelope.is_error and "relative directory" in _text(envelope), _text(envelope)
    assert not (ws / "PWNED").exists()
