"""Red team, round 20 (classifier): every option of every read-only program, run in bubblewrap.

A generator, not a list: for each program the classifier models as read-only and that is installed
here, every option its own ``--help`` prints (and every option of its model) is put in a command
next to a marker path (``PROG OPT MK in``, ``PROG OPT=MK in`` / ``PROG -OMK in``), and, for the glob
angle, a file is named like the option (``--output=MK``, ``-oMK``) and the command is ``PROG *``
(bash expands the glob into that name before the program runs). The forms ``analyze()`` judges
read-only run in one Bash tool call inside bubblewrap, each in its own directory; a form that
leaves any new file there was judged read-only wrongly. None did in round 20: 9,475 forms, 4,958
judged read-only, all run once by hand (stride 1); the test runs a fixed stride of them to stay
inside its time budget (every form is still judged), with positive controls that must write.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import shellrt
from shellrt.analysis import analyze
from shellrt.analysis.programs import program_spec
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

#: Programs of the models left out: they wait (``sleep``, ``yes``, ``wait``), are builtins that print
#: or change the shell's state only (``cd``, ``dirs``, ``history``, ``help``, ``type``, ``command``),
#: or have checks of their own tests (``git``: `test_redteam_round20_analysis_gitgen.py`; ``man``).
_SKIP = frozenset({"sleep", "yes", "wait", ":", "cd", "pushd", "popd", "dirs", "history", "help", "type",
                   "command", "git", "man"})
#: Programs of the models (a fixed list: the generator must not depend on what ``_SPECS`` holds today).
PROGRAMS = ["arch", "b2sum", "base32", "base64", "basename", "cat", "cksum", "cmp", "column", "comm", "cut",
    "date", "df", "diff", "dirname", "du", "echo", "egrep", "env", "expand", "expr", "false", "fgrep", "file",
    "find", "fmt", "fold", "free", "getconf", "grep", "groups", "head", "hexdump", "hostname", "id", "join", "jq",
    "locale", "ls", "lsof", "md5sum", "nl", "nproc", "numfmt", "od", "paste", "pgrep", "printenv", "printf", "ps",
    "pwd", "readlink", "realpath", "rev", "rg", "sed", "seq", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
    "sha512sum", "sort", "stat", "strings", "tac", "tail", "test", "tr", "tree", "true", "tty", "uname", "uniq",
    "uptime", "users", "w", "wc", "which", "who", "whoami", "xxd"]
#: Positive controls, run with the sample: forms the analysis refuses because they write. Each must
#: leave a file in bwrap, or the harness could not see a miss (a check that cannot fail).
WRITERS = ["sort -o MK in", "sort --output=MK in", "uniq in MK", "tree -o MK .", "find . -fprint MK",
           "sed -n w\\ MK in", "xxd in MK", "date -f in >MK"]
_BUILTINS = frozenset({"echo", "printf", "test", "pwd", "true", "false"})
_OPTION = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]*|-[a-zA-Z0-9])")
#: Run every STRIDE-th read-only form (all of them are judged); the full run is STRIDE = 1.
STRIDE = 20


def _options(program: str) -> list[str]:
    """The options ``program --help`` prints, with its model's own."""
    try:
        text = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
        found = set(_OPTION.findall(text.stdout + text.stderr))
    except (OSError, subprocess.TimeoutExpired):
        found = set()
    spec = program_spec(program)
    if spec is not None:
        found |= {"-" + c for c in spec.short + spec.short_arg + spec.short_opt} | {"--" + n for n in spec.long}
    return sorted(found)


@functools.cache
def _forms() -> list[tuple[dict[str, str], str]]:
    """(files to plant, command) for every installed program and option (made once per run)."""
    out: list[tuple[dict[str, str], str]] = []
    for program in PROGRAMS:
        if program in _SKIP or shutil.which(program) is None:
            continue
        for option in _options(program):
            attached = f"{option}=MK" if option.startswith("--") else f"{option}MK"
            out += [({}, f"{program} {option} MK in"), ({}, f"{program} {attached} in"), ({}, f"{program} in {option} MK")]
            out += [({attached: ""}, f"{program} *"), ({option: "", "MK0": ""}, f"{program} in *")]
    return out


def test_the_generator_reaches_read_only_forms_and_judges_known_writers_not_read_only() -> None:
    forms = [command for _, command in _forms()]
    read_only = {command for command in forms if analyze(command).read_only}
    # The generator must reach both sides (a check that can fail): options that write are among
    # the forms and are not read-only; plain options are.
    for writer in ("sort --output MK in", "sort -o MK in", "uniq in -o MK", "tree -o MK in"):
        assert writer not in read_only or shutil.which(writer.split()[0]) is None, writer
    if shutil.which("sort"):
        assert "sort --output MK in" in forms
        assert "sort -r MK in" in read_only
    assert len(read_only) > 1000, len(read_only)
    assert not [w for w in WRITERS if analyze(w).read_only]


async def test_read_only_option_forms_leave_no_file_in_bwrap(tmp_path: Path) -> None:
    require_bwrap()
    judged = [(files, command) for files, command in _forms() if analyze(command).read_only]
    controls = [({}, w) for w in WRITERS if shutil.which(w.split()[0])]
    sample = judged[::STRIDE] + controls
    assert len(sample) > 200, len(sample)
    ws = tmp_path / "ws"
    lines = []
    for n, (files, command) in enumerate(sample):
        run = ws / str(n)
        run.mkdir(parents=True)
        (run / "in").write_text("b\na\n")
        for name, text in files.items():
            (run / name).write_text(text)
        # Each form in its own directory, run by this bash (the glob is its); `timeout` for the few
        # programs that follow a file (`tail -f`), not for builtins (`timeout echo` is /bin/echo).
        wait = "" if command.split()[0] in _BUILTINS else "timeout 1 "
        lines.append(f"cd {n} && {{ {wait}{command} ; }} </dev/null >/dev/null 2>&1; cd ..")
    before = {n: {p.name for p in (ws / str(n)).iterdir()} for n in range(len(sample))}
    (ws / "run.sh").write_text("\n".join(lines) + "\n")
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()],
                               mode="bypassPermissions") as rt:
        [env] = await rt.run_envelopes([ToolUseBlock(id="gen", name="Bash",
                                                     input={"command": "bash run.sh; echo ran-all"})])
    assert "ran-all" in str(env.model.content), env.model.content
    changed = [command for n, (_, command) in enumerate(sample) if {p.name for p in (ws / str(n)).iterdir()} != before[n]]
    # Every control wrote its file: the harness sees a write where one happens.
    assert {c for c in changed if not analyze(c).read_only} == {w for _, w in controls}, changed
    misses = [c for c in changed if analyze(c).read_only]
    assert not misses, misses


