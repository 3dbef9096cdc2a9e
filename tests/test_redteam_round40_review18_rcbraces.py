"""Red team round 40 (review18): start-up file words trust3's `_word_at` read as a literal path.

``for file in ~/.{path,exports,aliases}; do . "$file"; done`` (the best-known dotfiles ``.bash_profile``
loop) and ``. "$DOTFILES"/sh/{funcs,env}.sh`` load every name of the brace list: the reader took
``{funcs,env}.sh`` as one file name no file has, so a command's ``funcs.sh`` ran in the operator's next
shell, unguarded and unasked. ``builtin source F``, ``command . F`` and ``X=1 . F`` source F too: the
source regex knew none of those leads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

BASHRC = """\
for file in "$DOTFILES"/sh/{exports,aliases}.sh; do . "$file"; done
. "$DOTFILES"/sh/{funcs,env}.sh
"$DOTFILES"/bin/{prompt,motd}
for f in "$DOTFILES"/d{1..2}/init.sh; do . "$f"; done
builtin source "$DOTFILES"/sh/builtin.sh
command . "$DOTFILES"/sh/command.sh
X=1 . "$DOTFILES"/sh/prefixed.sh
. "$DOTFILES"/sh/con\\
tinued.sh
"""
PLANTS = [
    "dot/sh/exports.sh",
    "dot/sh/aliases.sh",
    "dot/sh/funcs.sh",
    "dot/sh/env.sh",
    "dot/bin/prompt",
    "dot/bin/motd",
    "dot/d1/init.sh",
    "dot/d2/init.sh",
    "dot/sh/builtin.sh",
    "dot/sh/command.sh",
    "dot/sh/prefixed.sh",
    "dot/sh/continued.sh",  # a backslash-newline inside the word
]
KEPT = ["dot/README.md", "dot/sh/notes.txt", "dot/bin/other", "dot/d1/other.sh", "src/main.sh"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_brace_lists_and_source_leads_are_guarded(
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


def test_home_dotfile_brace_loop_is_guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The home as the workspace: ``~/.{path,exports}`` names ``~/.path`` and ``~/.exports``."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text(
        'for file in ~/.{path,exports,extra}; do\n  [ -r "$file" ] && [ -f "$file" ] && source "$file";\ndone\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    missed = [rel for rel in (".path", ".exports", ".extra") if not protected_reason(home / rel)]
    assert not missed, f"sourced by ~/.bash_profile's brace loop, not guarded: {missed}"
    assert not protected_reason(home / ".pathx")


def test_a_brace_list_past_its_bound_guards_every_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``. ~/d/{a,b}{a,b}…`` (2^7 names, past the 64 words one word expands to): the list reads as a
    pattern, every name it could give is guarded (fail closed), nothing else of the directory."""
    home = tmp_path / "home"
    (home / "d").mkdir(parents=True)
    (home / ".bashrc").write_text(". ~/d/" + "{a,b}" * 7 + ".sh\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert protected_reason(home / "d" / "abababa.sh")
    assert not protected_reason(home / "d" / "notes.txt")
