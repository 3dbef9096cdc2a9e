"""Red team round 16 (left-overs): no host-side child of shellrt looks a program up where commands write.

Round 15 made shellrt's *own* lookups (bwrap, git, the hook launcher, rg, nsenter) skip ``PATH``
entries inside the session's writable roots, but left the children's environment alone: a hook
script (an absolute ``/usr/local/bin/guard.sh`` that runs ``jq``) and a stdio MCP server started
as ``npx``/``python3`` looked their programs up through the operator's ``PATH``. With an entry
inside the workspace (an activated ``.venv/bin``, direnv's ``bin``, ``node_modules/.bin``) or a
relative one, a sandboxed command planted the program and the host ran it (as root for a root
caller). The class test plants a shim for *every* program of ``/usr/bin`` and ``/usr/sbin`` in a
workspace ``PATH`` directory and drives a bwrap session (commands, Grep, hooks before and after);
no shim may run outside the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.tools.mcp._launch import launch_env
from shellrt.tools.mcp.config import StdioServerConfig
from tests.conftest import require


def _plant(hits: Path) -> str:
    """A command writing, for every system program, ``bin/<name>`` that records its run in
    ``hits`` (outside the workspace: the sandbox cannot write it) and then runs the real one."""
    return (
        "/usr/bin/mkdir -p bin && for p in /usr/bin/* /usr/sbin/*; do n=${p##*/}; "
        f"printf '#!/bin/sh\\necho %s >> {hits} 2>/dev/null\\nexec %s \"$@\"\\n' \"$n\" \"$p\" > \"bin/$n\"; "
        "done; /usr/bin/chmod +x bin/*"  # absolute: a relative PATH entry is refused by the analysis
    )


@pytest.mark.parametrize("entry", ["absolute", "relative"])
def test_no_host_child_runs_a_program_a_command_planted_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    ws, home, hooks = tmp_path / "ws", tmp_path / "home", tmp_path / "hooks"
    (ws / "bin").mkdir(parents=True)  # there before the session, as an activated .venv/bin is
    (ws / "notes.txt").write_text("TOKEN here\n")
    hooks.mkdir()
    guard = hooks / "guard.sh"  # the operator's own script, outside the workspace, by absolute path
    guard.write_text("#!/bin/sh\ncat > /dev/null\njq -n 1 > /dev/null\ntr a b < /dev/null\nexit 0\n")
    guard.chmod(0o755)
    (home / ".shellrt").mkdir(parents=True)
    spec = [{"matcher": ".*", "hooks": [{"type": "command", "command": str(guard)}]}]
    (home / ".shellrt" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": spec, "PostToolUse": spec}}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    monkeypatch.chdir(ws)  # a relative entry resolves against the working directory
    monkeypatch.setenv("PATH", f"{ws / 'bin' if entry == 'absolute' else 'bin'}:{os.environ['PATH']}")
    hits = tmp_path / "HITS"
    calls = [
        ("Bash", {"command": _plant(hits)}),
        ("Bash", {"command": "echo second"}),
        ("Grep", {"pattern": "TOKEN", "path": str(ws)}),
        ("Bash", {"command": "echo third"}),
    ]

    async def session() -> list[str]:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            out = []
            for i, (name, args) in enumerate(calls):
                block = {"type": "tool_use", "id": f"b{i}", "name": name, "input": args}
                result = await rt.run({"role": "assistant", "content": [block]})
                out.append(json.dumps(result["content"][0]))
            return out

    # Round 38 (trust) guards a workspace directory on the operator's PATH: the command's plant is
    # refused or reverted now. Left there before the session (as by an older shellrt), so what this
    # test is about -- shellrt's own lookups skip it -- is still exercised.
    subprocess.run(["/bin/sh", "-c", _plant(hits)], cwd=ws, check=True)  # writes ws/bin only
    results = anyio.run(session)
    assert (ws / "bin" / "jq").exists(), results  # the command did plant them, in the workspace
    ran = sorted(set(hits.read_text().split())) if hits.exists() else []
    assert ran == [], f"planted programs ran on the host: {ran}"
    assert "second" in results[1] and "notes.txt" in results[2] and "third" in results[3], results


def test_a_stdio_mcp_server_is_never_looked_up_where_commands_write(tmp_path: Path) -> None:
    """A stdio server configured as ``python3`` (``npx``, ``uvx``) is found on its environment's
    ``PATH``, when the session starts and at every restart after a crash; its children too."""
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    marker = tmp_path / "PWNED"
    fake = ws / "bin" / "python3"  # what a command wrote
    fake.write_text(f"#!/bin/sh\n: > {marker}\nexec /usr/bin/python3 \"$@\"\n")
    fake.chmod(0o755)
    for path in (f"{ws / 'bin'}:/usr/bin:/bin", "bin:/usr/bin:/bin"):
        config = StdioServerConfig(command="python3", args=["-c", "import os; print(os.environ['PATH'])"])
        env = {"PATH": path, **launch_env(config, [ws])}
        # As `bounded_stdio_client` starts it: the SDK's minimal environment, ours over it.
        done = subprocess.run([config.command, *config.args], env=env, cwd=ws, capture_output=True, text=True, check=True)
        assert not marker.exists(), f"the planted python3 ran on the host (PATH {path})"
        entries = done.stdout.strip().split(os.pathsep)
        assert all(e.startswith("/") and not e.startswith(str(ws)) for e in entries), done.stdout
