"""Red team round 16 (trusted): git configuration the check did not see.

Round 16 (consent) protected the directory ``.git/config`` names as ``core.hooksPath``. git reads
more than that file: a file it includes (``[include] path = ../.gitconfig.local``, a common way to
share settings), and the operator's own ``~/.gitconfig``, where a *relative* ``core.hooksPath``
(``.githooks``) names a directory of every repository. Before: a command (``python3 -c``, which
the analysis cannot see into) added ``core.fsmonitor`` to the included file, or planted an
executable ``.githooks/pre-commit``, and the check kept both -- the operator's next ``git status``
or ``git commit`` ran them unsandboxed; the file tools wrote them under ``acceptEdits`` unasked.
Real sessions, local and bwrap (as the caller runs them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests._calls import session_results
from tests.conftest import require

_BENIGN = "#!/bin/sh\nexit 0\n"


def _run(ws: Path, backend: str, mode: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return session_results(ws, backend, calls, mode=mode, session_dir=ws.parent / f"session-{mode}")


def _repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, global_config: str = "") -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(global_config)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def _py(code: str) -> str:
    return f'python3 -c "{code}"; echo planted'


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_an_included_config_file_is_git_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = _repo(tmp_path, monkeypatch)
    subprocess.run(["git", "-C", str(ws), "config", "include.path", "../.gitconfig.local"], check=True)
    shared = ws / ".gitconfig.local"
    shared.write_text("[core]\n\thooksPath = .githooks\n")
    hook = ws / ".githooks" / "pre-commit"
    hook.parent.mkdir()
    hook.write_text(_BENIGN)
    hook.chmod(0o755)

    fsmonitor = _py("open('.gitconfig.local', 'a').write('[core]\\\\n\\\\tfsmonitor = touch /tmp/r16-fsm\\\\n')")
    plant = _py("open('.githooks/pre-commit', 'a').write('touch /tmp/r16-hook')")
    results = _run(ws, backend, "bypassPermissions", [("Bash", {"command": fsmonitor}), ("Bash", {"command": plant})])
    for result in results:
        shown = json.dumps(result)
        assert "planted" in shown and "reverted" in shown, shown
    assert shared.read_text() == "[core]\n\thooksPath = .githooks\n"
    assert hook.read_text() == _BENIGN
    # git agrees on what it would obey: nothing of the command's.
    got = subprocess.run(["git", "-C", str(ws), "config", "--get", "core.fsmonitor"], capture_output=True, text=True)
    assert got.stdout == ""

    asked = _run(
        ws,
        backend,
        "acceptEdits",
        [
            ("Read", {"file_path": str(shared)}),
            ("Edit", {"file_path": str(shared), "old_string": ".githooks", "new_string": ".x"}),
            ("Write", {"file_path": str(ws / ".githooks" / "post-merge"), "content": _BENIGN}),
        ],
    )
    assert asked[1]["is_error"] and "includes" in json.dumps(asked[1]), asked[1]
    assert asked[2]["is_error"] and "core.hooksPath" in json.dumps(asked[2]), asked[2]
    assert not (ws / ".githooks" / "post-merge").exists()


def test_the_operators_relative_hooks_path_names_a_hooks_dir_in_every_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _repo(tmp_path, monkeypatch, "[core]\n\thooksPath = .githooks\n")
    (ws / ".githooks").mkdir()
    plant = _py(
        "import os; open('.githooks/pre-commit', 'w').write('#!/bin/sh\\\\ntouch /tmp/r16-hook\\\\n'); "
        "os.chmod('.githooks/pre-commit', 0o755)"
    )
    results = _run(
        ws,
        "local",
        "bypassPermissions",
        [
            ("Bash", {"command": plant}),
            ("Write", {"file_path": str(ws / ".githooks" / "post-merge"), "content": _BENIGN}),
            # A command setting a hooks path itself: the config change is undone (held since round 4).
            ("Bash", {"command": _py("import subprocess; subprocess.run(['git', 'config', 'core.hooksPath', '.h2'])")}),
        ],
    )
    shown = json.dumps(results[0])
    assert "planted" in shown and "reverted" in shown and ".githooks/pre-commit" in shown, shown
    assert not (ws / ".githooks" / "pre-commit").exists()
    assert results[1]["is_error"] and "core.hooksPath" in json.dumps(results[1]), results[1]
    assert not (ws / ".githooks" / "post-merge").exists()
    assert "reverted" in json.dumps(results[2])
    got = subprocess.run(["git", "-C", str(ws), "config", "--get", "core.hooksPath"], capture_output=True, text=True)
    assert got.stdout.strip() == ".githooks"  # the operator's, from ~/.gitconfig


def test_a_command_cannot_hide_files_from_git_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``.git/info/exclude`` and ``status.showUntrackedFiles=no`` are invisible in every diff and
    make a planted file (a ``conftest.py`` pytest runs, an ``.npmrc``) invisible in ``git
    status``. A command's change to them is undone; ``git init`` (comments only) stays quiet."""
    ws = _repo(tmp_path, monkeypatch)
    hide = _py(
        "import subprocess; open('.git/info/exclude', 'a').write('conftest.py\\\\n'); "
        "subprocess.run(['git', 'config', 'status.showUntrackedFiles', 'no'])"
    )
    results = _run(
        ws,
        "local",
        "bypassPermissions",
        [("Bash", {"command": hide}), ("Bash", {"command": "git init -q sub && git -C sub status --short && echo ok"})],
    )
    shown = json.dumps(results[0])
    assert "planted" in shown and ".git/info/exclude" in shown and ".git/config" in shown, shown
    assert "conftest.py" not in (ws / ".git" / "info" / "exclude").read_text()
    got = subprocess.run(
        ["git", "-C", str(ws), "config", "--get", "status.showUntrackedFiles"], capture_output=True, text=True
    )
    assert got.stdout == ""
    assert "reverted" not in json.dumps(results[1]) and "ok" in json.dumps(results[1]), results[1]
