"""Red team round 38 (trust): a program the operator's own git or ssh config names by its path.

The operator keeps helper scripts in a dotfiles repository and names them from ``~/.gitconfig``
(``core.pager``, ``core.fsmonitor``, ``credential.helper``, an ``alias`` with ``!``) or
``~/.ssh/config`` (``ProxyCommand``, ``PKCS11Provider`` -- a library ssh loads, ``KnownHostsCommand``,
``Match exec``). Rounds 18-37 guarded those configs and what they include, not the programs they
name: with the dotfiles repository as the workspace, a command rewrote the scripts; the operator's
next ``git log``, ``git push`` or ``ssh`` ran them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._plants import assert_tools_ask, plant_and_check

GIT_PLANTS = ["tools/pager", "tools/fsmon", "tools/cred", "tools/alias.sh", "tools/gpg"]
SSH_PLANTS = ["tools/proxy.sh", "tools/p11.so", "tools/khc", "tools/match.sh"]
KEPT = ["tools/README.md", "src/main.py"]


def test_programs_the_operators_configs_name_are_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "SHELLRT_TRUST_STORE"):
        monkeypatch.delenv(name, raising=False)
    t = ws / "tools"
    (home / ".gitconfig").write_text(
        f"[core]\n\tpager = {t}/pager -R\n\tfsmonitor = {t}/fsmon\n"
        f'[credential]\n\thelper = "{t}/cred --store"\n'
        f"[alias]\n\tx = !sh {t}/alias.sh\n"
        f"[gpg]\n\tprogram = {t}/gpg\n"
    )
    (home / ".ssh" / "config").write_text(
        f"Host *\n  ProxyCommand {t}/proxy.sh %h %p\n  PKCS11Provider {t}/p11.so\n"
        f'  KnownHostsCommand {t}/khc %H\nMatch exec "{t}/match.sh %h"\n  User x\n'
    )
    plants = GIT_PLANTS + SSH_PLANTS
    plant_and_check(ws, tmp_path / "s", plants, KEPT, "#!/bin/sh\n# r38\n")
    assert_tools_ask(ws, plants)
