"""Red team round 36 (trust): a file the operator's own git config includes, inside a writable root.

``~/.gitconfig`` with ``[include] path = ~/dotfiles/git/extra.inc`` (or ``[includeIf "gitdir:…"]``)
is a common way to keep settings in a dotfiles repository. With that repository as the workspace,
a command wrote ``git/extra.inc`` holding ``core.fsmonitor``; the after-command check guarded the
user configs by name (``~/.gitconfig``, ``$XDG_CONFIG_HOME``/``$GIT_CONFIG_GLOBAL``'s, round 18)
and not the files they include, so the plant was kept, and the operator's next ``git status`` in
any repository ran it on the host (every backend: the workspace is writable in all of them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason
from tests.conftest import require

_HEADERS = {
    "include": "[include]\n\tpath = {target}\n",
    "includeIf": '[includeIf "gitdir:/"]\n\tpath = {target}\n',
    "nested": "[include]\n\tpath = {middle}\n",  # ~/.gitconfig -> ~/.gitconfig.d/a -> the workspace's
}


@pytest.mark.parametrize(
    ("how", "backend"), [("include", "local"), ("includeIf", "local"), ("nested", "local"), ("include", "bwrap")]
)
def test_a_file_the_operators_git_config_includes_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        monkeypatch.delenv(name, raising=False)
    ws = tmp_path / "dotfiles"
    ws.mkdir()
    ws.chmod(0o777)
    planted = ws / "git" / "extra.inc"
    middle = home / ".gitconfig.d" / "a"
    middle.parent.mkdir()
    middle.write_text("[include]\n\tpath = ../../dotfiles/git/extra.inc\n")  # relative to itself
    (home / ".gitconfig").write_text(_HEADERS[how].format(target=planted, middle=middle))
    marker = tmp_path / "ran-on-the-host"
    text = f"[core]\n\tfsmonitor = \"touch {marker}; false\"\n"
    command = (
        "python3 - <<'EOF' && echo planted\nimport os\nos.makedirs('git', exist_ok=True)\n"
        f"open('git/extra.inc', 'w').write({text!r})\nEOF"
    )

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    repo = tmp_path / "other"  # the operator's next git status, in another repository
    subprocess.run(["git", "init", "-q", str(repo)], capture_output=True, timeout=30)
    (repo / "f").parent.mkdir(exist_ok=True)
    (repo / "f").write_text("x\n")
    subprocess.run(["git", "-C", str(repo), "status", "--short"], capture_output=True, timeout=30)
    assert not marker.exists(), f"the operator's git ran the planted fsmonitor ({shown})"
    assert "fsmonitor" not in (planted.read_text() if planted.exists() else ""), shown
    assert protected_reason(planted), "the file tools must ask too"
    assert protected_reason(os.path.join(os.path.realpath(ws), "git", "extra.inc"))
