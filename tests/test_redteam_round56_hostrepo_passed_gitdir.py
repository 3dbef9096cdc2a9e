"""Red team round 56 (hostrepo): a ``.git`` directory git passes over fooled the host's checks.

git walks up from where it runs and takes the first ``.git`` that is a repository; a ``.git``
directory without a valid HEAD, ``objects`` and ``refs`` (``mkdir sub/.git``, from any build script
the operator allowed) is passed over. Three host checks stopped at it instead:

- ``git show HEAD:secrets/key`` run in ``sub`` was judged as reading ``sub/secrets/key``, and a deny
  rule on ``secrets/`` let the committed secret print (a ``.git`` file ``gitdir: ../.git`` did the
  same: the tree's paths are the main work tree's);
- the file check before host git (`unsafe_git_files`) found nothing wrong, and every host git query
  then blocked for its whole timeout on the real repository's FIFO ``.git/config``;
- Glob and Grep read the empty one's index: a tracked file an ignore file hides was not reported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.tools._gitfiles import unsafe_git_files
from shellrt.tools._tracked import tracked_under
from tests.conftest import require

_ENV = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "o", "GIT_AUTHOR_EMAIL": "o@x", "GIT_COMMITTER_NAME": "o",
        "GIT_COMMITTER_EMAIL": "o@x"}


def _passed_over(directory: Path, kind: str) -> None:
    """A ``.git`` in ``directory`` that git passes over (or, ``gitfile``, one naming the parent's)."""
    dot = directory / ".git"
    if kind == "gitfile":
        dot.write_text("gitdir: ../.git\n")
        return
    dot.mkdir()
    if kind == "invalid HEAD":
        (dot / "objects").mkdir()
        (dot / "refs").mkdir()
        (dot / "HEAD").write_text("not a ref\n")


def _repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp_path.chmod(0o755)  # a non-root caller's sandbox crosses it
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    env = {**_ENV, "HOME": str(tmp_path / "home")}
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=env)
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("R56-TOPSECRET\n")
    (ws / ".gitignore").write_text("backdoor.py\n")
    for sub in ("sub1", "sub2", "sub3"):
        (ws / sub).mkdir()
        (ws / sub / "backdoor.py").write_text("import os\n")
    subprocess.run(["git", "-C", str(ws), "add", "-A", "-f"], check=True, env=env)
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", "m"], check=True, env=env)
    return ws


_KINDS = {"sub1": "empty", "sub2": "invalid HEAD", "sub3": "gitfile"}


def test_git_show_of_a_denied_path_from_below_a_passed_over_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = _repository(tmp_path, monkeypatch)
    for sub, kind in _KINDS.items():
        _passed_over(ws / sub, kind)
    commands = [c for sub in _KINDS for c in (f"cd {ws / sub}", "git show HEAD:secrets/key")]

    async def main() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        async with Runtime(ws, "bwrap", mode="default", deny=["Read(./secrets/**)"]) as rt:
            for i, command in enumerate(commands):
                block = {"type": "tool_use", "id": f"r56p{i}", "name": "Bash", "input": {"command": command}}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
        return out

    results = anyio.run(main)
    leaked = [_KINDS[c.split("/")[-1]] for c, r in zip(commands[::2], results[1::2], strict=True)
              if "R56-TOPSECRET" in str(r["content"]) or not r["is_error"]]
    assert not leaked, f"the deny rule on secrets/ let git show print it past: {leaked}"


@pytest.mark.parametrize("kind", ["empty", "invalid HEAD"])
def test_the_file_check_goes_past_a_passed_over_git(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _repository(tmp_path, monkeypatch)
    config = ws / ".git" / "config"
    config.unlink()
    os.mkfifo(config)  # every host git query in the repository would block on it
    _passed_over(ws / "sub1", kind)
    assert unsafe_git_files(str(ws))
    assert "config" in unsafe_git_files(str(ws / "sub1")), "host git would block on the FIFO"


@pytest.mark.parametrize("kind", ["empty", "invalid HEAD"])
def test_hidden_tracked_files_are_found_past_a_passed_over_git(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _repository(tmp_path, monkeypatch)
    assert tracked_under(ws / "sub1", ws) == ["backdoor.py"]
    _passed_over(ws / "sub1", kind)
    assert tracked_under(ws / "sub1", ws) == ["backdoor.py"], "git still tracks it: Glob and Grep must say so"
