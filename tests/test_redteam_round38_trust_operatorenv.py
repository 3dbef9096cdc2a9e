"""Red team round 38 (trust): places the operator's own environment makes programs load from.

The workspace is a dotfiles or tools repository the operator's environment points into (not the
home): ``PATH`` holds its ``bin/`` (every program there shadows the host's by name: the next ``git``
in any shell), ``PYTHONSTARTUP`` its ``pythonrc.py`` (every interactive ``python``), ``BASH_ENV`` its
``bashenv`` (every non-interactive ``bash``), ``CARGO_HOME``/``GNUPGHOME``/``DOCKER_CONFIG``/
``RIPGREP_CONFIG_PATH``/``KUBECONFIG`` its directories and files (cargo's config and installed
programs, gpg's ``pinentry-program``, docker's ``credsStore``, ripgrep's ``--pre`` program, a
kubeconfig's exec plug-in). Round 37 honoured ``XDG_CONFIG_HOME`` and ``PYTHONUSERBASE`` only: a
command wrote each of these and none was reverted, nor did the file tools ask.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask, plant_and_check

#: variable -> (its value below the workspace, the plant below the workspace)
NAMED = {
    "PYTHONSTARTUP": ("dot/pythonrc.py", "dot/pythonrc.py"),
    "BASH_ENV": ("dot/bashenv", "dot/bashenv"),
    "ENV": ("dot/shenv", "dot/shenv"),
    "CARGO_HOME": ("tools/cargo", "tools/cargo/bin/git"),
    "GNUPGHOME": ("dot/gnupg", "dot/gnupg/gpg-agent.conf"),
    "DOCKER_CONFIG": ("dot/docker", "dot/docker/config.json"),
    "RIPGREP_CONFIG_PATH": ("dot/ripgreprc", "dot/ripgreprc"),
    "INPUTRC": ("dot/inputrc", "dot/inputrc"),
}
#: Plants in a directory on the operator's PATH (and a colon list's second entry).
ON_PATH = ["tools/bin/git", "tools/sbin/ls", "tools/bin/r38-new-entry-point"]
KUBE = ["dot/kube/a.yaml", "dot/kube/b.yaml"]
#: Kept: files no program loads. (A new name in a PATH directory is guarded since round 39 trust2:
#: the operator's next typo runs it; only an activated venv's ``bin/`` keeps ``pip install``'s.)
KEPT = ["src/main.py", "dot/README.md", "tools/cargo/registry/cache/x.crate"]


def test_what_the_operators_environment_names_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    for name, (value, _) in NAMED.items():
        monkeypatch.setenv(name, str(ws / value))
    monkeypatch.setenv("KUBECONFIG", ":".join(str(ws / k) for k in KUBE))
    monkeypatch.setenv("PATH", f"{ws / 'tools/bin'}:{os.environ['PATH']}:{ws / 'tools/sbin'}")
    plants = [p for _, p in NAMED.values()] + ON_PATH + KUBE
    plant_and_check(ws, tmp_path / "s", plants, KEPT, "#!/bin/sh\n# r38\n")
    assert_tools_ask(ws, plants)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]


def test_a_place_inside_another_is_judged_by_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace itself on PATH (a scripts repository) and ``CARGO_HOME`` inside it: a file below
    ``CARGO_HOME/bin`` is cargo's program, whatever the outer place's name says (the first place
    found named it before, and a PATH directory guards only its own files)."""
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    (ws / "cargo" / "bin").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{ws}:{os.environ['PATH']}")
    monkeypatch.setenv("CARGO_HOME", str(ws / "cargo"))
    assert protected_reason(ws / "cargo" / "bin" / "git")
    assert protected_reason(ws / "ls")
    assert protected_reason(ws / "r38-new-entry-point")  # round 39 trust2: a new name on PATH too
    assert not protected_reason(ws / "cargo" / "registry" / "x.crate")
