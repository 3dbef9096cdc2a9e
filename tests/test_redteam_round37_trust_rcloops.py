"""Red team round 37 (trust): what a start-up file sources through a variable or a loop, or from
tmux, vim or fish, in a dotfiles repository that is the workspace.

Round 36 guarded what ``~/.bashrc`` sources by a literal path and left the rest: ``DOTFILES=~/dotfiles``
then ``source "$DOTFILES/aliases.sh"``; ``for f in ~/dotfiles/bash.d/*.sh; do . "$f"; done`` (a
file a command *adds* there runs too); tmux's ``source-file``, vim's ``source``, fish's
``source``. A command wrote such a file; the operator's next shell, tmux or vim ran it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason
from tests.conftest import require

#: how -> (the home file, its text, the workspace file the command writes, a line that runs).
_CASES = {
    "variable": (
        ".bashrc",
        'DOTFILES="$HOME/../dotfiles"\nexport SH_DIR=$DOTFILES/sh\n[ -f "$SH_DIR/aliases.sh" ] && . "$SH_DIR/aliases.sh"\n',
        "sh/aliases.sh",
        "touch {marker}\n",
    ),
    "loop": (
        ".bashrc",
        'for f in ~/../dotfiles/bash.d/*.sh; do\n  [ -r "$f" ] && source "$f"\ndone\n',
        "bash.d/50-new.sh",  # a file added to the directory, none there before
        "touch {marker}\n",
    ),
    "nested": (
        ".bashrc",
        'for f in ~/../dotfiles/*/init.sh; do . "$f"; done\n',  # a pattern in a directory's name
        "plugins/init.sh",
        "touch {marker}\n",
    ),
    "tmux": (".tmux.conf", "source-file -q ~/../dotfiles/tmux/extra.conf\n", "tmux/extra.conf", 'run-shell "touch {marker}"\n'),
    "vim": (".vimrc", "source ~/../dotfiles/vim/extra.vim\n", "vim/extra.vim", "call system('touch {marker}')\n"),
    "fish": (
        ".config/fish/config.fish",
        "source ~/../dotfiles/fish/extra.fish\n",
        "fish/extra.fish",
        "touch {marker}\n",
    ),
}


@pytest.mark.parametrize(
    ("how", "backend"),
    [
        ("variable", "local"),
        ("loop", "local"),
        ("nested", "local"),
        ("tmux", "local"),
        ("vim", "local"),
        ("fish", "local"),
        ("loop", "bwrap"),
    ],
)
def test_what_a_start_up_file_sources_indirectly_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    ws = tmp_path / "dotfiles"
    ws.mkdir()
    ws.chmod(0o777)
    rc, text, rel, line = _CASES[how]
    (home / rc).parent.mkdir(parents=True, exist_ok=True)
    (home / rc).write_text(text)
    (ws / rel).parent.mkdir(parents=True)
    (ws / rel).parent.chmod(0o777)
    marker = tmp_path / "ran-on-the-host"
    body = line.format(marker=marker)
    # Written by a program (no path in the command's words): the after-command guard decides.
    command = (
        f"python3 - <<'EOF' && echo planted\nopen({rel[:2]!r} + {rel[2:]!r}, 'a').write({body!r})\n"
        "open('plugins-notes.txt', 'w').write('kept')\nEOF"  # what the patterns do not match stays
    )

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    if rc == ".bashrc":  # the operator's next interactive shell
        env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
        subprocess.run(["bash", "-ic", "true"], capture_output=True, timeout=30, env=env)
        assert not marker.exists(), f"the operator's next shell ran the planted line ({shown})"
    assert "touch" not in ((ws / rel).read_text() if (ws / rel).exists() else ""), f"kept ({shown})"
    assert protected_reason(ws / rel), "the file tools must ask too"
    assert (ws / "plugins-notes.txt").exists(), f"an ordinary file was reverted ({shown})"
    assert not protected_reason(ws / "plugins-notes.txt")
