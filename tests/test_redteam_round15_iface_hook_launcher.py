"""Red team round 15: the program shellrt starts hooks with is never one a sandboxed command wrote.

As root, every hook runs under ``unshare --pid --fork --kill-child`` (round 5), and ``unshare``
was found with ``shutil.which`` on shellrt's own ``PATH``. A ``PATH`` holding a directory of
the workspace is common (an activated ``.venv/bin`` inside the project, direnv's ``PATH_add
bin``, ``node_modules/.bin``); the hook's *own* programs found there are watched (round 10), the
launcher was not. Measured on the old code, bwrap backend, as root: a sandboxed command wrote
``bin/unshare`` in the workspace; at the next call the operator's PreToolUse hook (an absolute
program, ``/bin/true``: no lookup of its own the watch would record) ran it — on
the host, as root, outside the sandbox (it wrote a file the sandbox cannot reach).

Now the launcher is looked up in the system directories only (`hookproc.SYSTEM_PATH`), never
through ``PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.permissions import hookproc
from tests.conftest import require


@pytest.mark.skipif(os.geteuid() != 0, reason="the unshare launcher is used by root callers only")
@pytest.mark.parametrize("entry", ["absolute", "relative"])
def test_a_command_cannot_plant_the_hook_launcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / "bin").mkdir(parents=True)  # there before the session, as an activated .venv/bin is
    (ws / "bin" / "tool").write_text("#!/bin/sh\n")
    (home / ".shellrt").mkdir(parents=True)
    hook = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/bin/true"}]}]}
    (home / ".shellrt" / "settings.json").write_text(json.dumps({"hooks": hook}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    monkeypatch.chdir(ws)  # a relative entry resolves against shellrt's own working directory
    monkeypatch.setenv("PATH", f"{ws / 'bin' if entry == 'absolute' else 'bin'}:{os.environ['PATH']}")
    monkeypatch.setattr(hookproc, "_pid_namespace_works", None)
    marker = tmp_path / "PWNED"  # outside the workspace: the sandbox cannot write it
    plant = (
        f"mkdir -p bin && printf '#!/bin/sh\\n: > {marker}\\nexec /usr/bin/unshare \"$@\"\\n' > bin/unshare"
        " && chmod +x bin/unshare"
    )

    async def session() -> list[str]:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            out = []
            for i, command in enumerate([plant, "echo second"]):
                block = {"type": "tool_use", "id": f"b{i}", "name": "Bash", "input": {"command": command}}
                result = await rt.run({"role": "assistant", "content": [block]})
                out.append(json.dumps(result["content"][0]))
            return out

    # Round 38 (trust) guards a workspace directory on the operator's PATH: the command's plant is
    # refused or reverted now. Left there before the session (as by an older shellrt), so what this
    # test is about -- shellrt's own lookups skip it -- is still exercised.
    subprocess.run(["/bin/sh", "-c", plant], cwd=ws, check=True)  # writes ws/bin/unshare only
    results = anyio.run(session)
    assert (ws / "bin" / "unshare").exists(), results  # the command did write it, in the workspace
    assert not marker.exists(), f"the planted launcher ran on the host: {results}"
    assert "second" in results[1], results


def test_the_git_alias_check_never_runs_a_planted_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git_alias_unknown`` lists git's commands with a host git (under a ``Bash(git …)`` rule):
    found through ``PATH``, a ``git`` a command wrote in a workspace ``PATH`` directory ran on
    the host (old code: the marker was written). Now `host_path` leaves the session's roots out."""
    from shellrt.permissions import embedded
    from shellrt.permissions.host_path import register_writable, unregister_writable

    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    marker = tmp_path / "PWNED"
    fake = ws / "bin" / "git"
    fake.write_text(f"#!/bin/sh\n: > {marker}\necho push\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{ws / 'bin'}:bin:{os.environ['PATH']}")
    monkeypatch.chdir(ws)
    monkeypatch.setattr(embedded, "_GIT_COMMANDS", [])
    token = register_writable([ws])
    try:
        why = embedded.git_alias_unknown(["git", "pushy"])
    finally:
        unregister_writable(token)
    assert not marker.exists(), "a planted git ran on the host"
    assert "alias" in why, why  # the real git answered: pushy is no git command


def test_the_next_session_never_starts_a_planted_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap itself was found through ``PATH`` at session start: a command of one session wrote
    ``bin/bwrap`` in a workspace ``PATH`` directory and the next session ran it on the host, as
    the caller (root here), before any sandbox existed (old code: the marker was written)."""
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    # Crossable by the sandbox uid (as a checkout under /home or /srv is): a closed directory
    # makes bwrap-as-root refuse the planted program for another reason.
    open_dir = Path(tempfile.mkdtemp(prefix="rt15-bwrap-", dir="/tmp"))
    open_dir.chmod(0o755)
    ws = open_dir / "ws"
    ws.mkdir()
    marker = tmp_path / "PWNED"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("PATH", f"{ws / 'bin'}:{os.environ['PATH']}")
    plant = (
        f"mkdir -p bin && printf '#!/bin/sh\\n: > {marker}\\nexec /usr/bin/bwrap \"$@\"\\n' > bin/bwrap"
        " && chmod +x bin/bwrap"
    )

    async def sessions() -> list[str]:
        out = []
        for n, command in enumerate([plant, "echo second"]):
            async with shellrt.Runtime(
                ws, "bwrap", session_dir=tmp_path / f"s{n}", mode="bypassPermissions"
            ) as rt:
                block = {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": command}}
                out.append(
                    json.dumps((await rt.run({"role": "assistant", "content": [block]}))["content"][0])
                )
        return out

    # Round 38 (trust) guards a workspace directory on the operator's PATH: the command's plant is
    # refused or reverted now. Left there before the session (as by an older shellrt), so what this
    # test is about -- shellrt's own lookups skip it -- is still exercised.
    subprocess.run(["/bin/sh", "-c", plant], cwd=ws, check=True)  # writes ws/bin/bwrap only
    try:
        results = anyio.run(sessions)
        assert (ws / "bin" / "bwrap").exists(), results
    finally:
        shutil.rmtree(open_dir, ignore_errors=True)
    assert not marker.exists(), f"the planted bwrap ran on the host: {results}"
    assert "second" in results[1], results
