"""Red team, round 16 part 2 (classifier): jq's options as jq reads them, and the files they read.

jq matches a long option as a whole word (``strcmp`` in every release up to 1.8): ``--rawfile=a``,
``--slurpfile=a``, ``--indent=2`` and ``--from-file=p`` are unknown options to jq, never an option
with a value. The option model took ``--rawfile=a FILE`` as ``--rawfile a FILE`` (read-only) yet
reported no read path, so a ``Read(...)`` deny on FILE was never checked: a model that disagrees
with the program about which word is a file. Harmless with this jq (it exits before reading), but
the judgement rested on that; ``--name=value`` is now not an option for jq (not read-only, with a
reason that says to write the value as the next word). The forms jq does take report their files:
``--rawfile NAME FILE``, ``--slurpfile NAME FILE``, ``-f FILE`` (also ``-f`` before other options:
jq's ``-f`` is a flag that makes the program operand a file, whose text a compile error prints),
input files, and ``--args``/``--jsonargs`` words (reported as reads: a superset). ``$__loc__``,
``input_filename``, ``@sh``, ``$ENV``, ``getpath`` and ``debug`` read no file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash

pytestmark = pytest.mark.anyio


def _reads(command: str) -> set[str]:
    return {path for sub in analyze(command).subcommands for path in sub.reads}


@pytest.mark.parametrize(
    "command",
    [
        "jq --rawfile=a secret.txt -n '$a'",
        "jq --slurpfile=a secret.txt -n '$a'",
        "jq -n --from-file=secret.txt",
        "jq --indent=2 . f.json",
        "jq --arg=x y -n '$x'",
    ],
)
def test_option_equals_value_is_not_read_only(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, analysis.reasons
    assert any("--option=value" in reason for reason in analysis.reasons), analysis.reasons


def test_jq_here_rejects_the_equals_forms(tmp_path: Path) -> None:
    """The premise: this jq exits on ``--rawfile=a`` before it reads the file."""
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed")
    (tmp_path / "secret.txt").write_text("R16-SECRET\n")
    out = subprocess.run([jq, "--rawfile=a", "secret.txt", "-n", "$a"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=10)
    assert out.returncode == 2 and "Unknown option" in out.stderr and "R16-SECRET" not in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("command", "path"),
    [
        ("jq --rawfile a secret.txt -n '$a'", "secret.txt"),
        ("jq -n --slurpfile a secret.txt '$a'", "secret.txt"),
        ("jq -f -n secret.txt", "secret.txt"),
        ("jq -n -f --arg a b secret.txt", "secret.txt"),
        ("jq -nf secret.txt", "secret.txt"),
        ("jq -n '[inputs]' secret.txt", "secret.txt"),
        ("jq 'input_filename' secret.txt", "secret.txt"),
        ("jq -r '@sh \"\\(.)\"' secret.txt", "secret.txt"),
        ("jq -n '$__loc__' secret.txt", "secret.txt"),
    ],
)
def test_every_file_jq_reads_is_reported(command: str, path: str) -> None:
    # Round 25: `-f` where jq 1.6/1.7 and the check would read different filter files is not
    # read-only any more (the tool reads the filter file for imports); its file is still reported.
    assert analyze(command).read_only == (command not in _ROUND25_NOT_READ_ONLY), analyze(command).reasons
    assert path in _reads(command), _reads(command)


_ROUND25_NOT_READ_ONLY = frozenset({"jq -f -n secret.txt", "jq -n -f --arg a b secret.txt", "jq -nf secret.txt"})


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"])
async def test_a_read_deny_rule_meets_jq_file_options(tmp_path: Path, mode: str) -> None:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./secret.txt)"]}}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "m.json", mode=mode,
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "s", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    bash = Bash()
    for command in ("jq --rawfile a secret.txt -n '$a'", "jq -f -n secret.txt", "jq -n --slurpfile a secret.txt 1"):
        decision = await gov.engine.decide(bash, bash.parse_input({"command": command}), ctx)
        assert decision.behavior == "deny", (mode, command, decision.chain)
