"""Red team round 12: the host ``git --list-cmds`` behind the git alias check.

A git rule (``Bash(git push:*)``) cannot see through an alias, so a git subcommand that
is no git command makes the rule check fail closed (`git_alias_unknown`). The list of
git commands came from ``git --list-cmds`` run on the host in the server's own working
directory, which reads that directory's repository configuration: with ``.git/config`` a
FIFO it blocked for its 10 s timeout and returned nothing, and the empty answer was
cached for the process's lifetime, turning the alias check off (``git p`` passed a
``git push`` deny rule in every later session). Now it runs outside any repository and
a failure is not cached.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.permissions import embedded


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    embedded._GIT_COMMANDS.clear()
    yield
    embedded._GIT_COMMANDS.clear()


def test_a_hostile_server_cwd_does_not_turn_the_alias_check_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache: None
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".git" / "config").unlink()
    os.mkfifo(tmp_path / ".git" / "config")
    monkeypatch.chdir(tmp_path)
    start = time.monotonic()
    why = embedded.git_alias_unknown(["git", "p", "origin"])
    took = time.monotonic() - start
    assert why and took < 3, (took, why)
    assert embedded.git_alias_unknown(["git", "push", "origin"]) == ""
