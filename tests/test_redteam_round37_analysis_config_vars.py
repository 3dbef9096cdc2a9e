"""Red team, round 37 (analysis): programs named through a variable a program reads as its configuration.

git reads ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` and ``GIT_CONFIG_PARAMETERS`` as
``-c`` settings, npm reads every ``npm_config_*`` (``script-shell`` runs each script), man reads ``MANOPT``
(``-P``/``-H``), less and more ``LESS``/``MORE`` (``+!cmd``), the JVM ``JAVA_TOOL_OPTIONS`` (``-XX:OnError=``),
man -H and python's webbrowser ``BROWSER``; and options whose names say neither "run" nor "program"
(pandoc's ``--pdf-engine``, git daemon's ``--access-hook``, latexmk's ``-pdflatex=``, the JVM's
``-XX:OnOutOfMemoryError=``) run the program they are given. With ``x=$(printf '\\x72m')`` no word says
``rm``: each form passed ``Bash(rm:*)`` in ``bypassPermissions``. Real git ran the hidden program as
its fsmonitor (the first test), real npm and man -P (on a terminal) were checked by hand.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis.unread_code import value_code
from tests._hidden_code import rule_misses
from tests.conftest import require

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
FSMONITOR = 'GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="$x y" git status'
ATTACKS = [H + f for f in [
    FSMONITOR, 'export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="$x"; git status',
    'env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="$x" git status',
    'GIT_CONFIG_PARAMETERS="\'core.fsmonitor\'=\'$x\'" git status',
    'GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="$k" GIT_CONFIG_VALUE_0=y git status',
    'printf -v GIT_CONFIG_VALUE_0 %s "$x"; export GIT_CONFIG_VALUE_0 GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager; git log',
    'npm_config_script_shell="$x" npm run t', 'NPM_CONFIG_SCRIPT_SHELL="$x" npm run t', 'npm_config_git="$x" npm i',
    'export npm_config_script_shell="$x"; npm run t', 'read -r npm_config_script_shell <<< "$x"; export npm_config_script_shell; npm run t',
    'MANOPT="-P$x" man ls', 'MANOPT="--pager=$x" man ls', 'MANOPT="-H$x" man ls', 'LESS="+!$x y" less f', 'MORE="+!$x" more f',
    'BROWSER="$x" man -H ls', 'BROWSER="$x" python3 -m webbrowser u', 'RUSTUP_TOOLCHAIN="$x" cargo build',
    'GOTOOLCHAIN="$x" go build', 'UV_PYTHON="$x" uv run t.py',
    'java -XX:OnError="$x y" -version', 'java "-XX:OnOutOfMemoryError=$x y" X.java',
    'JAVA_TOOL_OPTIONS="-XX:OnError=$x" java -version', 'pandoc --pdf-engine="$x" f -o f.pdf',
    'latexmk -pdflatex="$x %O %S" f', 'git daemon --access-hook="$x"',
]] + ["MANOPT=-Prm man ls", "LESS='+!rm x' less f", "MORE='+!rm x' more f"]
KEPT = ["LESS=-R less f", "LESS='-FRX --mouse' less f", "MANOPT=-a man ls", 'CCACHE_DIR="$d" ls', 'ACCESS="$a" ls',
        "npm_config_loglevel=silent true", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=color.ui GIT_CONFIG_VALUE_0=never git log",
        'echo "GIT_CONFIG_VALUE_0=$x"', 'pandoc --pdf-engine=xelatex f -o f.pdf', 'git status']


async def test_a_program_named_by_a_configuration_variable_meets_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


def test_real_git_runs_a_hidden_fsmonitor_from_the_environment(tmp_path: Path) -> None:
    """The premise, in real git and bash: the environment's configuration runs the hidden program."""
    git, bash = shutil.which("git"), shutil.which("bash")
    require(git is not None and bash is not None, "git and bash are needed")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    script = "x=$(printf 'touc\\x68'); " + FSMONITOR
    subprocess.run([str(bash), "-c", script], cwd=tmp_path, env=env, timeout=30, capture_output=True)
    assert (tmp_path / "y").exists()


def test_the_value_reader_names_the_variable() -> None:
    assert "GIT_CONFIG_VALUE_3" in value_code('"$x"', "GIT_CONFIG_VALUE_3")
    assert "npm_config_script_shell" in value_code('"$x"', "npm_config_script_shell")
    assert "MANOPT" in value_code("-a -Pless", "MANOPT")
    assert "-XX:OnError" in value_code('"-XX:OnError=$x"', "JAVA_TOOL_OPTIONS")
    assert value_code("never", "GIT_CONFIG_VALUE_3") == value_code('"$x"', "PATHX") == ""


def test_the_runtime_refuses_a_hidden_fsmonitor(tmp_path: Path) -> None:
    """End to end (local backend, a temporary repository): the Runtime's decision under a deny rule for
    the hidden program. Before: allowed, and git ran it (``y`` appeared)."""
    import anyio

    import shellrt
    from shellrt.protocol import ToolUseBlock
    from shellrt.tools.bash import Bash

    require(shutil.which("git") is not None, "git is needed")
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    command = "x=$(printf 'touc\\x68'); " + FSMONITOR

    async def main() -> bool:
        async with shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", tools=[Bash()],
                                   mode="bypassPermissions", deny=["Bash(touch:*)"]) as rt:
            result = (await rt.run_envelopes([ToolUseBlock(id="r37c", name="Bash", input={"command": command})]))[0]
            return bool(result.is_error)

    assert anyio.run(main) is True
    assert not (ws / "y").exists()
