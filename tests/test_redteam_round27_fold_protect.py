"""Red team round 27 (fold): the after-command check of commands' writes judged names as spelt.

On a filesystem that folds names (macOS APFS/HFS+, Windows and SMB shares, vfat, an ext4 or tmpfs
directory with ``+F``) a command's ``.GIT/HOOKS/pre-commit`` *is* the git hook, and
``.CLAUDE/settings.json`` the agent settings. `shellrt.supervisor.protect` compared names as
spelt, so such files were left in place. This kernel cannot mount a folding filesystem: the test
checks what the guard decides for those names (and fails closed where names do not fold).
"""

from __future__ import annotations

import os
from pathlib import Path

from shellrt.supervisor.protect import WorkspaceGuard, protected_reason

#: Spellings a folding filesystem resolves to a protected file (ZWJ: HFS+ ignores it; a trailing
#: dot: Windows drops it).
PLANTED = (
    ".Git/hooks/pre-commit",
    ".GIT/HOOKS/post-checkout",
    ".g\u200dit/hooks/pre-push",
    ".git./hooks/pre-rebase",
    ".Git/config",
    ".CLAUDE/settings.json",
    ".Shellrt/settings.local.json",
    ".MCP.json",
    ".VSCode/tasks.json",
    ".BashRC",
)


def test_guard_reverts_folded_spellings_of_protected_files(tmp_path: Path) -> None:
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    (ws / "README").write_text("ordinary\n")
    guard = WorkspaceGuard(ws, session, use_inotify=False)
    try:
        assert guard.scan(revert=False) == []
        for rel in PLANTED:
            path = ws / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("#!/bin/sh\necho planted\n")
            os.chmod(path, 0o755)
        (ws / "Notes.TXT").write_text("an ordinary file stays\n")
        notes = "\n".join(guard.scan(revert=True))
    finally:
        guard.close()
    kept = [rel for rel in PLANTED if (ws / rel).exists()]
    assert kept == [], f"left in place: {kept}\n{notes}"
    assert (ws / "Notes.TXT").exists() and (ws / "README").exists()


def test_protected_reason_judges_folded_names() -> None:
    for rel in PLANTED:
        assert protected_reason(Path("/w") / rel) is not None, rel
    assert protected_reason("/w/src/Main.py") is None
