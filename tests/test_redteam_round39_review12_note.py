"""Red team round 39 (review12): the note for a reverted file of a PATH directory says why.

Trust2 guards every absolute PATH directory in the workspace whole: an edit the agent makes there
is undone (the old content restored, the new one quarantined). The note gave the generic "a settings,
start-up or editor file..." reason: the model could not tell that the directory being on the
operator's PATH is the cause, nor that starting shellrt without that entry is the way on.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._round39_trust2 import run_bash, workspace


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_a_reverted_path_file_is_named_as_such(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "tools/bin")
    old = ws / "tools" / "bin" / "existing"
    old.write_text("#!/bin/sh\necho old\n")
    old.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("PATH", f"{ws / 'tools' / 'bin'}:{os.environ['PATH']}")
    command = "/usr/bin/python3 -c \"open('tools/bin/' + 'existing', 'a').write('echo new')\" && echo ran"
    results = run_bash(ws, tmp_path / "s", command, backend)
    text = str(results[0]["content"])
    assert "ran" in text, text
    assert old.read_text() == "#!/bin/sh\necho old\n", text  # restored, not deleted
    assert "reverted" in text and "on your PATH" in text, text
