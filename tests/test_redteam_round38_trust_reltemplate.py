"""Red team round 38 (trust): a relative ``init.templateDir`` in the operator's git config.

Round 37 guarded the operator's git template directory when its config names an absolute one; a
relative value (``init.templateDir = .git-template``) git resolves from wherever it runs: the next
``git clone`` the operator runs in the workspace (or any directory of it) copies that directory's
``.git-template`` into the clone, and its ``hooks/post-checkout`` runs during the clone (probed with
git 2.39). Round 37's "Left": not followed. A command wrote one; the operator's clone ran it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason

PLANTS = [".tmpl/hooks/post-checkout", "sub/dir/.tmpl/hooks/post-checkout", "sub/.tmpl/config"]
KEPT = ["tmpl/hooks/post-checkout", "sub/.tmpl-notes/x", "notes.md"]


def test_a_relative_template_dir_is_guarded_in_every_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\ttemplateDir = .tmpl\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_TEMPLATE_DIR", "SHELLRT_TRUST_STORE"):
        monkeypatch.delenv(name, raising=False)
    marker = tmp_path / "ran-on-the-host"
    body = f"#!/bin/sh\necho ran > {marker}\n"
    lines = ["import os", f"ws = {str(ws)[:4]!r} + {str(ws)[4:]!r}"]
    for rel in PLANTS + KEPT:
        lines += [
            f"p = os.path.join(ws, {rel!r})",
            "os.makedirs(os.path.dirname(p), exist_ok=True)",
            f"open(p, 'w').write({body!r})",
            "os.chmod(p, 0o755)",
        ]
    # A link in the template's place: git follows it to a directory of kept files.
    lines += ["os.makedirs(os.path.join(ws, 'linked'))", "os.symlink('../tmpl', os.path.join(ws, 'linked', '.tmpl'))"]
    command = "python3 - <<'EOF' && echo planted\n" + "\n".join(lines) + "\nEOF"

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in [*PLANTS, "linked/.tmpl"] if os.path.lexists(ws / rel)]
    assert not left, f"kept: {left} ({shown})"
    assert all((ws / rel).exists() for rel in KEPT), shown
    # The operator's next clone in the workspace.
    src = tmp_path / "src"
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    ident = ["-c", "user.email=r38@example.invalid", "-c", "user.name=r38"]
    subprocess.run(["git", "-C", str(src), *ident, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    env = {**os.environ, "HOME": str(home)}
    subprocess.run(["git", "clone", "-q", str(src), "c1"], cwd=ws, env=env, capture_output=True, check=True)
    subprocess.run(["git", "clone", "-q", str(src), "c2"], cwd=ws / "linked", env=env, capture_output=True, check=True)
    assert not marker.exists(), "the operator's clone ran the command's post-checkout"
    missed = [rel for rel in PLANTS if not protected_reason(ws / rel)]
    assert not missed, f"the file tools must ask too: {missed}"
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
