"""Red team round 39 (trust2): a place the operator's names lead to, inside a home workspace.

Round 38 guarded the directories the operator's environment and configs name (a ``PATH``
directory, ``CARGO_HOME``, a directory a start-up file sources by a pattern, an ssh ``Include``
pattern's directory, an absolute ``init.templateDir``) by the name they stand for. But with the home
itself as the workspace (round 38's own premise) the guard's walk named each directory by its place
in the home first (``dot/bin``: no table row) and never looked the linked name up: a ``~/dot/bin/ls``
shadowing ``/usr/bin/ls``, cargo's config below ``$CARGO_HOME``, a ``~/dot/bash.d/x.sh`` the
``.bashrc`` loop sources were all kept (the file tools asked: they try both names).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check
from tests.conftest import require

PLANTS = [
    "dot/bin/ls",  # a PATH directory of the home, no table row: shadows /usr/bin/ls
    "tools/cargo/bin/rg",  # $CARGO_HOME/bin: `cargo install`'s programs
    "tools/cargo/config.toml",  # $CARGO_HOME's config (build.rustc-wrapper runs a program)
    "dot/bash.d/r39.sh",  # sourced by the .bashrc's loop over ~/dot/bash.d/*.sh
    "dot/ssh.d/r39",  # included by ~/.ssh/config's ``Include ~/dot/ssh.d/*``
    "dot/git-template/hooks/post-checkout",  # the operator's absolute init.templateDir
]
KEPT = ["src/main.py", "dot/README.md", "tools/cargo/registry/cache/x.crate"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_linked_directories_inside_a_home_workspace_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    for rel in ("dot/bin", "dot/bash.d", "dot/ssh.d", "dot/git-template/hooks", ".ssh"):
        (home / rel).mkdir(parents=True)
    (home / ".bashrc").write_text('for f in ~/dot/bash.d/*.sh; do . "$f"; done\n')
    (home / ".ssh" / "config").write_text("Include ~/dot/ssh.d/*\n")
    (home / ".gitconfig").write_text(f"[init]\n\ttemplateDir = {home}/dot/git-template\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{home / 'dot/bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("CARGO_HOME", str(home / "tools/cargo"))
    plant_and_check(home, tmp_path / "s", PLANTS, KEPT, "#!/bin/sh\n# r39\n", backend=backend)
    assert_tools_ask(home, PLANTS)
