"""Red team round 56 (hostrepo): a ``.git`` below a repository's ``core.hooksPath`` hid it.

`hooks_dir_reason` (the Write/Edit tools' and the engine's check of a path) walked up from the
written file to the first directory holding a ``.git`` and read only that repository's config. But
git run in the work tree above (the operator's next ``git commit``) never looks at a ``.git`` below
its top: the enclosing repository's ``core.hooksPath = .husky/_`` still names ``.husky/_``. One
harmless-looking ``mkdir .husky/_/.git`` (or ``git init .husky``) and the Write tool put
``.husky/_/pre-commit`` in place unasked under ``acceptEdits``; it ran unsandboxed at the next commit.
Now every enclosing repository's config counts, up to the walk's bound.
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
from shellrt.supervisor import protect
from shellrt.supervisor.protect import hooks_dir_reason
from tests.conftest import require

_BENIGN = "#!/bin/sh\nexit 0\n"


def _repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp_path.chmod(0o755)  # a non-root caller's sandbox crosses it
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / "home").mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", ".husky/_"], check=True)
    (ws / ".husky" / "_").mkdir(parents=True)  # husky 9's layout
    return ws


# Each is a `.git` a sandboxed command can make inside the hooks directory (or below it).
_NESTED = {
    "empty directory": lambda d: (d / ".git").mkdir(),
    "invalid directory": lambda d: [(d / ".git" / n).mkdir(parents=True) for n in ("objects", "refs")]
    and (d / ".git" / "HEAD").write_text("garbage\n"),
    "gitfile": lambda d: (d / ".git").write_text("gitdir: /nonexistent\n"),
    "real repository": lambda d: subprocess.run(["git", "init", "-q", str(d)], check=True),
}


@pytest.mark.parametrize("kind", sorted(_NESTED))
@pytest.mark.parametrize("where", [".husky/_", ".husky"])
def test_a_nested_git_does_not_hide_the_enclosing_hooks_path(
    kind: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _repo(tmp_path, monkeypatch)
    hook = ws / ".husky" / "_" / "pre-commit"
    assert hooks_dir_reason(hook), "the plain case must be caught"
    _NESTED[kind](ws / where)
    protect._hooks_values.clear()
    # git in the work tree runs .husky/pre-commit whatever lies below its top:
    top = subprocess.run(["git", "-C", str(ws), "rev-parse", "--git-path", "hooks"], capture_output=True, text=True)
    assert top.stdout.strip() == ".husky/_"
    assert hooks_dir_reason(hook), f"{kind} at {where} hid core.hooksPath"


def test_accept_edits_write_after_mkdir_git_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end on bubblewrap: the repository's build (allowed) makes the ``.git``, the Write tool
    rewrites the operator's executable hook, the operator's next commit runs it on the host."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = _repo(tmp_path, monkeypatch)
    hook = ws / ".husky" / "_" / "pre-commit"
    hook.write_text(_BENIGN)
    hook.chmod(0o755)
    marker = tmp_path / "ran-on-the-host"
    (ws / "build.sh").write_text("mkdir .husky/_/.git\n")  # the repository's build, which the operator allowed
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Bash", {"command": "sh build.sh"}),
        ("Read", {"file_path": str(hook)}),
        ("Write", {"file_path": str(hook), "content": f"#!/bin/sh\ntouch {marker}\n"}),
        ("Bash", {"command": "true"}),
    ]

    async def main() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        async with Runtime(ws, "bwrap", mode="acceptEdits", allow=["Bash(sh build.sh)"]) as rt:
            for i, (name, given) in enumerate(calls):
                block = {"type": "tool_use", "id": f"r56h{i}", "name": name, "input": given}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
        return out

    results = anyio.run(main)
    assert not results[0]["is_error"] and (ws / ".husky" / "_" / ".git").is_dir(), results[0]
    assert results[2]["is_error"] and "core.hooksPath" in json.dumps(results[2]), results[2]
    # The operator's next commit, on the host:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "GIT_AUTHOR_NAME": "o", "GIT_AUTHOR_EMAIL": "o@x",
           "GIT_COMMITTER_NAME": "o", "GIT_COMMITTER_EMAIL": "o@x"}
    subprocess.run(["git", "-C", str(ws), "commit", "-q", "--allow-empty", "-m", "m"], env=env, timeout=30, check=False)
    assert not marker.exists(), "the planted hook ran on the host"
