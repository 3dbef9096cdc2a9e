"""Red team round 37 (trust): the file a project's Yarn config runs, outside ``.yarn/releases``.

``yarnPath`` in ``.yarnrc.yml`` (``yarn-path`` in Yarn 1's ``.yarnrc``) names the JavaScript file
every ``yarn`` command in the project runs instead of yarn, and ``plugins`` the files each command
loads. Round 17 guarded the configs themselves and round 18 every file under ``.yarn/releases``
and ``.yarn/plugins``; a project whose config names a release elsewhere (``tools/yarn-4.1.cjs``,
common in monorepos that vendor it) had that file unguarded: a command rewrote it and the
operator's next ``yarn`` (a ``yarn install``, a shell prompt's ``yarn --version``) ran it on the
host. The files are guarded now as an ``.envrc``'s loads are (round 19): read from the accepted
config, reverted after a command, the file tools ask.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.tools._paths import is_sensitive
from tests.conftest import require

_CONFIGS = {
    "berry": (".yarnrc.yml", "yarnPath: tools/yarn-4.1.cjs\nnodeLinker: node-modules\n", "tools/yarn-4.1.cjs"),
    "plugin": (
        ".yarnrc.yml",
        'plugins:\n  - path: tools/plugin-x.cjs\n    spec: "https://example.invalid/x.js"\n',
        "tools/plugin-x.cjs",
    ),
    "classic": (".yarnrc", 'yarn-path "./tools/yarn-1.22.cjs"\n', "tools/yarn-1.22.cjs"),
}


@pytest.mark.parametrize(
    ("how", "backend"), [("berry", "local"), ("plugin", "local"), ("classic", "local"), ("berry", "bwrap")]
)
def test_the_release_a_yarn_config_names_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "proj"
    (ws / "tools").mkdir(parents=True)
    ws.chmod(0o777)
    (ws / "tools").chmod(0o777)
    config, text, rel = _CONFIGS[how]
    (ws / config).write_text(text)  # the operator's, there before the session
    (ws / rel).write_text("// the vendored release\n")
    (ws / rel).chmod(0o666)
    # Written by a program (no path in the command's words): the after-command guard decides.
    evil = "require('child_process').execSync('touch /tmp/pwned')\n"
    command = f"python3 - <<'EOF' && echo planted\nopen({rel[:3]!r} + {rel[3:]!r}, 'w').write({evil!r})\nEOF"

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    assert (ws / rel).read_text() == "// the vendored release\n", f"kept: the next yarn runs it ({shown})"
    assert is_sensitive(ws / rel), "the file tools must ask too"
