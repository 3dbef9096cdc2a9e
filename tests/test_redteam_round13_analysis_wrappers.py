"""Red team, round 13 (command analysis): a wrapper's options read the way getopt reads them.

The analysis finds the command a wrapper runs (``env``, ``timeout``, ``nice``, ``xargs``, ``sudo``,
``su``, ``flock``, ...) to make it a part of its own, so a rule for the wrapper cannot carry the
command past the rules. It skipped an option's value only when the option was spelled exactly as
modelled, but getopt also takes clusters (``env -iu NAME``, ``timeout -vs 9``, ``xargs -rn 1``),
unique abbreviations (``env --un NAME``, ``timeout --sig 9``, ``su --comm=CMD``) and attached script
values (``env -S'CMD'``, ``env -vS CMD``). So ``env -iu ls touch f`` had the part ``ls touch f``
(a directory named ``ls`` may well exist): with the rules ``Bash(env:*)`` and ``Bash(ls:*)`` it
ran ``touch f`` unasked. Deny rules held (the engine searches every word of a part that is not
read-only), and the judged wrappers (env, timeout, nice, ...) stayed not read-only.

The wrapped command is now found as getopt finds it; an ambiguous abbreviation makes it unknown.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r13w", **kw)


@pytest.mark.parametrize(
    "command",
    ["timeout --sig 9 5 rm x", "timeout -vs 9 5 rm x", "timeout --kill 1 5 rm x", "nice --adj 5 rm x",
     "env -iu ls rm x", "env --un ls rm x", "env --chd /tmp rm x", "stdbuf --out 0 rm x", "xargs -rn 1 rm x",
     "xargs --max-a 1 rm x", "xargs -0I {} rm x", "sudo -Eu root rm x", "sudo --us root rm x",
     "ionice -tc 3 rm x", "watch -tn 1 rm x", "nsenter --targ 1 rm x", "ltrace -fo out rm x",
     "time -ao out rm x", "env -S'rm x'", "env -vS 'rm x'", "env --split 'rm x'", "su --comm='rm x'",
     "su -lc 'rm x'", "flock -nc 'rm x' lockfile", "flock --comm 'rm x' lockfile"],
)
def test_the_wrapped_command_is_the_one_getopt_finds(command: str) -> None:
    analysis = analyze(command)
    wrapped = [s for s in analysis.subcommands if s.via]
    assert [s.text for s in wrapped] == ["rm x"], (command, [(s.text, s.via) for s in analysis.subcommands])


@pytest.mark.parametrize("command", ["xargs --max 1 rm x", "xargs --max- 1 rm x"])
def test_an_ambiguous_abbreviation_leaves_the_command_unknown(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only
    assert all(s.name == "" for s in analysis.subcommands if s.via), [(s.text, s.via) for s in analysis.subcommands]


@pytest.mark.parametrize(
    "command", ["timeout 5 ls", "nice -n 5 ls", "nice -5 ls", "env ls", "command -v ls", "stdbuf -o0 ls", "time ls"]
)
def test_plain_wrapped_reads_stay_read_only(command: str) -> None:
    assert analyze(command).read_only, command


def test_env_runs_the_command_after_the_cluster_in_the_real_shell(tmp_path: Path) -> None:
    (tmp_path / "ls").mkdir()
    env = shutil.which("env")
    assert env is not None
    subprocess.run([env, "-iu", "ls", "touch", "pwned"], cwd=tmp_path, timeout=30, check=True)
    assert (tmp_path / "pwned").exists()


@pytest.mark.parametrize("command", ["env -iu ls touch pwned", "env --un ls touch pwned"])
async def test_a_rule_for_the_wrapper_does_not_carry_the_command(ws: Path, command: str) -> None:
    (ws / "ls").mkdir()
    [envelope] = await _bash(ws, [command], mode="default", allow=["Bash(env:*)", "Bash(ls:*)"])
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned").exists(), _text(envelope)
