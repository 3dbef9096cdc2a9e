"""Red team round 39 (review12): programs a start-up file runs by path after a word trust2's rule
did not list as a command's place.

Trust2 guarded a path in a command's place after a line start, ``;&|{(``, a backquote,
``then/do/else`` and ``eval/exec/command``. A shell also runs a path after ``if``/``elif``/
``while``/``until``/``!``, through an ``alias x='…'``, after ``time``/``nohup``/``env``/``sudo``,
after an assignment (``A=1 X``), after ``exec -a NAME`` and ``command -p``: each of those programs,
in a dotfiles workspace, was kept and the file tools did not ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

RUNS = {
    "if": "if {p}; then :; fi",
    "elif": "if false; then :\nelif {p}; then :; fi",
    "while": "while {p}; do break; done",
    "until": "until {p}; do break; done",
    "bang": "! {p}",
    "alias": "alias r39='{p} --go'",
    "time": "time {p}",
    "nohup": "nohup {p} >/dev/null 2>&1 &",
    "env": "env A=1 {p}",
    "assign": "A=1 B=2 {p}",
    "exec_a": "exec -a r39 {p}",
    "command_p": "command -p {p}",
    "sudo": "sudo -n {p}",
}
PLANTS = [f"dot/run/{name}" for name in RUNS]
KEPT = ["dot/run/README.md", "src/main.py"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_programs_run_after_any_command_word_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/run")
    home = tmp_path / "home"
    home.mkdir()
    lines = [line.format(p=f"$DOTFILES/run/{name}") for name, line in RUNS.items()]
    (home / ".bashrc").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DOTFILES", str(ws / "dot"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    unguarded = [rel for rel in PLANTS if not protected_reason(ws / rel)]
    assert not unguarded, f"not guarded: {unguarded}"
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "#!/bin/sh\n# r39\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
