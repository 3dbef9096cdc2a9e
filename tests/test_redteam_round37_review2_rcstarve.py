"""Red team round 37 (review2): a sourced file naming many files pushed its siblings' out of the guard.

The readers of what start-up files source (`_protect_home._rc_sourced`, round 36-37) stop at 256
names a read, breadth first ("the file naming more is guarded itself"). With a dotfiles repository
as the workspace and ``~/.bashrc`` sourcing ``a.sh`` then ``b.sh``, and ``b.sh`` sourcing ``c.sh``,
one command rewrote ``a.sh`` to source 300 other names (read before ``b.sh``'s) and appended to
``c.sh``: ``a.sh`` was reverted, but ``c.sh`` was no longer among the guarded names when the guard
looked, and the operator's next shell ran the plant.
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


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_a_file_naming_many_does_not_unguard_its_siblings_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "dotfiles"
    ws.mkdir()
    ws.chmod(0o777)
    (home / ".bashrc").write_text(". ~/../dotfiles/a.sh\n. ~/../dotfiles/b.sh\n")
    (ws / "a.sh").write_text("alias ll='ls -l'\n")
    (ws / "b.sh").write_text(". ~/../dotfiles/c.sh\n")
    (ws / "c.sh").write_text("export EDITOR=vi\n")
    for name in ("a.sh", "b.sh", "c.sh"):
        (ws / name).chmod(0o666)
    marker = tmp_path / "ran-on-the-host"
    many = "".join(f"[ -f ~/../dotfiles/n{i}.sh ] && . ~/../dotfiles/n{i}.sh\n" for i in range(300))
    command = (
        "python3 - <<'EOF' && echo planted\n"
        f"open('a.sh', 'w').write({many!r})\n"
        f"open('c.sh', 'a').write({f'touch {marker}' + chr(10)!r})\n"
        "EOF"
    )

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    subprocess.run(["bash", "-ic", "true"], capture_output=True, timeout=30, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert not marker.exists(), f"the operator's next shell ran the planted line ({shown})"
    assert protected_reason(ws / "c.sh"), "the file tools must ask too"
