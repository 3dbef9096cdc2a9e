"""Red team round 39 (trust2): programs the operator's shell start-up files run by their path.

Rounds 36-38 followed what a start-up file *sources* (``. ~/dotfiles/aliases.sh``), not what it
*runs*: ``eval "$(~/dotfiles/bin/prompt init bash)"`` (the prompt and environment managers' usual
line), ``source <($DOTFILES/bin/completions bash)``, ``[ -x X ] && X``, a ``motd`` on its own line.
With the dotfiles repository as the workspace, a command rewrote each program and the operator's
next shell ran it; the guard kept them and the file tools did not ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

PLANTS = ["dot/bin/prompt", "dot/bin/completions", "dot/bin/motd", "dot/tools/greet"]
KEPT = ["dot/bin/README.md", "dot/tools/other", "src/main.py"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_programs_a_start_up_file_runs_by_path_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/bin")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(
        'eval "$($DOTFILES/bin/prompt init bash)"\n'
        "source <(${DOTFILES}/bin/completions bash)\n"
        f"[ -x {ws}/dot/bin/motd ] && {ws}/dot/bin/motd\n"
    )
    (home / ".profile").write_text(f"X=$({ws}/dot/tools/greet --quiet)\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DOTFILES", str(ws / "dot"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "#!/bin/sh\n# r39\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
