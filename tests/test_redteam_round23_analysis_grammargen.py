"""Red team, round 23 (classifier): a differential generator over bash's grammar corners, run in bubblewrap.

A generator, not a list: a payload that writes a marker (``$(touch P)``, backticks, ``$(>P)``,
process substitutions) is placed in every grammar corner where bash may or may not run it
(here-documents with each delimiter quoting, here-strings, ``$'..'``/``$".."``, parameter and
arithmetic expansions, array subscripts that ``printf %d``, ``test -eq``, ``[[ -v ]]`` evaluate,
``declare``/``read``/``printf -v`` names, aliases, traps, ``exec`` redirections, ``BASH_ENV``,
``PROMPT_COMMAND``, ``enable -f``, ``command``/``builtin`` prefixes, coprocs, functions shadowing
a read-only name), then wrapped by a seeded choice of compound forms (groups, subshells, lists,
pipelines, ``if``/``for``/``case`` bodies, functions, wrappers). Whatever ``analyze()`` judges
read-only runs in one Bash tool call inside bubblewrap, each form in its own directory, the way
the tool runs a command (``eval`` in ``bash -c``); a form that leaves any file was judged wrongly.
The same for the forms allow rules for every named program but the payload's ``touch`` let
through (every split part matched). None did in round 23 (1,380 forms, 502 read-only and 70 more
allowed by the rules, all run once by hand); the test runs a stride of them, with positive controls
that must write, so the harness can see a miss.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pytest

import shellrt
from shellrt.analysis import analyze
from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

#: Payloads: each writes the marker ``P`` in the form's directory if bash runs it.
PAYLOADS = ["$(touch P)", "`touch P`", "$(>P)", "<(touch P)", ">(touch P)"]
#: Grammar corners; ``{p}`` is the payload (``{{``/``}}`` are literal braces).
TEMPLATES = [
    # here-documents: every delimiter quoting, <<-, two on a line, escapes in the body, odd ends
    "cat <<E\n{p}\nE", "cat <<'E'\n{p}\nE", "cat <<\"E\"\n{p}\nE", "cat <<\\E\n{p}\nE", "cat <<E''\n{p}\nE",
    "cat <<$'E'\n{p}\nE", "cat <<$\"E\"\n{p}\nE", "cat <<-E\n\t{p}\n\tE", "cat <<-'E'\n\t{p}\n\tE",
    "cat <<E\n\\{p}\nE", "cat <<E\n\\\\{p}\nE", "cat <<'E'\nE \n{p}\nE", "cat <<E\n E\n{p}\nE",
    "cat <<'A' <<B\nA\n{p}\nB", "cat <<A <<'B'\n{p}\nA\nB", "cat <<'E' | cat\n{p}\nE", "cat <<'E'; echo x\n{p}\nE",
    "cat <<'E\\'\n{p}\nE\\", "cat <<'E'\n{p}\\\nE\nE", "cat <<E\n{p}\\\nE\nE", "cat <<'E E'\n{p}\nE E",
    "echo \"$(cat <<'E'\n{p}\nE\n)\"", "echo $(cat <<'E'\n)\nE\n{p})", "cat <<'E'\n$(\nE\n{p}\n)",
    # here-strings and quoting
    "cat <<< {p}", "cat <<< '{p}'", "cat <<< \"{p}\"", "cat <<< $'{p}'", "cat <<<'{p}'x",
    "echo '{p}'", "echo \"{p}\"", "echo $'{p}'", "echo $\"{p}\"", "echo \\{p}", "echo \"\\{p}\"", "echo '\\'{p}",
    "echo $'\\''{p}'", "echo $'\\'' '{p}'", "echo \"'\"{p}\"'\"",
    # parameter expansions and arithmetic, array subscripts bash evaluates
    "echo ${{x:-'{p}'}}", "echo \"${{x:-'{p}'}}\"", "echo ${{x:-\\{p}}}", "echo \"${{x/a/'{p}'}}\"", "echo ${{x#'{p}'}}",
    "echo $(( '{p}' ))", "echo $['{p}']", "echo $[a['{p}']]", "[[ 'a[{p}]' -eq 1 ]]", "[[ a['{p}'] -eq 1 ]]",
    "printf %d 'a[{p}]'", "printf %i 'a[{p}]'", "printf '%(%s)T' 'a[{p}]'", "test 'a[{p}]' -eq 1", "[ 'a[{p}]' -eq 1 ]",
    "[ 'a[{p}]' -lt 1 ]", "[[ -v 'a[{p}]' ]]", "test -v 'a[{p}]'", "[ -v 'a[{p}]' ]", "[[ -R 'a[{p}]' ]]",
    "printf -v 'a[{p}]' x", "printf -- -v 'a[{p}]' x", "echo ${{a['{p}']}}", "echo \"${{a['{p}']}}\"",
    "echo ${{!a['{p}']}}", "echo ${{#a['{p}']}}", "echo ${{x:'{p}'}}", "echo ${{x:0:'{p}'}}",
    # comments and line continuations
    "ls #{p}", "ls \\\n#{p}", "echo x\\\n{p}", "echo x #\\\n{p}", "echo x#{p}",
    # compound commands, tests, prefixes, wrappers, shells
    "case x in '{p}') ;; esac", "case '{p}' in x) ;; esac", "case x in x) echo '{p}';; esac",
    "[[ x == '{p}' ]]", "[[ x =~ '{p}' ]]", "[[ x == \"{p}\" ]]", "[[ '{p}' ]]", "[ '{p}' ]", "test '{p}'",
    "command echo '{p}'", "builtin echo '{p}'", "command -v 'a{p}'", "type '{p}'", "help '{p}'", "command -V '{p}'",
    "cat <'{p}'", "cat < \"{p}\"", "ls >/dev/null '{p}'", "echo x >&2 '{p}'",
    "eval 'echo {p}'", "bash -c 'echo \"{p}\"'", "sh -c 'echo \"{p}\"'", "bash -c \"echo '{p}'\"", "env echo '{p}'",
    "timeout 5 echo \"{p}\"", "nice echo '{p}'", "time echo '{p}'", "env -- echo '{p}'",
    "printf '{p}'", "printf '%s' '{p}'", "printf '%b' '{p}'", "printf '%q' '{p}'", "printf \"%s\" \"'{p}'\"",
    "grep -e '{p}' /dev/null", "sed -n '/{p}/p' /dev/null", "jq -n '\"{p}\"'", "find . -name '{p}'",
    "git log --grep='{p}'", "git log --format='{p}' -1", "ls -- '{p}'", "wc -l '{p}'",
    # names bash binds: functions, declarations, read/mapfile/getopts/wait -p, aliases, traps, exec, enable
    "echo(){{ echo '{p}'; }}", "f(){{ :; }}; echo '{p}'", "coproc echo '{p}'", "declare 'a[{p}]'", "local 'a[{p}]'",
    "read 'a[{p}]' <<< x", "unset 'a[{p}]'", "let 'a[{p}]'", "export 'a[{p}]'", "alias ls='{p}'", "trap '{p}' EXIT",
    "exec 3<'{p}'", "enable -f '{p}' x", "shopt -s expand_aliases; echo '{p}'", "PROMPT_COMMAND='{p}' ls",
    "BASH_ENV='{p}' ls", "mapfile 'a[{p}]' </dev/null", "getopts a 'a[{p}]'", "wait -p 'a[{p}]'",
    "cd '{p}'", "pushd '{p}'", "dirs '{p}'", "history '{p}'", "echo ~'{p}'", "echo {{a,'{p}'}}",
]
#: Compound forms a generated command is put in (``{c}``), chosen by a seeded generator.
WRAPPERS = ["{{ {c}\n}}", "( {c}\n)", "! {c}", "true && {c}", "false || {c}", "{c}\n:", ": | {c}", "command {c}",
            "builtin {c}", "time {c}", "if true; then {c}\nfi", "for x in 1; do {c}\ndone",
            "case y in y) {c}\n;; esac", "x(){{ {c}\n}}; x", "timeout 5 {c}", "env {c}"]
#: Positive controls: bash runs the payload. Each must leave the marker, or the harness could not see a miss.
CONTROLS = ["echo $(touch P)", "cat <<E\n$(touch P)\nE", "printf -v 'a[$(touch P)]' x",
            "[[ a[$(touch P)] -eq 1 ]]", "x='a[$(touch P)]'; [[ $x -eq 1 ]]", "cat <<< `touch P`"]
#: Allow rules for every program a template names except the payload's ``touch``: a form these rules
#: allow (every split part matched) must run nothing else either.
RULES = ["Bash(echo:*)", "Bash(cat:*)", "Bash(printf:*)", "Bash(ls:*)", "Bash(test:*)", "Bash([:*)", "Bash(grep:*)",
         "Bash(type:*)", "Bash(help:*)", "Bash(command:*)", "Bash(wc:*)", "Bash(true:*)", "Bash(:)", "Bash(jq:*)",
         "Bash(find:*)", "Bash(git log:*)", "Bash(dirs:*)", "Bash(cd:*)", "Bash(history:*)", "Bash(declare:*)",
         "Bash(read:*)", "Bash(let:*)", "Bash(export:*)", "Bash(local:*)", "Bash(unset:*)", "Bash(mapfile:*)",
         "Bash(getopts:*)", "Bash(wait:*)", "Bash(pushd:*)", "Bash(builtin:*)", "Bash(time:*)", "Bash(nice:*)",
         "Bash(env:*)", "Bash(timeout:*)", "Bash(sed:*)", "Bash(bash:*)", "Bash(sh:*)"]
SEED = 23
#: Run every STRIDE-th read-only form (all forms are judged); the full run is STRIDE = 1 (~15 s).
STRIDE = 5


@functools.cache
def forms() -> list[str]:
    """Every template with every payload, then as many seeded compound wrappings of them."""
    plain = sorted({t.format(p=p) for t in TEMPLATES for p in PAYLOADS})
    rng = random.Random(SEED)
    wrapped = [rng.choice(WRAPPERS).format(c=rng.choice(plain)) for _ in plain]
    return plain + wrapped


def test_the_generator_reaches_both_verdicts() -> None:
    judged = forms()
    read_only = [f for f in judged if analyze(f).read_only]
    # Both sides are reached (a generator judged all-refused would test nothing) ...
    assert len(read_only) > 300 and len(judged) - len(read_only) > 300, (len(judged), len(read_only))
    assert "echo '$(touch P)'" in read_only and "cat <<'E'\n$(touch P)\nE" in read_only
    # ... and every control, which bash runs, is refused.
    assert not [c for c in CONTROLS if analyze(c).read_only]


async def _rule_allowed(tmp_path: Path, commands: list[str]) -> list[str]:
    """The commands the permission engine allows in default mode under RULES (not read-only ones)."""
    ws = tmp_path / "rules"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"allow": RULES}}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode="default",
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "rs", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    tool = Bash()
    return [c for c in commands
            if (await gov.engine.decide(tool, tool.parse_input({"command": c}), ctx)).behavior == "allow"]


async def test_read_only_or_rule_allowed_grammar_forms_run_nothing_in_bwrap(tmp_path: Path) -> None:
    require_bwrap()
    read_only = [f for f in forms() if analyze(f).read_only]
    by_rule = await _rule_allowed(tmp_path, [f for f in forms()[::STRIDE] if not analyze(f).read_only] + CONTROLS)
    assert by_rule and not [c for c in CONTROLS if c in by_rule], by_rule  # reached, and `touch` is never allowed
    sample = read_only[::STRIDE] + by_rule + CONTROLS
    assert len(sample) > 100, len(sample)
    ws = tmp_path / "ws"
    (ws / "c").mkdir(parents=True)
    lines = []
    for n, form in enumerate(sample):
        (ws / str(n)).mkdir()
        (ws / "c" / str(n)).write_text(form)
        # As the Bash tool runs a command: its text is `eval`ed by `bash -c` (in the form's directory).
        lines.append(f"timeout 5 bash -c 'cd {n} && eval \"$(cat ../c/{n})\"' </dev/null >/dev/null 2>&1")
    (ws / "run.sh").write_text("\n".join(lines) + "\n")
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()],
                               mode="bypassPermissions") as rt:
        [env] = await rt.run_envelopes([ToolUseBlock(id="gram", name="Bash",
                                                     input={"command": "bash run.sh; echo ran-all"})])
    assert "ran-all" in str(env.model.content), env.model.content
    wrote = [form for n, form in enumerate(sample) if any((ws / str(n)).iterdir())]
    assert [f for f in wrote if f in CONTROLS] == CONTROLS, wrote  # the harness sees a write
    misses = [f for f in wrote if f not in CONTROLS]
    assert not misses, misses
