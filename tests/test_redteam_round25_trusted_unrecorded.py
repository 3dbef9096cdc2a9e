"""Red team round 25 (trusted, second wave): a session that records nothing plants for the next one.

Only a session with a hook or stdio server loading the workspace whole recorded its tree
(`shellrt.permissions.tree_writes`). A session without one (``shellrt run --sandbox bwrap``, a
`Runtime` with other settings) wrote ``sitecustomize.py`` unrecorded, and the next session's
operator server (``"cwd"``: the workspace) imported it on the host. Now every session that runs
commands marks its writable roots (`shellrt.permissions.tree_marks`, no hashing) and a guarded
start refuses when the tree is not as last left or reviewed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests._governance import isolated_workspace
from tests.test_redteam_round24_trusted_treeplant import _server, _session

_ROOT = str(Path(__file__).resolve().parent.parent)
ECHO = ("mcp__srv__echo", {"text": "hi"})


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """The workspace, the operator's settings (a server whose cwd is the workspace), a marker path."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "app.py").write_text("X = 1\n")
    own = tmp_path / "operator.json"  # the operator's own file: obeyed, never trust-checked
    own.write_text(json.dumps({"mcpServers": {"srv": _server(ws, "cwd")}}))
    return ws, own, tmp_path / "ran-on-the-host"


def _plant(marker: Path) -> str:
    """A shell command writing a ``sitecustomize.py`` that leaves ``marker`` when imported."""
    code = f"open({str(marker)!r}, 'w')"
    return f"printf '%s\\n' {shlex.quote(code)} > sitecustomize.py && echo wrote"


def _shellrt(*words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "shellrt", *words], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("first", ["run-bwrap", "run-local", "runtime"])
def test_a_plant_by_a_session_that_recorded_nothing_is_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    """Failed 3 of 3 before: the second session's server imported the planted sitecustomize."""
    ws, own, marker = _setup(tmp_path, monkeypatch)
    plant = _plant(marker)
    if first == "runtime":  # the same workspace, no such server in this session's settings
        out = _session(ws, tmp_path / "other.json", tmp_path / "s1", [("Bash", {"command": plant})])
        assert "wrote" in json.dumps(out), out
    else:
        done = _shellrt("run", "--sandbox", first.split("-")[1], "--workspace", str(ws), "--", f"cd {ws} && {plant}")
        assert done.returncode == 0 and "wrote" in done.stdout, done
    assert (ws / "sitecustomize.py").exists()
    second = _session(ws, own, tmp_path / "s2", [ECHO])
    assert not marker.exists(), "the next session's server loaded a module a session that recorded nothing planted"
    assert "open(" in (ws / "sitecustomize.py").read_text()
    assert second[0].get("is_error"), second
    said = " ".join(second[-1])
    assert "did not record the tree" in said and "shellrt trust add" in said, said


@pytest.fixture(autouse=True)
def _no_other_settings(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text("{}")


def test_operator_edits_between_guarded_sessions_stay_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held (the false positive to avoid): the operator's own edit with no sandboxed session since
    the last guarded one ended; and `shellrt trust add` after an unrecorded session."""
    from shellrt.permissions.trust import record_trust

    ws, own, marker = _setup(tmp_path, monkeypatch)
    first = _session(ws, own, tmp_path / "s1", [ECHO])
    assert not first[0].get("is_error"), first
    (ws / "app.py").write_text("X = 2\n")  # the operator, on the host
    again = _session(ws, own, tmp_path / "s2", [ECHO])
    assert not again[0].get("is_error"), again
    done = _shellrt("run", "--sandbox", "local", "--workspace", str(ws), "--", "echo note > notes.txt")
    assert done.returncode == 0, done
    assert _session(ws, own, tmp_path / "s3", [ECHO])[0].get("is_error")
    record_trust(ws)  # reviewed
    out = _session(ws, own, tmp_path / "s4", [ECHO])
    assert not out[0].get("is_error"), out
    assert not marker.exists()


def test_a_mark_that_cannot_be_written_refuses_the_server_not_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails closed: the note marks are appended to is a link (not the caller's file), so the
    run's mark cannot be written; the command runs, and the next guarded start refuses."""
    from shellrt.permissions.tree_writes import begin_tree_session
    from shellrt.supervisor._tree_note import note_path

    ws, _own, _marker = _setup(tmp_path, monkeypatch)
    note_path().parent.mkdir(parents=True, exist_ok=True)
    note_path().symlink_to(tmp_path / "elsewhere")
    done = _shellrt("run", "--sandbox", "local", "--workspace", str(ws), "--", "echo plant > sitecustomize.py")
    assert done.returncode == 0 and (ws / "sitecustomize.py").exists(), done  # never blocks the command
    assert not (tmp_path / "elsewhere").exists()
    why, _ = begin_tree_session(ws)
    assert why is not None and "did not record the tree" in why, why
