"""Red team round 38 (review4): a program the operator's git or ssh config names through a variable.

Round 38 trust guarded the programs ``~/.gitconfig`` and ``~/.ssh/config`` name by an absolute or
``~/`` path. git runs ``core.pager``, ``credential.helper`` and a ``!`` alias through the shell, which
expands ``$HOME`` and ``${DOTFILES}``; ssh runs ``ProxyCommand`` through the shell and expands ``%d``
(the home) in ``KnownHostsCommand``, ``Match exec``, ``PKCS11Provider``. Spelt that way (as dotfiles
often are, to be portable between machines), the scripts were not guarded: with the dotfiles
repository as the workspace a command rewrote them and the operator's next ``git log`` or ``ssh``
ran them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._plants import assert_tools_ask, plant_and_check

PLANTS = ["tools/pager", "tools/cred", "tools/alias.sh", "tools/proxy.sh", "tools/khc", "tools/match.sh"]
KEPT = ["tools/README.md"]


def test_programs_named_through_variables_are_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    ws = home / "dotfiles"  # the operator's dotfiles repository, in the home (not the home itself)
    ws.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DOTFILES", str(ws))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "SHELLRT_TRUST_STORE"):
        monkeypatch.delenv(name, raising=False)
    (home / ".gitconfig").write_text(
        "[core]\n\tpager = $HOME/dotfiles/tools/pager -R\n"
        '[credential]\n\thelper = "!${DOTFILES}/tools/cred --store"\n'
        '[alias]\n\tx = !sh "$DOTFILES/tools/alias.sh"\n'
    )
    (home / ".ssh" / "config").write_text(
        "Host *\n  ProxyCommand $HOME/dotfiles/tools/proxy.sh %h %p\n"
        '  KnownHostsCommand %d/dotfiles/tools/khc %H\nMatch exec "${DOTFILES}/tools/match.sh %h"\n  User x\n'
    )
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "#!/bin/sh\n# r38 review4\n", python="/usr/bin/python3")
    for rel in PLANTS:
        (ws / rel).write_text("#!/bin/sh\n")
    assert_tools_ask(ws, PLANTS)
