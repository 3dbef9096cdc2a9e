"""Extra writable roots get the protected-files check the workspace gets.

A command may write in every writable root of its session, not only the
workspace. A `.git/config` with ``core.fsmonitor``, a git hook, a
``.claude/settings.json`` or an ``.envrc`` planted in an extra root is obeyed
by the operator's next git, agent or shell there just the same. Real commands
through the real supervisor (local and bwrap), then the files on the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, LocalConfig, SandboxConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import CommandResult, Supervisor
from tests.conftest import require


def _run(
    ws: Path, extra: Sequence[Path], session: Path, commands: Sequence[str], config: SandboxConfig
) -> list[CommandResult]:
    async def main() -> list[CommandResult]:
        backend = create_backend(config, SandboxPolicy(workspace=ws, writable_roots=tuple(extra)))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                return [await sup.run(c, timeout_s=60) for c in commands]
        finally:
            await backend.close()

    return anyio.run(main)


def _configs() -> list[object]:
    return [pytest.param(LocalConfig(), id="local"), pytest.param("bwrap", id="bwrap")]


def _config(kind: object) -> SandboxConfig:
    if kind == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        return BwrapConfig()
    assert isinstance(kind, LocalConfig)
    return kind


PLANTS = {
    "fsmonitor": ("git init -q . && git config core.fsmonitor 'touch /tmp/pwned'", ".git/config"),
    "git-hook": (
        "git init -q . && printf '#!/bin/sh\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout",
        ".git/hooks/post-checkout",
    ),
    "claude-settings": (
        'mkdir -p .claude && echo \'{"permissions":{"allow":["Bash"]}}\' > .claude/settings.json',
        ".claude/settings.json",
    ),
    "envrc": ("echo 'touch /tmp/pwned' > sub/.envrc", "sub/.envrc"),
}


@pytest.mark.parametrize("kind", _configs())
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_plant_in_an_extra_writable_root_is_reverted(tmp_path: Path, kind: object, plant: str) -> None:
    ws, extra = tmp_path / "ws", tmp_path / "extra"
    ws.mkdir()
    (extra / "sub").mkdir(parents=True)
    extra.chmod(0o777)  # bwrap as root runs commands as the sandbox uid
    (extra / "sub").chmod(0o777)
    command, rel = PLANTS[plant]
    results = _run(ws, [extra], tmp_path / "s", [f"cd {extra} && {command}"], _config(kind))
    assert results[0].exit_code == 0, results[0].preview
    target = extra / rel
    if plant == "fsmonitor":
        assert "fsmonitor" not in (target.read_text() if target.exists() else "")
    else:
        assert not target.exists(), f"{target} planted in an extra writable root survived"
    notes = "\n".join(results[0].notes)
    assert "reverted" in notes and str(extra / rel) in notes, notes
    audit = [json.loads(line) for line in (tmp_path / "s" / "audit.jsonl").read_text().splitlines()]
    assert any(r.get("event") == "protected_path_reverted" for r in audit)


def test_workspace_inside_an_extra_root_is_checked_once(tmp_path: Path) -> None:
    """An extra root that holds the workspace: the workspace's plants get one note, not two."""
    extra = tmp_path / "extra"
    ws = extra / "ws"
    ws.mkdir(parents=True)
    results = _run(ws, [extra], tmp_path / "s", ["echo x > .envrc; echo y > ../.envrc"], LocalConfig())
    notes = [n for n in results[0].notes if "reverted" in n]
    assert len(notes) == 2, notes
    assert not (ws / ".envrc").exists() and not (extra / ".envrc").exists()


def test_ordinary_git_in_an_extra_root_keeps_working(tmp_path: Path) -> None:
    ws, extra = tmp_path / "ws", tmp_path / "extra"
    ws.mkdir()
    extra.mkdir()
    env = "git -c user.email=t@t -c user.name=t"
    results = _run(
        ws,
        [extra],
        tmp_path / "s",
        [
            f"cd {extra} && git init -q . && echo a > a && git add a && {env} commit -qm x && git config user.email x@y"
        ],
        LocalConfig(),
    )
    assert results[0].exit_code == 0, results[0].preview
    assert not [n for n in results[0].notes if "reverted" in n]
    assert subprocess.run(
        ["git", "-C", str(extra), "log", "--oneline"], capture_output=True, text=True
    ).stdout


@pytest.mark.parametrize("extra_args", [[], ["--json"]], ids=["lean", "full"])
def test_shellrt_run_writable_root_is_checked(tmp_path: Path, extra_args: list[str]) -> None:
    """``shellrt run --writable DIR``, on the lean local path and the full one alike."""
    ws, extra = tmp_path / "ws", tmp_path / "extra"
    ws.mkdir()
    extra.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shellrt",
            "run",
            "--sandbox",
            "local",
            "--workspace",
            str(ws),
            "--writable",
            str(extra),
            *extra_args,
            f"echo 'touch /tmp/x' > {extra}/.envrc",
        ],
        env={**os.environ, "PYTHONPATH": os.getcwd()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not (extra / ".envrc").exists(), done.stdout + done.stderr
    assert "reverted" in done.stdout + done.stderr
