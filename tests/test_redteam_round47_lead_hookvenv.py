"""Stop 60 (lead), a second read of round 47 hooks6's interpreter record (`hook_venvs`).

An interpreter the hook names outside the workspace whose real file is inside it (an operator's
link to a project's tool) recorded nothing: a command rewrites the file and the operator's hook
runs it on the host. It is recorded as the whole tree now (fail closed), and never asked (run) at
record time. And the interpreter a bare name finds is looked up as the hook's shell finds it
(`host_path`, without the workspace's places), not on this process's whole ``PATH``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from shellrt.permissions import hook_venvs


def test_an_outside_name_for_a_workspace_interpreter_records_the_tree(tmp_path: Path) -> None:
    """Failed before: ``[]`` (nothing recorded for it)."""
    ws = tmp_path / "ws"
    (ws / "tools").mkdir(parents=True)
    ran = tmp_path / "ran"
    script = ws / "tools" / "python3"
    script.write_text(f"#!/bin/sh\ntouch {ran}\n")
    script.chmod(0o755)
    outside = tmp_path / "bin"
    outside.mkdir()
    (outside / "python3").symlink_to(script)
    assert hook_venvs._workspace_imports(str(ws), str(outside / "python3")) == ["."]
    assert not ran.exists(), "a workspace file was run on the host to ask it"


def test_a_bare_name_is_not_looked_up_in_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace directory first on PATH (an activated venv) holds ``python3``: the bare name is
    the host's interpreter for the record, as for the hook's shell (`host_env`)."""
    ws = tmp_path / "ws"
    bin_dir = ws / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "python3"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    host = os.path.dirname(os.path.realpath(sys.executable))
    monkeypatch.setenv("PATH", f"{bin_dir}:{host}:/usr/bin:/bin")
    seen: list[str] = []
    monkeypatch.setattr(hook_venvs, "_import_path", lambda binary, base: seen.append(binary) or ())
    hook_venvs._workspace_imports(str(ws), "python3")
    assert seen and not seen[0].startswith(str(ws)), seen
