"""Red team round 34 (hostenv): start-up variables a host program inherits resolve into the workspace.

Round 33 took relative, empty and workspace entries out of the search paths a hook inherits
(``PYTHONPATH``, ``LD_LIBRARY_PATH``…). The variables that make a program load one named file or
module at start were passed on whole: a hook runs on the host, as the operator, in the workspace
root, so ``BASH_ENV=.bashenv``, ``NODE_OPTIONS=--require ./x.js`` or ``PYTHONUSERBASE=.pyuser``
(relative: resolved from that cwd) and ``LD_PRELOAD=<workspace>/x.so`` ran what a sandboxed command
wrote there. shellrt's own probes (the hook launcher's ``unshare`` check, run once as root from
shellrt's cwd; the ``git --list-cmds`` query) inherited them too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox._hostpath import register_writable, unregister_writable
from shellrt.permissions import build_governance, embedded, hookproc
from shellrt.permissions.hook_env import hook_env
from tests.conftest import require

from .test_permissions_support import make_ctx

pytestmark = pytest.mark.anyio

_SHOWN = (
    "PYTHONUSERBASE",
    "BASH_ENV",
    "NODE_OPTIONS",
    "LD_PRELOAD",
    "PERL_USE_UNSAFE_INC",
    "JAVA_TOOL_OPTIONS",
)


def _tool(name: str) -> str:
    found = shutil.which(name)
    require(found is not None, f"needs {name} on the host")
    assert found is not None
    return found


async def test_the_operators_hooks_load_nothing_the_workspace_names_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node, bash = _tool("node"), _tool("bash")
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    (home / ".shellrt" / "hooks").mkdir(parents=True)
    seen, planted = tmp_path / "env.json", tmp_path / "PLANTED"
    guard = home / ".shellrt" / "hooks" / "guard.py"
    guard.write_text(
        f"import json, os\njson.dump({{k: os.environ.get(k) for k in {_SHOWN!r}}}, open({str(seen)!r}, 'w'))\n"
    )
    hooks = [
        {"type": "command", "command": f"{sys.executable} {guard}"},
        {"type": "command", "command": f"{bash} -c true"},
        {"type": "command", "command": f"{node} -e 0"},
    ]
    (home / ".shellrt" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": hooks}]}})
    )
    # What a sandboxed command writes in the workspace, where hooks run.
    mark = f"open({str(planted)!r}, 'a').write('{{}} ')"
    site = ws / ".pyuser" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    (site / "x.pth").write_text(f"import builtins; {mark.format('python')}\n")
    (ws / ".bashenv").write_text(f"echo bash >> {planted}\n")
    (ws / "x.js").write_text(f"require('fs').appendFileSync({json.dumps(str(planted))}, 'node ')\n")
    # The operator's environment: relative names (resolved from the hook's cwd) and workspace paths.
    monkeypatch.setenv("PYTHONUSERBASE", ".pyuser")
    monkeypatch.setenv("BASH_ENV", ".bashenv")
    monkeypatch.setenv("NODE_OPTIONS", "--require ./x.js")
    monkeypatch.setenv("LD_PRELOAD", f"{ws}/lib/x.so")
    monkeypatch.setenv("PERL_USE_UNSAFE_INC", "1")
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-javaagent:agent.jar")
    gov = build_governance(ws, home=home, managed_path=tmp_path / "managed.json")
    assert gov.settings.hook_specs, gov.settings.diagnostics
    await gov.hooks.pre_tool_use("Bash", {"command": "ls"}, make_ctx(ws, tmp_path))
    ran = planted.read_text() if planted.exists() else ""
    assert not ran, f"the hooks ran workspace code on the host: {ran}"
    assert json.loads(seen.read_text()) == dict.fromkeys(_SHOWN)


def test_what_is_kept_and_what_is_dropped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    keep = {
        "NODE_OPTIONS": "--max-old-space-size=4096 --dns-result-order=ipv4first --require /usr/lib/x.js",
        "JAVA_TOOL_OPTIONS": "-Dfile.encoding=UTF-8 -Xmx2g",
        "RUBYOPT": "-W0 -rjson",
        "LD_PRELOAD": "libjemalloc.so.2 /usr/lib/x.so",
        "BASH_ENV": "/usr/share/x",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "EDITOR": "vim -u NONE",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -i /etc/ssh/key",
    }
    drop = {
        "NODE_OPTIONS": [
            "--require x",
            "--import=./x.mjs",
            "-r ./x",
            "--env-file x",
            "--require=" + f"{ws}/x.js",
        ],
        "RUBYOPT": ["-r./x", "-Ilib", "-I lib"],
        "PERL5OPT": ["-I.", "-Mlib=lib"],
        "JAVA_TOOL_OPTIONS": ["-javaagent:a.jar", "-cp lib", "-Xbootclasspath/a:x.jar"],
        "LD_PRELOAD": ["./x.so", "x/y.so", f"{ws}/x.so", "libc.so.6:../x.so"],
        "LD_AUDIT": ["./a.so"],
        "PYTHONHOME": ["venv", f"/usr:{ws}"],
        "PYTHONSTARTUP": [".pystartup"],
        "PYTHONPYCACHEPREFIX": ["cache"],
        "PYTHONUSERBASE": [""],
        "ZDOTDIR": ["."],
        "ENV": ["./.shrc"],
        "GIT_CONFIG_GLOBAL": ["gitconfig"],
        "XDG_CONFIG_HOME": [f"{ws}/.config"],
        "PERL_USE_UNSAFE_INC": ["1"],
        # Commands git, ssh and sudo start: a program named by a relative or workspace path.
        "GIT_SSH_COMMAND": ["./ssh", "ssh -F .ssh/config", "ssh -i ~/k"],
        "GIT_ASKPASS": ["bin/askpass"],
        "SSH_ASKPASS": [f"{ws}/askpass"],
        "EDITOR": ["./ed"],
        "GIT_EXTERNAL_DIFF": ["tools/diff"],
    }
    assert {k: v for k, v in hook_env(keep, [ws]).items() if k != "PATH"} == keep
    assert "GIT_SSH_COMMAND" in hook_env({"GIT_SSH_COMMAND": "ssh -i ~/k", "HOME": "/root"}, [ws])
    for name, values in drop.items():
        for value in values:
            assert name not in hook_env({name: value}, [ws]), (name, value)


async def test_shellrts_own_probes_do_not_preload_from_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gcc = _tool("cc")
    ws = tmp_path / "ws"
    ws.mkdir()
    planted = tmp_path / "PLANTED"
    source = ws / "x.c"
    source.write_text(
        "#include <stdio.h>\n__attribute__((constructor)) static void x(void) {"
        f' FILE *f = fopen("{planted}", "a"); if (f) {{ fputs("preloaded ", f); fclose(f); }} }}\n'
    )
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(ws / "x.so"), str(source)], check=True)
    token = register_writable([ws])
    try:
        monkeypatch.chdir(ws)  # shellrt started in the workspace, as an agent CLI usually is
        monkeypatch.setenv("LD_PRELOAD", "./x.so")
        monkeypatch.setattr(hookproc, "_pid_namespace_works", None)
        await hookproc._pid_namespace_prefix()
        monkeypatch.setenv("LD_PRELOAD", f"{ws}/x.so")
        monkeypatch.setattr(embedded, "_GIT_COMMANDS", [])
        embedded._git_commands()
    finally:
        unregister_writable(token)
    ran = planted.read_text() if planted.exists() else ""
    assert not ran, f"shellrt's own host probes loaded the workspace's library: {ran}"
