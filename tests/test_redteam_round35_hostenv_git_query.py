"""Red team round 35 (hostenv): the host git queries read another configuration than git obeys.

The code-key check (`repo_code_keys`) and the hook listing (`active_hooks`) run host git with the
operator's environment. ``GIT_CONFIG`` makes ``git config`` (and only it) read one file instead of
the repository's scopes, and ``GIT_DIR`` points every query at another repository: the check
listed the operator's file or repository, found nothing, and the repository's own
``core.fsmonitor`` and ``post-index-change`` hook went unreported -- the sandboxed git (whose
environment shellrt builds) obeys them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools._gitrepo import active_hooks, repo_code_keys
from tests.conftest import require


def test_the_checks_see_the_repository_whatever_the_operators_git_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git = shutil.which("git")
    require(git is not None, "needs git on the host")
    assert git is not None
    repo, other = tmp_path / "repo", tmp_path / "other"
    for r in (repo, other):
        subprocess.run([git, "init", "-q", str(r)], check=True)
    subprocess.run([git, "-C", str(repo), "config", "core.fsmonitor", "/opt/evil"], check=True)
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    (tmp_path / "operator.cfg").write_text("[user]\n\tname = op\n")
    missed: dict[str, object] = {}
    for name, value in (("GIT_CONFIG", str(tmp_path / "operator.cfg")), ("GIT_DIR", str(other / ".git"))):
        with monkeypatch.context() as m:
            m.setenv(name, value)
            keys = repo_code_keys(str(repo), hardened=False)
            hooks = active_hooks(str(repo))
        if not any("core.fsmonitor" in k for k in keys):
            missed[f"{name} keys"] = keys
        if name == "GIT_DIR" and not any("post-index-change" in h for h in hooks):
            missed[f"{name} hooks"] = hooks
    assert not missed, f"the host checks looked at another configuration: {missed}"
