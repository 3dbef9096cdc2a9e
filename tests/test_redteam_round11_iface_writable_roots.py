"""Red team round 11: a host-side hook or MCP server must not run what a command wrote in ANY
root the sandbox writes, not just the workspace.

Round 10 hashed the workspace files a hook command (and a stdio MCP server's command line) runs
when the session starts, and refused to run them once changed. Every other root a command may
write was left out: an extra writable root (``permissions.additionalDirectories``, ``--writable``),
and a home directory made writable, where a hook named through ``$HOME/...`` was not even
resolved (a variable other than the project directory). A command rewrote the script there and
the next hook (or restart) ran it on the host. Every writable root is now hashed the same way, and
``$HOME`` is resolved as the hook's own environment has it.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox.policy import SandboxPolicy
from tests._bwrap_session import require_bwrap
from tests._governance import trust_env
from tests._mcp_support import TEST_SERVER

pytestmark = pytest.mark.anyio


def _settings(tmp_path: Path, command: str, extra: list[str] | None = None) -> Path:
    """An operator ``--settings`` file: PostToolUse on Bash runs ``command``."""
    hooks = {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}
    permissions: dict[str, Any] = {"allow": ["Bash"]}
    if extra:
        permissions["additionalDirectories"] = extra
    path = tmp_path / "operator-settings.json"
    path.write_text(json.dumps({"hooks": hooks, "permissions": permissions}))
    return path


def _plant(path: Path, text: str) -> str:
    return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}"


async def _run(rt: shellrt.Runtime, *commands: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for command in commands:  # one message each: the hook runs after each command
        block = {
            "type": "tool_use",
            "id": "wr-" + secrets.token_hex(6),
            "name": "Bash",
            "input": {"command": command},
        }
        out += (await rt.run([block]))["content"]
    return out


def _scripts(tmp_path: Path, where: Path) -> tuple[Path, Path, Path, str]:
    """A hook script in ``where`` that logs; the planted text writes a marker outside every root."""
    where.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "hook.log"
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir(exist_ok=True)
    script = where / "fmt.sh"
    script.write_text(f"#!/bin/sh\necho ok >> {log}\n")
    script.chmod(0o755)
    return script, log, marker, f"#!/bin/sh\necho host > {marker}\n"


def _repo_and_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A trusted workspace ``repo`` (made) and the path of an extra writable root beside it."""
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    repo.mkdir()
    return repo, tmp_path / "extra"


@pytest.mark.parametrize("how", ["additionalDirectories", "policy"])
async def test_a_hook_script_in_an_extra_writable_root_is_not_run_once_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], how: str
) -> None:
    """Failed on the old code: the hook ran the planted script on the host (marker written)."""
    require_bwrap()
    repo, extra = _repo_and_extra(tmp_path, monkeypatch)
    script, log, marker, planted = _scripts(tmp_path, extra / "hooks")
    settings = _settings(tmp_path, f"sh {script}", [str(extra)] if how == "additionalDirectories" else None)
    policy = SandboxPolicy(workspace=repo, writable_roots=(extra,)) if how == "policy" else None
    session = tmp_path / "session"
    async with shellrt.Runtime(
        repo, "bwrap", session_dir=session, settings_files=[settings], policy=policy
    ) as rt:
        out = await _run(rt, "true", _plant(script, planted), "true")
    # Round 17: a file a hook runs is a protected file: the rewrite is reverted after the command
    # (it used to be kept, and skipped by this session's hooks only: the next session ran it).
    assert script.read_text() != planted, out
    assert not marker.exists(), "the operator's hook ran a script a sandboxed command wrote, on the host"
    assert set(log.read_text().split()) == {"ok"}, (log.read_text(), capfd.readouterr().err)


@pytest.mark.parametrize(
    "spelling", ['sh "$HOME"/hooks/fmt.sh', "sh ${HOME}/hooks/fmt.sh", "$HOME/hooks/fmt.sh"]
)
async def test_a_hook_named_through_home_in_a_writable_home_is_tracked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], spelling: str
) -> None:
    """Failed on the old code: ``$HOME/...`` was untrackable, the planted script ran on the host.

    Since round 35 (hostenv) a hook is not given a ``HOME`` inside a writable root (git and shells
    read their start-up files there): ``$HOME/hooks/fmt.sh`` then names no script and the hook does
    not run at all, which the operator is told once. Either way the planted script never runs."""
    require_bwrap()
    env = trust_env(tmp_path, monkeypatch)
    home = Path(env["HOME"])
    repo = tmp_path / "repo"
    repo.mkdir()
    script, log, marker, planted = _scripts(tmp_path, home / "hooks")
    settings = _settings(tmp_path, spelling)
    policy = SandboxPolicy(workspace=repo, writable_roots=(home,))
    session = tmp_path / "session"
    async with shellrt.Runtime(
        repo, "bwrap", session_dir=session, settings_files=[settings], policy=policy
    ) as rt:
        out = await _run(rt, "true", _plant(script, planted), "true")
    assert script.read_text() != planted, out  # round 17: reverted (a file a hook runs is protected)
    assert not marker.exists(), "a hook named through $HOME ran a script a sandboxed command wrote"
    assert not log.exists() or set(log.read_text().split()) == {"ok"}, log.read_text()


