"""Red team, round 37 (review3): configuration variables bound through spellings the name checks missed.

Round 37 (analysis) made a program-configuration variable set to a run-time value a command no rule
reads (``GIT_CONFIG_VALUE_0="$x y" git status`` with ``core.fsmonitor``, ``x`` holding ``rm``), for a
prefix, ``export``, ``env``, ``printf -v``, ``read``. The binding builtins were read only with their
naming option spelt alone: ``printf -vNAME`` (glued), ``printf $v NAME`` with ``v=-v`` (or
``v=-vNAME``), ``read -aNAME`` set the variable and passed ``Bash(rm:*)`` in ``bypassPermissions``,
as did yarn 1's ``yarn_*`` settings in lower case (yarn reads them in any case, as npm does
``npm_config_*``). Real bash binds each spelling (below).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests._hidden_code import rule_misses
from tests.conftest import require

pytestmark = pytest.mark.anyio

X = "x=$(printf '\\x72m'); export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor; "
ATTACKS = [X + f for f in [
    "v=-v; printf $v GIT_CONFIG_VALUE_0 '%s y' \"$x\"; export GIT_CONFIG_VALUE_0; git status",
    "printf -vGIT_CONFIG_VALUE_0 '%s y' \"$x\"; export GIT_CONFIG_VALUE_0; git status",
    "v=-vGIT_CONFIG_VALUE_0; printf $v '%s y' \"$x\"; export GIT_CONFIG_VALUE_0; git status",
    "export GIT_CONFIG_VALUE_0; read -aGIT_CONFIG_VALUE_0 <<< \"$x y\"; git status",
    "export GIT_CONFIG_VALUE_0; read -raGIT_CONFIG_VALUE_0 <<< \"$x y\"; git status",
]] + ["x=$(printf '\\x72m'); yarn_script_shell=\"$x\" yarn run t",
      "x=$(printf '\\x72m'); export Yarn_Script_Shell=\"$x\"; yarn run t"]
KEPT = ["printf '%s\\n' \"$HOME\"", "printf -v out '%s' a; echo \"$out\"", "read -r line < f; echo \"$line\"",
        "read -ra parts <<< 'a b'; echo \"${parts[0]}\"", "printf -- '-v %s\\n' x", "yarn run t"]


async def test_binding_spellings_of_configuration_variables_are_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


@pytest.mark.parametrize("script", [
    "v=-v; printf $v N '%s' ok; echo \"$N\"", "printf -vN '%s' ok; echo \"$N\"",
    "v=-vN; printf $v '%s' ok; echo \"$N\"", "read -aN <<< 'ok no'; echo \"$N\"", "read -raN <<< 'ok no'; echo \"$N\"",
])
def test_real_bash_binds_each_spelling(tmp_path: Path, script: str) -> None:
    bash = shutil.which("bash")
    require(bash is not None, "bash not installed")
    assert bash is not None
    out = subprocess.run([bash, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "ok"
