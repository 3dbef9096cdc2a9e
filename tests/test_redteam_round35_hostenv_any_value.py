"""Red team round 35 (hostenv): any inherited variable whose value names a writable place.

Round 34 removed a list of known start-up variables from what host programs inherit (hooks, host
git, host ripgrep). A list of names is never complete: ``HOME`` inside the workspace (git reads
``~/.gitconfig``), git's own configuration variables (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_0`` and
``GIT_CONFIG_PARAMETERS`` with ``core.fsmonitor``), Tcl's ``TCLLIBPATH=lib`` (relative, no ``/``),
``LUA_INIT=@x.lua``, ``DOTNET_STARTUP_HOOKS``, ``VIRTUAL_ENV`` passed, and a hook ran what a
sandboxed command wrote, on the host.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis.git_env import git_hardening_env
from shellrt.permissions import build_governance
from shellrt.permissions.hook_env import hook_env

from .test_permissions_support import make_ctx
from .test_redteam_round34_hostenv_startup_vars import _tool

pytestmark = pytest.mark.anyio


async def test_a_hooks_git_and_tclsh_load_nothing_any_variable_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git, tclsh, bash = _tool("git"), _tool("tclsh"), _tool("bash")
    ws, home, mine = tmp_path / "ws", tmp_path / "home", tmp_path / "mine"
    (ws / "lib").mkdir(parents=True)
    (home / ".shellrt").mkdir(parents=True)
    subprocess.run([git, "init", "-q", str(mine)], check=True)  # the operator's own repository
    planted = tmp_path / "PLANTED"
    # What a sandboxed command writes in the workspace.
    fsm = ws / "fsm.sh"
    fsm.write_text(f"#!/bin/sh\necho \"$0 \" >> {planted}\n")
    fsm.chmod(0o755)
    (ws / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {fsm}\n")
    (ws / "lib" / "pkgIndex.tcl").write_text(f"exec sh -c {{echo tcl >> {planted}}}\n")
    # The operator's hook: git over their own repository, a Tcl script needing a package.
    script = f"{git} -C {mine} status >/dev/null 2>&1; echo 'catch {{package require Tk}}' | {tclsh}; exit 0"
    hooks = [{"type": "command", "command": f"{bash} -c {json.dumps(script)}"}]
    (home / ".shellrt" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": hooks}]}})
    )
    for name in ("HOME", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "TCLLIBPATH", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    gov = build_governance(ws, home=home, managed_path=tmp_path / "managed.json")
    assert gov.settings.hook_specs, gov.settings.diagnostics
    families = {
        "HOME": {"HOME": str(ws)},
        "GIT_CONFIG_COUNT": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": str(fsm)},
        "GIT_CONFIG_PARAMETERS": {"GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{fsm}'"},
        "TCLLIBPATH": {"TCLLIBPATH": "lib"},
    }
    ran: dict[str, str] = {}
    for family, values in families.items():
        with monkeypatch.context() as m:
            for name, value in values.items():
                m.setenv(name, value)
            await gov.hooks.pre_tool_use("Bash", {"command": "ls"}, make_ctx(ws, tmp_path))
        if planted.exists():
            ran[family] = planted.read_text()
            planted.unlink()
    assert not ran, f"the operator's hook ran workspace code on the host: {ran}"


def test_any_value_naming_a_writable_place_is_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    keep = {
        "HOME": "/root",
        "TZ": "Europe/Berlin",
        "LANG": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy.example:3128",
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "LS_COLORS": "rs=0:di=01;34:*.tar=01;31",
        "GIT_CONFIG_PARAMETERS": "'color.ui'='auto' 'core.pager'='less -R'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "A B",
        "LUA_INIT": "@/etc/lua/init.lua",
        "TCLLIBPATH": "/usr/share/tcl",
        "TMPDIR": "/tmp",
    }
    drop = {
        # Any variable, known or not: a relative path, or an absolute one in a writable root.
        "LUA_INIT": ["@./x.lua", "@x.lua", "require 'x'", f"@{ws}/x.lua"],
        "LUA_PATH": ["./?.lua", "/usr/share/lua/?.lua;;"],
        "DOTNET_STARTUP_HOOKS": [f"{ws}/x.dll", "x.dll"],
        "R_PROFILE_USER": [".Rprofile"],
        "TCLLIBPATH": ["lib", f"/usr/share/tcl {ws}/lib"],
        "VIRTUAL_ENV": [f"{ws}/.venv"],
        "TMPDIR": ["tmp", f"{ws}/tmp"],
        "TZ": [f"{ws}/zone", f":{ws}/zone", "../ws/zone", "./zone"],
        "HOME": [str(ws), "home"],
        "SOME_TOOL_PLUGIN": ["./plugin.so", f"load={ws}/x", "a/b"],
        "JAVA_TOOL_OPTIONS": ["-Djava.library.path=lib"],
        "GIT_CONFIG_PARAMETERS": [
            "'core.hooksPath'='hooks'",
            f"'include.path'='{ws}/x.cfg'",
            "'core.fsmonitor'='./fsm'",
            "'core.sshCommand'='sh x.sh'",
            "'unterminated",
        ],
        "GIT_CONFIG_KEY_0": ["core.hooksPath"],
    }
    got = hook_env(keep, [ws])
    assert {k: v for k, v in got.items() if k != "PATH"} == keep
    hardening = git_hardening_env()  # the host git queries' own overrides pass whole
    assert {k: v for k, v in hook_env(hardening, [ws]).items() if k != "PATH"} == hardening
    for name, values in drop.items():
        for value in values:
            env = {name: value}
            if name == "GIT_CONFIG_KEY_0":
                env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_VALUE_0="hooks")
            out = hook_env(env, [ws])
            assert name not in out, (name, value)
            assert not {k for k in out if k.startswith("GIT_CONFIG_")}, (name, value, out)
