"""Red team, round 35 (analysis): prompt expansion of the command's own text.

shellrt runs a bash command as ``eval "$__shellrt_c"`` (``supervisor/shells.py``), so while it runs
``__shellrt_c`` holds the whole command text, quoted data included, and ``__shellrt_d`` the start
directory (which an earlier call chose with ``cd``); with the text in argv, ``BASH_EXECUTION_STRING``
holds it. ``echo '$(…)' "${__shellrt_c@P}"`` prompt-expands the text and runs the quoted ``$(…)``.
Round 34 counted a ``${x@P}`` of a name the command never binds as harmless (a fresh shell has no
such variable): 6 of 6 allowed past ``Bash(rm:*)`` in ``bypassPermissions`` mode. These names count
as bound now, as ``PWD`` does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import arith_flow
from shellrt.supervisor import shells
from tests._hidden_code import rule_misses
from tests.conftest import require

pytestmark = pytest.mark.anyio

CODE = '$(x=$(printf "\\x72m"); $x y)'
ATTACKS = [f"echo '{CODE}' \"${{__shellrt_c@P}}\"", f": '{CODE}' ${{__shellrt_c@P}}", "echo \"${__shellrt_d@P}\"",
           f"echo '{CODE}' \"${{BASH_EXECUTION_STRING@P}}\"", "n=__shellrt_c; echo \"${!n@P}\" '#'",
           f"echo '${{g:=1}}{CODE}' \"${{g:-${{__shellrt_c@P}}}}\""]
KEPT = ["echo ${HOME@P}", "echo \"${USER@P}\"", "echo ${x@Q}"]


async def test_the_runner_variables_count_as_bound(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    # Every variable of shellrt's runner is among them.
    source = Path(shells.__file__).read_text()
    assert set(re.findall(r"__shellrt_\w+", source)) <= set(arith_flow.RUNTIME_BOUND)


def test_the_runner_expands_its_own_text(tmp_path: Path) -> None:
    require(shutil.which("bash") is not None, "bash not installed")
    for name, in_argv in (("c", False), ("e", True)):
        variable = "BASH_EXECUTION_STRING" if in_argv else "__shellrt_c"
        # `${g:=1}` in the text ends the recursion (the text holds its own `@P` expansion).
        command = f"echo '${{g:=1}}$(x=$(printf \"\\x74ouch\"); $x {name})' \"${{g:-${{{variable}@P}}}}\""
        launch = shells.shell_launch(command, "bash", text_in_argv=in_argv)
        subprocess.run(launch.argv, env={"PATH": "/usr/bin:/bin", **launch.env}, cwd=tmp_path, capture_output=True,
                       timeout=30)
        assert (tmp_path / name).exists(), variable
