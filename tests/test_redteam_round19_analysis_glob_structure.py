"""Red team, round 19 (classifier): a glob where the analysis reads a word as structure.

bash replaces an unquoted ``*``/``?``/``[`` word by the names of matching files before the command
runs, and a hostile repository chooses those names. The analysis read three such words by their
text: the script of ``bash -c``/``sh -c`` (``bash -c 'ls '*`` was read-only, planned as ``ls *``,
and with a file named ``ls ;touch P`` bash ran ``touch``, unasked in default mode), the words a
wrapper reads before its command (``timeout *`` with files ``1 sh z`` runs ``sh z`` and had no part
but ``timeout``: ``Bash(timeout:*)`` let it through; ``timeout -s * 5 ls`` was read-only, and the
option's value ``*`` became ``1 2 sh z``: timeout ran ``sh z 5 ls``), and ``find``'s ``-exec … ;`` (``-exe?`` with a
file named ``-exec`` hid the command from ``Bash(find:*)``; ``';'*`` expanding to ``;`` split one). Such a
word is now unknown there: the command is unread (a part no allow rule meets), never read-only.

The hostile commands run only inside bubblewrap (the Bash tool on the bwrap backend).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import shellrt
from shellrt.analysis import analyze
from shellrt.analysis.globwords import glob_may_match
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

#: (files planted in the workspace, command, allow rules). Before the fix the first six created P
#: (in bwrap, mode default, no one to ask); the last was refused by other checks of the Bash tool.
ATTACKS = [
    ({"ls ;touch P": ""}, "bash -c 'ls '*", []),
    ({"ls $(touch P)": ""}, "sh -c 'ls '?*", []),
    ({"cat a;touch P": ""}, "timeout 5 bash -c 'cat '*", []),
    ({"1": "", "sh": "", "z": "touch P\n"}, "timeout *", ["Bash(timeout:*)"]),
    ({"-exec": "", "z": "touch P\n"}, "find . -name z -exe? sh z \\;", ["Bash(find:*)"]),
    # Read-only before: the option value `*` is `1 2 sh z`, so timeout runs `sh z 5 ls`.
    ({"1": "", "2": "", "sh": "", "z": "touch P\n"}, "timeout -s * 5 ls", []),
    # `';'*` expands to `;` (a file of that name): the first -exec ends there. The Bash tool asked
    # already (other checks), but the analysis planned `ls ;* -exec sh z` as one part.
    ({";": "", "z": "touch P\n"}, "find . -name z -exec ls ';'* -exec sh z \\;", ["Bash(find:*)", "Bash(ls:*)"]),
]


#: Not read-only before either, but the script's place was read past a value that may be several words.
MORE = [("bash -o * -c 'ls'", [])]


@pytest.mark.parametrize(("command", "rules"), [*[(c, r) for _, c, r in ATTACKS], *MORE])
def test_a_glob_in_a_structural_word_is_never_read_only_or_allowed(command: str, rules: list[str]) -> None:
    result = analyze(command)
    assert not result.read_only, result.reasons
    # The unread part: no static name, so no allow rule (`Bash(find:*)`, `Bash(timeout:*)`) meets it.
    assert any(not s.static_name or not s.name for s in result.subcommands), result.subcommands


@pytest.mark.parametrize(
    "command",
    ["bash -c 'ls'", "bash -c 'ls' x*", "timeout 5 ls *", "find . -name '*.py'", "find . -name *.py",
     "find . -name '*.py' -exec grep -l x {} +"],
)
def test_globs_that_do_not_reach_structure_keep_their_verdict(command: str) -> None:
    parts = analyze(command).subcommands
    assert all(s.name for s in parts), parts  # no unread part
    if command in ("bash -c 'ls'", "bash -c 'ls' x*", "timeout 5 ls *"):
        assert analyze(command).read_only


def test_glob_matching_over_approximates() -> None:
    assert glob_may_match("-exe?", ["-exec"]) and glob_may_match("?", [";"]) and glob_may_match("-[e]xec", ["-exec"])
    assert glob_may_match("*", ["+"]) and not glob_may_match("*.py", ["-exec", ";", "+"])


async def test_the_bash_tool_runs_none_of_them(tmp_path: Path) -> None:
    require_bwrap()
    for n, (files, command, rules) in enumerate(ATTACKS):
        ws = tmp_path / f"ws{n}"
        ws.mkdir()
        for name, text in files.items():
            (ws / name).write_text(text)
        async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / f".s{n}", tools=[Bash()],
                                   mode="default", allow=rules) as rt:
            [envelope] = await rt.run_envelopes([ToolUseBlock(id=f"g{n}", name="Bash", input={"command": command})])
        assert envelope.is_error, (command, envelope.model.content)  # asked, and no one can approve
        assert not (ws / "P").exists(), command
        shutil.rmtree(ws)


_WRAPPERS = ["timeout", "timeout 5", "timeout -s", "timeout -k", "timeout -s KILL", "nice", "nice -n", "env", "env -u",
             "command", "command -p", "time", "time -p", "stdbuf -o", "stdbuf", "bash", "sh", "bash -c", "sh -c",
             "bash -e -c", "bash -o", "timeout 5 bash -c", "nice bash -c", "find .", "find . -name z", "xargs", "nohup"]
_GLOBS = ["*", "?", "[1-9]*", "'ls '*", "'ls '?*", "x*", "1*", "-*", "-e*", "'-'*", "~", "s?", "z*"]
_TAILS = ["", " 5 ls", " ls", " -c ls", " 5", " \\;", " sh z \\;"]
_FILES = {"1": "", "2": "", "sh": "", "z": "touch P\n", "ls ;touch P": "", "-exec": "", "s;touch P": ""}


async def test_generated_wrapper_globs_judged_read_only_leave_no_marker(tmp_path: Path) -> None:
    """Every wrapper x glob position x tail (2,457 forms); the read-only ones (185 before this round,
    70 of which created the marker in bwrap) run in one Bash tool call inside bubblewrap."""
    require_bwrap()
    forms = [f"{w} {g}{t}" for w in _WRAPPERS for g in _GLOBS for t in _TAILS]
    read_only = [form for form in forms if analyze(form).read_only]
    assert read_only  # the generator reaches read-only forms (a check that can fail)
    ws = tmp_path / "ws"
    for n, form in enumerate(read_only):
        run = ws / str(n)
        run.mkdir(parents=True)
        for name, text in _FILES.items():
            (run / name).write_text(text)
        (run / "c.sh").write_text(form + "\n")
    driver = " ; ".join(f"(cd {n} && timeout 5 bash c.sh) </dev/null >/dev/null 2>&1" for n in range(len(read_only)))
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()],
                               mode="bypassPermissions") as rt:
        await rt.run_envelopes([ToolUseBlock(id="gen", name="Bash", input={"command": driver + "; sleep 1"})])
    misses = [form for n, form in enumerate(read_only) if (ws / str(n) / "P").exists()]
    assert not misses, misses
