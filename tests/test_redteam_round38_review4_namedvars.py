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

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason

PLANTS = ["tools/pager", "tools/cred", "tools/alias.sh", "tools/proxy.sh", "tools/khc", "tools/match.sh"]
KEPT = ["tools/README.md"]


def test_programs_named_through_variables_are_guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
        "  KnownHostsCommand %d/dotfiles/tools/khc %H\nMatch exec \"${DOTFILES}/tools/match.sh %h\"\n  User x\n"
    )
    lines = ["import os", f"ws = {str(ws)[:4]!r} + {str(ws)[4:]!r}"]
    for rel in PLANTS + KEPT:
        lines += [
            f"p = os.path.join(ws, {rel!r})",
            "os.makedirs(os.path.dirname(p), exist_ok=True)",
            "open(p, 'w').write('#!/bin/sh\\n# r38 review4\\n')",
        ]
    command = "/usr/bin/python3 - <<'EOF' && echo planted\n" + "\n".join(lines) + "\nEOF"

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in PLANTS if os.path.lexists(ws / rel)]
    assert not left, f"kept: {left} ({shown})"
    assert all((ws / rel).exists() for rel in KEPT), shown
    for rel in PLANTS:
        (ws / rel).write_text("#!/bin/sh\n")
    missed = [rel for rel in PLANTS if not protected_reason(ws / rel)]
    assert not missed, f"the file tools must ask too: {missed}"
