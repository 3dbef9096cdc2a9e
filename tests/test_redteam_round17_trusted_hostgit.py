"""Red team round 17 (trusted): shellrt's own git queries on the host run nothing the repository names.

shellrt runs git on the host before judging a git command (`tools/_gitrepo.py`: the configuration,
the changed paths, the hooks directory). A hostile repository names programs for exactly those
moments: ``core.fsmonitor`` (any index refresh), ``filter.*`` with ``.gitattributes`` (a stat-dirty
file cleaned to compare), ``diff.*.textconv``/``diff.external``, and a ``post-index-change`` hook
(an index written). With a modified, stat-dirty tracked file and all of them set, none ran: the
queries are plumbing under the hardened environment. Held; this pins it.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from shellrt.tools._gitrepo import active_hooks, changed_paths, repo_code_keys


def test_host_git_queries_run_no_repository_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "ran"
    run = f"sh -c 'echo $0 >> {marker}; cat'"

    def git(*argv: str) -> None:
        subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *argv], cwd=ws, check=True)

    git("init", "-q", ".")
    (ws / "a.txt").write_text("one\n")
    (ws / ".gitattributes").write_text("* diff=x filter=x\n")
    git("add", ".")
    git("commit", "-q", "-m", "i")
    for key, value in {
        "core.fsmonitor": f"{run} fsmonitor",
        "filter.x.clean": f"{run} clean",
        "filter.x.smudge": f"{run} smudge",
        "filter.x.process": f"{run} process",
        "diff.x.textconv": f"{run} textconv",
        "diff.external": f"{run} external",
    }.items():
        git("config", key, value)
    hook = ws / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\necho hook >> {marker}\n")
    hook.chmod(0o755)
    time.sleep(0.02)
    (ws / "a.txt").write_text("two\n")  # stat-dirty and changed: a refresh would clean it
    keys = repo_code_keys(str(ws))
    changed = changed_paths(str(ws))
    hooks = active_hooks(str(ws))
    assert not marker.exists(), marker.read_text()
    assert any("filter.x" in k for k in keys), keys  # reported (the fsmonitor is overridden: moot)
    assert str(ws / "a.txt") in changed or changed == [""], changed
    assert any("post-index-change" in h for h in hooks), hooks
    # The set-up is armed: a plain `git status` (what those queries avoid) runs them.
    subprocess.run(["git", "status", "--short"], cwd=ws, capture_output=True, check=False)
    assert marker.exists()
