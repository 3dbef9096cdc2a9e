"""Red team, round 36 (analysis2): programs given to options whose names do not say "run".

The first wave's name rule (``permissions/embedded._named_runners``) reads a run-time value of an
option whose name ends in ``cmd``, ``pager``, ``shell``… as a command no rule reads. Its Left: options
that name a program without saying so. With ``x=$(printf '\\x72m')``, ``clang -fuse-ld="$x"`` links with
the program ``$x``, ``cmake -DCMAKE_C_COMPILER[:FILEPATH]="$x" .`` runs it to test the compiler, ``perf
record -o "|$x"`` opens a pipe to it, ``python3 -m "$x"`` runs a module no rule names (``pip``,
``webbrowser``), ``pytest --pdbcls="$x:y"`` imports one, ``CC="$x" cmake .``, ``RUSTC_WRAPPER="$x"``,
``GOFLAGS="-toolexec=$x"`` (a program inside an options variable), ``git config core.pager "$x"`` (a
later git runs it): 35 of these 43 forms passed ``Bash(rm:*)`` in ``bypassPermissions``. And ``python3 -mpip``, ``-I -m
pip`` and ``-m pip.__main__`` passed ``Bash(python3 -m pip:*)`` (the rule's words are not the spelling)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions import embedded
from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
ATTACKS = [H + f for f in [
    'clang -fuse-ld="$x" a.c', 'gcc -fuse-ld="$x" a.c', 'clang --ld-path="$x" a.c',
    'cmake -DCMAKE_C_COMPILER="$x" .', 'cmake -D CMAKE_CXX_COMPILER_LAUNCHER="$x" .',
    'cmake -DCMAKE_MAKE_PROGRAM="$x" .', 'cmake -DCMAKE_LINKER="$x" .',
    'perf record -o "|$x" true', 'valgrind --log-file="|$x y" true', 'ltrace -o "|$x" true',
    'python3 -m "$x" y', 'python -m"$x" y', 'python3 -Im "$x" y', 'python3 -I -m "$x"',
    'pytest --pdbcls="$x:y"', 'pytest --pdbcls "$x:y"', 'CC="$x" make', 'make CC="$x"',
    'git -c "gpg.program=$x" log --show-signature', 'cmake -DCMAKE_C_COMPILER:FILEPATH="$x" .',
    'perf record "-o|$x" true', 'perf record -o"|$x" true', 'CC="$x" cmake .', 'CXX="$x" meson setup b',
    'CMAKE_C_COMPILER_LAUNCHER="$x" cmake .', 'RUSTC_WRAPPER="$x" cargo build', 'RUSTC="$x" cargo build',
    'CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$x" cargo run', 'export CC="$x"; cmake .',
    'GOFLAGS="-toolexec=$x" go build', 'CFLAGS="-O2 -fuse-ld=$x" make', 'RUSTFLAGS="-C linker=$x" cargo build',
    'export GOFLAGS="-toolexec $x"; go build', 'hyperfine --prepare="$x" true', 'lldb --one-line="$x"',
    'nano --speller="$x" f', 'git difftool --tool="$x"', 'docker run --entrypoint="$x" img',
    'mvn -Dexec.executable="$x" exec:exec', 'gpg --exec-path "$x" --recv-keys k', 'git config core.pager "$x"',
    'git config --global alias.st "!$x"', 'git config set core.sshCommand "$x y"',
]]
KEPT = ["clang -fuse-ld=lld a.c", 'cmake -DCMAKE_BUILD_TYPE="$t" .', 'python3 -m pytest -x', 'python3 -m "pytest"',
        'perf record -o perf.data true', 'grep -e "|$x" f',
        'echo "-m $x"', 'CCACHE_DIR="$d" ls', 'ACCESS="$a" ls', 'cmake -DCMAKE_BUILD_TYPE:STRING="$t" .',
        'CFLAGS="-O2 $extra" make', 'git config user.name "$n"', 'git config --global user.email "$e"']
SPELLINGS = ["python3 -mpip install x", "python3 -I -m pip install x", "python3 -Im pip install x",
             "python3 -u -mpip install x", "python3 -W ignore -m pip install x", "python3 -m pip.__main__ install x",
             "python3 -Im pip._internal.cli.main install x", "env python3 -Wignore -mpip install x"]


async def test_run_time_programs_in_unnamed_options_meet_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


async def test_python_module_spellings_meet_a_module_rule(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), [*SPELLINGS, "python3 -m pytest"], "bypassPermissions",
                       deny=["Bash(python3 -m pip:*)"])
    assert got == ["deny"] * len(SPELLINGS) + ["allow"]


def test_a_static_module_is_no_command_option() -> None:
    # Static: the module is a word a rule reads; an allow rule for `python3 -m pytest` still matches.
    assert embedded.command_options("python3", ["python3", "-m", "pytest"]) == []
    assert embedded.command_options("python3", ["python3", "-m", "$m"]) == [("-m", "$m")]

