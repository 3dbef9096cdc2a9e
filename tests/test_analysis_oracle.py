"""Execution oracle: a command that changes the file system is never classified read-only.

A generator puts marker payloads (``touch m``, ``: >m``, ...) in every position
bash runs code from: command and process substitutions, here-document bodies in
every form, redirection targets, assignments, arithmetic, parameter expansions,
tests, wrappers, lists and compounds. Each command runs under real bash in a
throwaway directory (inside bubblewrap with a read-only root when it is
installed, else in a temp dir with a fresh HOME; every payload only names
relative paths). A command that changed its directory AND is read-only to
``analyze()`` fails the test.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._fuzz import share

PAYLOADS = ["touch m", ": >m", "mkdir m", "cp f m"]

#: ``{P}`` is replaced by a payload (a command that creates ``m``).
TEMPLATES = [
    # command and process substitutions, quoted and not
    "echo $({P})", 'echo "$({P})"', "echo `{P}`", 'echo "`{P}`"', "ls $({P})", "cat <({P})", "echo >({P})",
    "diff <({P}) f", "echo $(echo $({P}))", "echo $(echo `{P}`)", "cat <<< $({P})", 'cat <<< "`{P}`"',
    # here-documents: every delimiter form, indented lines, nested expansions
    "cat <<EOF\n$({P})\nEOF", "cat <<EOF\n`{P}`\nEOF", "cat <<EOF\n  $({P})\nEOF", "cat <<EOF\n\t`{P}`\nEOF",
    "cat <<-EOF\n\t$({P})\n\tEOF", "cat <<-EOF\n\t`{P}`\n\tEOF", "cat <<-EOF\n  `{P}`\nEOF",
    "cat <<'EOF'\n$({P})\nEOF", 'cat <<"EOF"\n`{P}`\nEOF', "cat <<\\EOF\n$({P})\nEOF", "cat <<E'O'F\n`{P}`\nEOF",
    "cat <<EOF\nx ${{y:-$({P})}} z\nEOF", "cat <<EOF\n$(( $({P}) ))\nEOF", "cat <<EOF\n${{a[$({P})]}}\nEOF",
    "cat <<EOF\n$[ `{P}` ]\nEOF", "cat <<EOF | cat\n`{P}`\nEOF", "cat <<EOF\n$(echo `{P}`)\nEOF",
    "cat <<EOF\nx\nEOF\n{P}", "cat <<EOF\nx\nEOF \n`{P}`\nEOF", "cat <<EOF\n\\`{P}\\`\nEOF",
    "cat <<EOF\n$(echo ')'; {P})\nEOF", "cat <<EOF && ls\n`{P}`\nEOF", "cat <<EOF; ls\n`{P}`\nEOF",
    "while read l; do echo $l; done <<EOF\n$({P})\nEOF", "cat <<EOF\nEO\\\nF\n$({P})\nEOF",
    "cat <<EOF\nEO\\\nF\n{P}", "cat <<EOF\n$\\\n({P})\nEOF", "cat <<EOF\n`{P}\\\n`\nEOF",
    "echo $(cat <<EOF\n`{P}`\nEOF\n)", "cat <<EOF\n$(cat <<X\n`{P}`\nX\n)\nEOF",
    # parameter expansions and arithmetic contexts
    "echo ${{x:-$({P})}}", 'echo "${{x:=$({P})}}"', "echo ${{x/$({P})/}}", "echo ${{a[$({P})]}}",
    "echo $(( $({P}) ))", "(( $({P}) ))", "echo $(( a[$({P})] ))", "[[ a[$({P})] -eq 1 ]]",
    "[[ -v a[$({P})] ]]", "x='a[$({P})]'; echo $((x))", "echo $[ $({P}) ]", "let 'x=a[$({P})]'",
    # redirection targets
    "ls > $({P})", "cat < $({P})", "ls 2> $({P})", "ls > m", "ls >| m", "ls &> m", "ls <> m", "ls >> m",
    "ls 2>m", "cat f 1<>m",
    # assignments and declarations
    "x=$({P})", "x=$({P}) ls", "a[$({P})]=1", "declare x=$({P})", "export x=`{P}`", "readonly x=$({P})",
    # tests
    "[[ $({P}) ]]", '[ -n "$({P})" ]', "test -n `{P}`",
    # lists, pipelines, compounds
    "ls; {P}", "ls && {P}", "false || {P}", "ls | {P}", "ls\n{P}", "ls & {P}", "{{ {P}; }}", "( {P} )",
    "if true; then {P}; fi", "case x in x) {P};; esac", "for i in 1; do {P}; done", "! {P}",
    "f() {{ {P}; }}; f", "ls ;; {P}",
    "[[ -v 'a[$({P})]' ]]", "(( 'a[$({P})]' ))", "echo $(( 'a[`{P}`]' ))", "ls && [ -v 'a[$({P})]' ]",
    "unset 'a[$({P})]'", "printf -v 'a[$({P})]' x", "[[ 'a[$({P})]' -eq 1 ]]",
    # wrappers and shells
    "bash -c '{P}'", "sh -c '{P}'", "bash -lc '{P}'", "bash -c 'ls; {P}'", "timeout 5 {P}", "env {P}",
    "command {P}", "nice {P}", "time {P}", "stdbuf -oL {P}", "nohup {P}", "env -i {P}",
    "bash -c 'cat <<EOF\n`{P}`\nEOF'", "eval '{P}'", "xargs {P} < /dev/null", "echo x | xargs -I{{}} {P}",
    "find . -maxdepth 0 -exec {P} \\;",
    # command-name spellings
    "\\{P}", "'{PN}' {PA}", "\"{PN}\" {PA}", "$'{PN}' {PA}", "/usr/bin/env {P}",
]
#: Commands that write without a payload (options and operands of "read-only" programs).
WRITERS = [
    "sort -o m f", "sort -T . -S 1 f", "sed -n 'w m' f", "sed 's/x/y/w m' f", "find . -fprint m",
    "tee m < f", "uniq f m", "xxd f m", "git describe --dirty", "tree -o m", "cp f m", "dd if=f of=m",
    "fd -x touch m", "date > m", "cal > m", "fmt f > m", "numfmt 1 > m", "expr 1 > m",
    "bash -c 'ls > m'", "timeout 5 sh -c 'ls >m'",
    "> m", "ls; > m", "{ > m; }", "ls && >>m", "true <> m",
]


_DELIMITERS = {"EOF": "EOF", "'EOF'": "EOF", '"EOF"': "EOF", "\\EOF": "EOF", "E'O'F": "EOF", "EO\\F": "EOF",
               '"E"OF': "EOF", "-": "-", "'E O'": "E O", "END": "END", "$X": "$X", "EOF\\": "EOF", "''": ""}
_BODY_PIECES = ["`touch m`", "$(touch m)", "${x:-$(touch m)}", "$((`touch m`))", "\\`touch m\\`", "\\$(touch m)",
                "$\\\n(touch m)", "`touch m\\\n`", "$'x'", "$x", "${x}", "plain", "\\\\", "\\", "'", '"',
                "$(echo ')')$(touch m)", '$(echo "$(touch m)")', "${a[`touch m`]}", "\t$(touch m)", "  `touch m`"]


def _heredocs(count: int) -> list[str]:
    """Random here-documents: delimiter spellings, operators, body pieces, end lines bash may not accept."""
    rng = random.Random(5)
    out: list[str] = []
    for _ in range(count):
        delimiter = rng.choice(list(_DELIMITERS))
        end = _DELIMITERS[delimiter]
        lines = [rng.choice(_BODY_PIECES) + rng.choice(["", " ", rng.choice(_BODY_PIECES)])
                 for _ in range(rng.randint(0, 3))]
        body = "".join(line + "\n" for line in lines)
        end_line = rng.choice([end, end, end, "\t" + end, end + " ", " " + end])
        head = rng.choice(["cat ", "{ cat; } ", "while read l; do :; done ", "cat | cat ", "echo x "])
        head += rng.choice(["<<", "<<-", "<< ", "<<- "]) + delimiter + rng.choice(["", " | cat", " && ls", "; ls"])
        out.append(head + "\n" + body + end_line + rng.choice(["", "", "\ntouch m2", "\nls"]))
    return out


def _commands() -> list[str]:
    out: list[str] = []
    for template in TEMPLATES:
        for payload in PAYLOADS:
            name, _, args = payload.partition(" ")
            if "{PN}" in template and not args:
                continue
            out.append(template.format(P=payload, PN=name, PA=args))
    # Two levels deep: a payload-bearing template inside another template's payload slot.
    rng = random.Random(17)
    singles = [t for t in TEMPLATES if "{PN}" not in t and "'" not in t and "\\" not in t]
    for _ in range(150):
        outer, inner = rng.choice(singles), rng.choice(singles)
        payload = inner.format(P=rng.choice(PAYLOADS))
        if "\n" in payload and "\n" in outer:
            continue
        out.append(outer.format(P=payload))
    out.extend(_heredocs(250))
    out.extend(WRITERS)
    return list(dict.fromkeys(out))


COMMANDS = _commands()


def _bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "true"], capture_output=True, check=False)
    return probe.returncode == 0


def _run(command: str, base: Path, index: int, use_bwrap: bool) -> bool:
    """Run ``command`` in a fresh directory; True when it changed anything in it."""
    work = base / f"w{index}"
    work.mkdir()
    (work / "f").write_text("x\n")
    before = sorted(os.listdir(work))
    argv = ["timeout", "-k", "1", "3", "bash", "-c", command]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work), "LC_ALL": "C"}
    if use_bwrap:
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--bind", str(work), str(work), "--chdir", str(work), "--unshare-all", "--die-with-parent",
                "--setenv", "HOME", str(work), *argv]
    subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    after = sorted(os.listdir(work))
    return after != before or (work / "f").read_text() != "x\n"


def test_no_command_that_writes_is_read_only() -> None:
    use_bwrap = _bwrap_works()
    commands = share(COMMANDS)  # each one a bash run under bwrap (tests/_fuzz.py)
    base = Path(tempfile.mkdtemp(prefix="shellrt-oracle-"))
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            changed = list(pool.map(lambda item: _run(item[1], base, item[0], use_bwrap), enumerate(commands)))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    wrong = [c for c, did in zip(commands, changed, strict=True) if did and analyze(c).read_only]
    assert not wrong, f"{len(wrong)} commands wrote a marker and were classified read-only: {wrong[:10]!r}"
    # And permission rules see what ran: a part for the payload, its write, a part with no static
    # name (which no allow rule matches), or a failed parse.
    unseen = [c for c, did in zip(commands, changed, strict=True) if did and c not in WRITERS and not _seen(c)]
    assert not unseen, f"{len(unseen)} commands ran a payload no part shows: {unseen[:10]!r}"
    # The oracle itself works: most shapes really run their payload under bash.
    assert sum(changed) > len(commands) // 2, sum(changed)


def _seen(command: str) -> bool:
    result = analyze(command)
    return not result.parse_ok or any(
        part.name in ("touch", "mkdir", "cp", ":", "") or part.writes for part in result.subcommands)


@pytest.mark.parametrize("command", ["ls", "cat f", "cat <<'EOF'\n$(touch m)\nEOF", "bash -c 'ls'"])
def test_oracle_sees_no_change_for_read_only_commands(command: str, tmp_path: Path) -> None:
    """The harness does not report changes for commands that only read."""
    assert analyze(command).read_only
    assert not _run(command, tmp_path, 0, _bwrap_works())
