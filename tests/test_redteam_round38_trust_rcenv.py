"""Red team round 38 (trust): a start-up file sources a path built from the operator's environment.

Round 37 expanded a start-up file's own variables (``DOTFILES=~/dotfiles; . "$DOTFILES/x"``); a
variable the file does not set was unknown, the path not followed (round 37's "Left"). The common
dotfiles idiom exports it elsewhere (``.zshenv``, ``.profile``, a login manager) and uses it in the
rc file: ``. "$DOTFILES/aliases.sh"``, ``source "${XDG_CONFIG_HOME}/shell/env.sh"``, ``for f in
"$DOTFILES"/bash.d/*.sh; do . "$f"; done``. shellrt runs with the operator's environment, which
holds those values: a command wrote the sourced files in the dotfiles workspace, kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._plants import assert_tools_ask, plant_and_check

PLANTS = ["dot/aliases.sh", "xdg/shell/env.sh", "dot/bash.d/new.sh", "dot/tmux/extra.conf"]
KEPT = ["dot/README.md", "src/main.py"]


def test_paths_built_from_the_operators_environment_are_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    ws = tmp_path / "ws"
    (ws / "dot" / "bash.d").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("R38_DOTFILES", str(ws / "dot"))
    monkeypatch.setenv("R38_XDG", str(ws / "xdg"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    (home / ".bashrc").write_text(
        '. "$R38_DOTFILES/aliases.sh"\n'
        'source "${R38_XDG}/shell/env.sh"\n'
        'for f in "$R38_DOTFILES"/bash.d/*.sh; do . "$f"; done\n'
    )
    (home / ".tmux.conf").write_text("source-file $R38_DOTFILES/tmux/extra.conf\n")
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "echo r38\n")
    assert_tools_ask(ws, PLANTS)
