"""Red team round 40 (trust3): paths a shell start-up file builds in pieces, through a variable, a
loop or ``run-parts`` (round 39 review12's Left).

Rounds 36-39 read a sourced or run path as one quoted or unquoted word: ``. "${DOTFILES}"/sh/a.sh``
gave ``"${DOTFILES}"`` alone (a directory), ``D="$DOTFILES"/sh`` made ``D`` the wrong directory,
``P=~/dot/bin/x; $P`` and ``for f in ~/dot/init.d/*; do "$f"; done`` ran a path no word spells, and
``run-parts DIR`` runs every program of DIR. With the dotfiles repository as the workspace, each
plant ran in the operator's next shell; the guard kept them and the file tools did not ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

BASHRC = """\
. "${DOTFILES}"/sh/aliases.sh
source "$DOTFILES"/sh/'funcs.sh'
D="$DOTFILES"/sh
. "$D/env.sh"
"${DOTFILES}"/bin/prompt init bash
P=$DOTFILES/bin/motd
$P
for f in "$DOTFILES"/init.d/*; do "$f"; done
run-parts --regex '.*' "$DOTFILES"/startup.d
"""
PLANTS = [
    "dot/sh/aliases.sh",
    "dot/sh/funcs.sh",
    "dot/sh/env.sh",
    "dot/bin/prompt",
    "dot/bin/motd",
    "dot/init.d/r40",
    "dot/startup.d/r40",
]
KEPT = ["dot/README.md", "dot/sh/notes.txt", "dot/bin/other", "src/main.sh"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_start_up_paths_built_in_pieces_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/sh")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DOTFILES", str(ws / "dot"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "#!/bin/sh\n# r40\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