async def test_a_file_beside_the_script_in_an_extra_root_is_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the script may load beside itself (a new ``lib.sh``) counts as its code too."""
    repo, extra = _repo_and_extra(tmp_path, monkeypatch)
    script, log, _marker, _planted = _scripts(tmp_path, extra / "hooks")
    settings = _settings(tmp_path, f"sh {script}", [str(extra)])
    session = tmp_path / "session"
    async with shellrt.Runtime(repo, "local", session_dir=session, settings_files=[settings]) as rt:
        results = await _run(rt, "true", f"echo x > {extra}/hooks/lib.sh", "true")
    # Round 18: the script's directory is protected whole, so the plant never stays (asked, or
    # reverted) and the operator's hook keeps running.
    assert not (extra / "hooks" / "lib.sh").exists(), results
    assert set(log.read_text().split()) == {"ok"}, log.read_text()


async def test_an_unchanged_script_in_an_extra_root_keeps_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check costs nothing while the files are as the session found them (a write elsewhere
    in the same root is not a change of the hook)."""
    repo, extra = _repo_and_extra(tmp_path, monkeypatch)
    script, log, _marker, _planted = _scripts(tmp_path, extra / "hooks")
    (extra / "data").mkdir()
    settings = _settings(tmp_path, f"sh {script}", [str(extra)])
    session = tmp_path / "session"
    async with shellrt.Runtime(repo, "local", session_dir=session, settings_files=[settings]) as rt:
        await _run(rt, "true", f"echo x > {extra}/data/notes.txt", "true")
    assert log.read_text().split() == ["ok", "ok", "ok"]


async def test_an_mcp_server_in_an_extra_writable_root_is_not_restarted_once_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed on the old code: the restart ran the planted server script on the host."""
    require_bwrap()
    repo, extra = _repo_and_extra(tmp_path, monkeypatch)
    (extra / "tools").mkdir(parents=True)
    server = extra / "tools" / "srv.py"
    shutil.copy(TEST_SERVER, server)
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    servers = {"w": {"command": sys.executable, "args": [str(server)], "alwaysLoad": True}}
    settings = tmp_path / "operator-settings.json"
    permissions = {"allow": ["Bash", "mcp__w"], "additionalDirectories": [str(extra)]}
    settings.write_text(json.dumps({"mcpServers": servers, "permissions": permissions}))
    future = "from __future__ import annotations\n"
    planted = server.read_text().replace(future, future + f"open({str(marker)!r}, 'w').write('host')\n", 1)
    session = tmp_path / "session"

    async def call(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        block = {"type": "tool_use", "id": "wm-" + secrets.token_hex(6), "name": name, "input": tool_input}
        result: dict[str, Any] = (await rt.run([block]))["content"][0]
        return result

    async with shellrt.Runtime(repo, "bwrap", session_dir=session, settings_files=[settings]) as rt:
        assert not (await call(rt, "mcp__w__echo", {"text": "hi"})).get("is_error")
        # Round 17: the server's script is a protected file: the redirect asks (headless: refused);
        # a write the analysis cannot see is reverted after the command.
        refused = await call(rt, "Bash", {"command": _plant(server, planted)})
        assert refused.get("is_error") and str(server) in json.dumps(refused), refused
        encoded = base64.b64encode(planted.encode()).decode()
        hidden = f"python3 -c \"import base64; open('{server}', 'wb').write(base64.b64decode('{encoded}'))\""
        await call(rt, "Bash", {"command": hidden})
        assert server.read_text() != planted
        assert (await call(rt, "mcp__w__crash", {}))["is_error"]
        again = await call(rt, "mcp__w__echo", {"text": "hi"})
    assert not marker.exists(), "a restarted MCP server ran a script a sandboxed command wrote, on the host"
    assert not again.get("is_error"), again  # restarted from the operator's own script


def test_a_link_out_of_an_extra_root_is_compared_by_its_target(tmp_path: Path) -> None:
    """A link to a program outside the roots is no reason to refuse; re-pointing it is a change."""
    from shellrt.permissions.writable_files import roots_changed, roots_files

    ws, extra = tmp_path / "ws", tmp_path / "extra"
    (extra / "bin").mkdir(parents=True)
    ws.mkdir()
    (extra / "bin" / "fmt").symlink_to("/bin/true")
    command = f"{extra}/bin/fmt --check"
    found = roots_files([ws, extra], [command], base=ws)
    assert roots_changed(found, [command], base=ws) is None
    (extra / "bin" / "fmt").unlink()
    (extra / "bin" / "fmt").symlink_to("/bin/false")
    why = roots_changed(found, [command], base=ws)
    assert why == f"hook file {extra}/bin/fmt now leads elsewhere than when the session started", why


def test_a_script_directly_in_a_root_watches_that_roots_own_files(tmp_path: Path) -> None:
    from shellrt.permissions.writable_files import roots_changed, roots_files

    ws, extra = tmp_path / "ws", tmp_path / "extra"
    ws.mkdir()
    (extra / "deep").mkdir(parents=True)
    (extra / "fmt.sh").write_text("echo ok\n")
    command = f"sh {extra}/fmt.sh"
    found = roots_files([ws, extra], [command], base=ws)
    (extra / "deep" / "data.txt").write_text("x")  # below the root: not what the script loads beside it
    assert roots_changed(found, [command], base=ws) is None
    (extra / "lib.sh").write_text("echo planted\n")
    why = roots_changed(found, [command], base=ws)
    assert why == f"the files directly in {extra} changed since the session started", why
