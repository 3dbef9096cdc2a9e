"""Red team round 24 (trusted): a hook's project runner runs what it finds in the workspace by search.

``uv run fmtx`` runs the project's ``.venv/bin/fmtx`` (``poetry run``, ``pdm run`` likewise;
``bundle`` evaluates the ``Gemfile``, ``go run``/``cargo run`` compile the module). Round 23
recorded only the manifests of ``content_anchor.MANIFESTS`` and the root's own files: a command
rewrote ``.venv/bin/fmtx`` and the operator's ``PostToolUse`` hook ran it on the host at once.
The runner here is a stand-in on the host, outside the workspace, doing what ``uv run --no-sync``
does (run ``.venv/bin/<name>`` of the directory it runs in): no ``uv`` is installed here, and
what shellrt records of the hook, not uv, is under test.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, hook_files
from tests._calls import session_results


def _session(ws: Path, own: Path, session: Path, command: str) -> list[dict[str, Any]]:
    return session_results(ws, "local", [("Bash", {"command": command})], mode="bypassPermissions",
                           settings_files=[own], session_dir=session)


def test_a_runners_planted_local_binary_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed 1 of 1 before: the hook ran the rewritten ``.venv/bin/fmtx`` in the same session."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (ws / ".venv" / "bin" / "fmtx").write_text("#!/bin/sh\nexit 0\n")
    (ws / ".venv" / "bin" / "fmtx").chmod(0o755)
    uv = tmp_path / "host" / "uv"  # the operator's runner, outside the workspace
    uv.parent.mkdir()
    uv.write_text('#!/bin/sh\n[ "$1" = run ] || exit 2\nshift\nexec ".venv/bin/$1"\n')
    uv.chmod(0o755)
    marker = tmp_path / "ran-on-the-host"
    own = tmp_path / "operator.json"  # the operator's own file: always obeyed, never trust-checked
    hook = {"type": "command", "command": f"{shlex.quote(str(uv))} run fmtx"}
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}))
    plant = f"printf '#!/bin/sh\\ntouch {marker}\\n' > .venv/bin/fmtx && echo planted"
    first = _session(ws, own, tmp_path / "s1", plant)
    assert "planted" in json.dumps(first), first
    assert not marker.exists(), "the hook's runner ran a local binary a command planted"
    second = _session(ws, own, tmp_path / "s2", "echo next")
    assert "next" in json.dumps(second), second
    assert not marker.exists(), "the next session's hook ran a local binary a command planted"


@pytest.mark.parametrize(
    ("command", "whole"),
    [("uv run ruff format", True), ("uv --project . run x", True), ("/opt/uv/bin/uv run x", True),
     ("poetry run black .", True), ("bundle exec rubocop -a", True), ("go run ./cmd/fmt", True),
     ("cargo clippy --fix", True), ("go fmt ./...", False), ("cargo fmt", False), ("uv pip list", False)],
)
def test_project_runners_record_the_workspace(tmp_path: Path, command: str, whole: bool) -> None:
    """What the runners load by search is the project: the workspace tree is recorded (or, over
    its bounds, never vouched for); their formatters that read nothing of it are not."""
    (tmp_path / "pyproject.toml").write_text("")
    found = hook_files(tmp_path, [command])
    assert (WHOLE_WORKSPACE in {*found.files, *found.dirs}) is whole, found
