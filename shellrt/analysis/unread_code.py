"""Code a program runs that no command rule can read: interpreters fed their program on standard
input or inline, and files the same command wrote before running them.

A ``Bash(rm:*)`` deny rule reads the words of a command. ``python3 - <<EOF … EOF``, ``perl < s.pl``,
``node -e '…'``, ``awk '{system($0)}'``, ``sqlite3 db <<< '.shell rm x'`` or ``printf … > s.py;
python3 s.py`` run code whose commands the words do not show (stdin, a file made by the command, or
a general-purpose language that can build a program name at run time: ``os.system(chr(114)+'m x')``).
Shells are read by `permissions.embedded.unknown_code`; this covers everything else, so that a part
it names is never allowed past a deny or ask command rule (red team, round 29). Fail closed: an
option this does not know may hide a stdin script; scripts that exist before the call are files of
the workspace, read as such (round 5's open item), not code a rule checks.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from shellrt.analysis.awk_code import awk_runs
from shellrt.analysis.config_vars import config_variable_code, is_config_variable
from shellrt.analysis.foreign_code import foreign_code
from shellrt.analysis.kernel_paths import names_stdin
from shellrt.analysis.loaded_code import loaded_files
from shellrt.analysis.programs.sed import SED_SPEC, script_runs
from shellrt.analysis.programs.spec import parse_args
from shellrt.analysis.programs.wrappers import WRAPPERS, unwrap
from shellrt.analysis.runner_names import OPTIONS_VARIABLE, RUNS_NAME
from shellrt.analysis.value_programs import (
    git_code_write,
    git_config_paths,
    git_hook_paths,
    option_program_paths,
)
from shellrt.analysis.written_places import (
    config_write,
    dynamic_place,
    first_named_write,
    found_code_write,
    glued_programs,
    has_finder,
    may_run_git,
    on_path_write,
    unknown_program_write,
    unnamed_write,
    unpacks_unknown,
)

__all__ = ["command_settings", "is_command_variable", "made_here", "made_hook", "modelled", "script_files", "unread_code", "unread_env", "value_code"]

#: Program names that mean standard input or another descriptor the command opened (``3<<'EOF'``,
#: ``<(…)``): code made by the command itself, which no rule reads.
#: (Any spelling: ``//dev/stdin``, ``/proc/self/root/dev/stdin``: `kernel_paths.names_stdin`, round 51.)

#: Per interpreter: (short options whose letter makes the program inline, long ones, short options
#: that take a value, long ones that take a value). Names are folded (``python3.12`` -> ``python``).
_LANGS: dict[str, tuple[str, frozenset[str], str, frozenset[str]]] = {
    "python": ("c", frozenset(), "WXQ", frozenset({"--check-hash-based-pycs"})),
    "pypy": ("c", frozenset(), "WXQ", frozenset()),
    "perl": ("eE", frozenset(), "IMm", frozenset()),
    "ruby": ("e", frozenset(), "IrCEF", frozenset({"--encoding", "--external-encoding", "--internal-encoding"})),
    "node": ("ep", frozenset({"--eval", "--print"}), "r", frozenset({"--require", "--import", "--loader",
                                                                      "--input-type", "--conditions"})),
    "bun": ("ep", frozenset({"--eval", "--print"}), "r", frozenset({"--preload", "--cwd"})),
    "php": ("rBRFE", frozenset({"--run"}), "cdz", frozenset({"--define"})),
    "lua": ("e", frozenset(), "l", frozenset()),
    "luajit": ("e", frozenset(), "lj", frozenset()),
    "julia": ("eEL", frozenset({"--eval", "--print", "--load"}), "JCtp", frozenset({"--project", "--threads"})),
    "rscript": ("e", frozenset(), "", frozenset()),
    "r": ("e", frozenset(), "", frozenset()),
    "osascript": ("e", frozenset(), "l", frozenset()),
    "xonsh": ("c", frozenset(), "", frozenset({"--rc"})),
    "groovy": ("e", frozenset(), "", frozenset()),
    "expect": ("c", frozenset(), "f", frozenset()),
    "tclsh": ("", frozenset(), "", frozenset()),
    "wish": ("", frozenset(), "", frozenset()),
    "irb": ("", frozenset(), "", frozenset()),
    "jshell": ("", frozenset(), "", frozenset()),
}
#: Options that read more code from standard input after the script (``python3 -i s.py < cmds``,
#: ``perl -d``'s debugger commands, ``php -a``).
_INTERACTIVE = {"python": "i", "pypy": "i", "node": "i", "lua": "i", "luajit": "i", "php": "a", "julia": "i",
                "perl": "d"}
_AWK = frozenset({"awk", "gawk", "mawk", "nawk"})
#: Editors that read their commands (``!cmd`` runs a shell) from standard input.
_EDITORS = frozenset({"ed", "red", "ex"})
_VIMS = frozenset({"vim", "vi", "nvim", "view"})
_SSH_VALUED = "bcDEeFIiJLlmOoPpQRSWw"
_SHELL_NAMES = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "rc", "es",
                          "nu", "elvish", "osh", "ysh", "oksh", "loksh", "posh"})
#: Programs whose file operands may be code they run (``sh s``, ``. ./s``, ``awk -f p``, ``make -f m``).
CODE_READERS = frozenset(
    {*_LANGS, *_AWK, *_EDITORS, *_VIMS, *_SHELL_NAMES, "source", ".", "sed", "make", "gmake", "sqlite", "gdb", "busybox", "pwsh",
     "java", "toybox"}
)


#: Wrappers that start the user's shell (which runs what standard input holds) when one of their
#: options asks for it and no command follows (``sudo -s <<<'rm x'``): (the shell's short option
#: letters and long options; the letters that take a value, ending a cluster, are the wrapper
#: table's; red team, round 31).
_SHELL_MODES: dict[str, tuple[str, tuple[str, ...]]] = {"sudo": ("si", ("--shell", "--login")), "doas": ("s", ())}


def modelled(name: str) -> bool:
    """Whether this module's tables read ``name`` (the rest is `foreign_code`'s)."""
    return _lang(name) in CODE_READERS or _lang(name) == "ssh"


_SAME = {"nodejs": "node", "pypy3": "pypy", "perl5": "perl", "tclsh8": "tclsh"}


def _lang(name: str) -> str:
    """``python3.12`` -> ``python``, ``perl5.36`` -> ``perl``, ``lua5.4`` -> ``lua``, ``nodejs`` -> ``node``."""
    base = re.sub(r"[.-]static$", "", os.path.basename(name).lower())  # bash-static, busybox.static
    base = _SAME.get(base, base)
    if base in _LANGS:
        return base
    bare = re.sub(r"(?<=[a-z])[0-9.]+$", "", base)
    return _SAME.get(bare, bare)


def unread_code(name: str, argv: Sequence[str]) -> str:
    """Why the part ``argv`` (program ``name``) runs code no command rule can read ("" when it does
    not, or when its code is a script file that exists before the call)."""
    words = list(argv[1:])
    lang = _lang(name)
    if lang in ("busybox", "toybox") and words:
        return unread_code(words[0], words)
    if lang in _LANGS:
        return _interpreter(lang, name, words)[0]
    if lang in _SHELL_MODES:
        return _shell_mode(lang, argv)
    if lang == "enable":
        return _enable(words)
    if lang in _SHELL_NAMES:
        inline, script = _shell(words)
        return "" if inline or script else f"{name} reads its program from standard input"
    if lang in _AWK:
        return _awk(name, words)
    vim_stdin = _value_is_stdin(words, "S", ()) or _value_is_stdin(words, "u", ())
    if lang in _EDITORS or (lang in _VIMS and (vim_stdin or any(w[:1] == "-" and set(w[1:]) & {"e", "E", "s"} for w in words))):
        return f"{name} reads editor commands (where ! runs a shell) from standard input"
    if lang == "sed":
        return _sed(words)
    if lang in ("make", "gmake") and _value_is_stdin(words, "f", ("--file", "--makefile")):
        return f"{name} -f - reads recipes (commands) from standard input"
    if lang in ("sqlite3", "sqlite") and not [w for w in words if not w.startswith("-")][1:]:
        return f"{name} reads its commands (.shell and .system run programs) from standard input"
    batch = "-batch" in words or "--batch" in words
    if lang == "gdb" and (not batch or _value_is_stdin(words, "x", ("--command",))):
        return "gdb reads its commands (shell runs programs) from standard input"
    if lang == "ssh" and _ssh_reads_stdin(words):
        return "ssh without a command runs commands read from standard input"
    if lang == "ssh" and (remote := _ssh_remote_code(words)):
        return f"ssh hands {remote!r} to the remote user's shell, which parses it again (a command no part shows)"
    return ""


#: bash 5.2's builtins (``enable -a``): ``enable NAME`` of any other name loads a shared object.
_BASH_BUILTINS = frozenset({
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen", "complete",
    "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit", "export",
    "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let", "local", "logout",
    "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift",
    "shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset", "ulimit", "umask",
    "unalias", "unset", "wait",
})


def _enable(words: Sequence[str]) -> str:
    """Why ``enable`` loads a shared object ("" when it only turns builtins on or off, or lists them).

    ``-f FILE`` loads FILE; and bash 5.2 loads a NAME that is not a builtin from ``BASH_LOADABLES_PATH``
    without ``-f`` (whatever the other options: ``-n``, ``-a``, ``-s``), a path whose default ends in
    ``.``: ``enable x`` runs the repository's ``x`` (red team, round 35). A word that is not static
    (``$n``, ``x*``) keeps its source text here, which is no builtin's name: fails closed.
    """
    options = True
    for word in words:
        if options and word == "--":
            options = False
        elif options and word[:1] == "-" and len(word) > 1:
            if "f" in word[1:]:
                return "enable -f loads a shared object into the shell: its code runs there"
        else:
            options = False  # bash's getopt stops at the first operand
            if word not in _BASH_BUILTINS:
                return (f"enable {word}: a name that is not a bash builtin is loaded as a shared object "
                        "(BASH_LOADABLES_PATH holds `.`): its code runs in the shell")
    return ""


def _shell_mode(lang: str, argv: Sequence[str]) -> str:
    """Why ``sudo -s``/``doas -s`` with no command runs code from standard input ("" otherwise)."""
    found = unwrap([lang, *argv[1:]])
    if found.start is not None or found.script is not None:
        return ""  # the command it runs is a part of its own, judged as such
    letters, longs = _SHELL_MODES[lang]
    valued = {option[1] for option in WRAPPERS[lang].value_opts if len(option) == 2}
    for word in argv[1:]:
        if word == "--":
            break
        if word.startswith("--"):
            name = word.partition("=")[0]
            if len(name) > 2 and any(long.startswith(name) for long in longs):
                return f"{lang} {word} without a command starts a shell that runs what standard input holds"
        elif word.startswith("-"):
            for letter in word[1:]:
                if letter in letters:
                    return f"{lang} -{letter} without a command starts a shell that runs what standard input holds"
                if letter in valued:
                    break
    return ""


#: A shell's options that take the next word (``-o pipefail``, ``+O extglob``, ``--rcfile f``).
_SHELL_VALUED = frozenset({"--rcfile", "--init-file"})


def _shell(words: list[str]) -> tuple[bool, str]:
    """(the program is inline, ``-c``; its script file, "" for standard input) of a shell's words.

    Why: ``bash -o pipefail`` reads its program from standard input, but ``pipefail`` looked like a
    script to the earlier check (round 29)."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("--", "-"):
            i += 1
            break
        if word.startswith("--"):
            i += 2 if word in _SHELL_VALUED else 1
            continue
        if word[:1] not in ("-", "+") or len(word) < 2:
            break
        letters = word[1:]
        if "c" in letters and word[0] == "-":
            return True, ""
        if "s" in letters and word[0] == "-":
            return False, ""
        i += 1 + letters.count("o") + letters.count("O")
    script = words[i] if i < len(words) else ""
    return False, "" if names_stdin(script or "-") else script


def _interpreter(lang: str, name: str, words: list[str]) -> tuple[str, str]:
    """(why its code cannot be read or "", the script file it runs or "")."""
    inline, inline_long, valued, valued_long = _LANGS[lang]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return _script(name, words[i + 1 : i + 2])
        if word == "-" or not word.startswith("-"):
            return _script(name, [word])
        option = word.partition("=")[0]
        if word.startswith("--"):
            if option == "--interactive":
                return f"{name} {option} reads code from standard input", ""
            if option in inline_long:
                return f"{name} {option} runs code that can build any command at run time", ""
            taken = word.partition("=")[2] if "=" in word else (words[i + 1] if i + 1 < len(words) else "")
            if option in valued_long and _code_in_value(lang, option, taken):
                return f"{name} {option} runs the code in its value", ""
            i += 2 if option in valued_long and "=" not in word else 1
            continue
        for at, letter in enumerate(word[1:], 1):
            if letter in inline:
                return f"{name} -{letter} runs code that can build any command at run time", ""
            if letter in _INTERACTIVE.get(lang, ""):
                return f"{name} -{letter} reads code from standard input", ""
            if lang == "python" and letter == "m":
                return "", ""  # a module: a file of the workspace or the installation
            if letter in valued:
                value = word[at + 1 :] or (words[i + 1] if i + 1 < len(words) else "")
                if _code_in_value(lang, letter, value):
                    return f"{name} -{letter} runs the code in its value", ""
                i += 1 if word[at + 1 :] else 2
                break
        else:
            i += 1
    return f"{name} reads its program from standard input", ""


#: A module name (``-MList::Util=sum``): anything else in ``perl -M`` is code (``-M'strict;system …'``).
_PERL_MODULE = re.compile(r"-?[\w:]+(?:=[\w:,.-]*)?")


def _code_in_value(lang: str, option: str, value: str) -> bool:
    """A value an interpreter runs as code: perl's ``-M``/``-m`` past a module name, a ``data:`` URL
    node imports or requires."""
    if lang == "perl" and option in ("M", "m"):
        return _PERL_MODULE.fullmatch(value) is None
    return value.lstrip("'\"").startswith("data:")


#: Environment variables that give an interpreter code or options beyond its words (``LUA_INIT``
#: runs Lua, ``PERL5OPT=-M…`` perl, ``NODE_OPTIONS=--import=data:…`` JavaScript, ``PYTHONINSPECT``
#: reads code from stdin after the script, ``PERL5DB`` is the debugger's code, ``JAVA_TOOL_OPTIONS
#: =-javaagent:x.jar`` and ``ERL_AFLAGS=-eval …`` load code into every JVM or BEAM started).
_CODE_VARIABLES = re.compile(
    r"LUA_INIT(?:_\d_\d)?|PERL5OPT|PERL5DB|PERLDB_OPTS|NODE_OPTIONS|PYTHONINSPECT|PYTHONSTARTUP|RUBYOPT|"
    r"JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|JAVA_OPTS|MAVEN_OPTS|GRADLE_OPTS|SBT_OPTS|ANT_OPTS|"
    r"ERL_FLAGS|ERL_AFLAGS|ERL_ZFLAGS"
)
#: Option words that load no code (memory, stack, warnings, properties, boolean JVM flags): a value
#: made only of these gives nothing to run (``NODE_OPTIONS=--max-old-space-size=4096``, round 30).
_NO_CODE_OPTION = re.compile(
    r"--max-old-space-size=\d+|--max-semi-space-size=\d+|--stack-size=\d+|--enable-source-maps|--no-warnings|"
    r"--no-deprecation|--trace-warnings|--trace-deprecation|--unhandled-rejections=[a-z-]+|"
    r"-Xm[sx]\d+[kKmMgG]?|-Xss\d+[kKmMgG]?|-XX:[+-]\w+|-XX:(?:Max|Min|Initial)\w*=\d+[kKmMgG%]?|"
    r"-D[\w.-]+=[\w.:/,@%+-]*|-ea|-da|-server|-w|-W[012]?"
)


def unread_env(variables: dict[str, str | None]) -> str:
    """Why the variables a part sets (value None: not known) give an interpreter code no command
    rule reads ("" when none)."""
    for name, value in variables.items():
        if not _CODE_VARIABLES.fullmatch(name):
            continue
        words = (value or "").split()
        options = name.endswith(("OPT", "OPTS", "OPTIONS", "FLAGS")) and name != "PERLDB_OPTS"
        if value is None or not words or not options or not all(_NO_CODE_OPTION.fullmatch(w) for w in words):
            return f"{name} gives an interpreter code or options no command rule reads"
    return ""


def _script(name: str, operand: list[str]) -> tuple[str, str]:
    if not operand or names_stdin(operand[0]):
        return f"{name} reads its program from standard input or a descriptor", ""
    return "", operand[0]


def _awk(name: str, words: list[str]) -> str:
    i = 0
    program_file = False
    while i < len(words):
        word = words[i]
        option, eq, attached = word.partition("=")
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        value = attached if eq else (word[2:] if not word.startswith("--") and len(word) > 2 else "")
        taken = value or (words[i + 1] if i + 1 < len(words) else "")
        step = 1 if value else 2
        if option in ("-f", "--file", "-E", "--exec", "-i", "--include") or word.startswith(("-f", "-E", "-i")):
            if names_stdin(taken):
                return f"{name} -f - reads its program from standard input"
            program_file = True
        elif option in ("-e", "--source") or word.startswith("-e"):
            if awk_runs(taken):
                return f"{name}'s program runs commands (system, a pipe) known only at run time"
            program_file = True
        elif option in ("-l", "--load") or word.startswith("-l"):
            return f"{name} -l loads an extension that runs code no rule reads"
        elif option in ("-v", "--assign", "-F", "--field-separator") or word.startswith(("-v", "-F")):
            pass
        elif word.startswith("-W"):  # mawk's -W exec FILE (-We, -W ex: any prefix), gawk's -W long-option
            spec, j = (word[2:], i + 1) if len(word) > 2 or i + 1 >= len(words) else (words[i + 1], i + 2)
            why, took = _awk_w(name, spec, words[j] if j < len(words) else "")
            if why:
                return why
            i = j + took
            continue
        else:
            step = 1
        i += step
    if program_file:
        return ""
    program = words[i] if i < len(words) else ""
    if awk_runs(program):
        return f"{name}'s program runs commands (system, a pipe) known only at run time"
    return ""


def _awk_w(name: str, spec: str, following: str) -> tuple[str, int]:
    """Why awk's ``-W`` ``spec`` (``exec``, ``e``, ``source=…``, comma-separated) runs code no rule
    reads, and how many following words it takes. mawk takes any prefix of ``exec`` for a program
    file (``-We /dev/stdin`` ran standard input: red team, round 31); gawk reads ``-W x`` as ``--x``.
    A value is read both as a program file and as a program (a prefix may mean another option), and
    the operand after is still read as the program: fail closed."""
    took = 0
    for token in spec.split(","):
        key, eq, value = token.partition("=")
        key = key.lower()
        if not key or not any(full.startswith(key) for full in _AWK_VALUED):
            continue
        if not eq:
            value, took = following, 1
        if "load".startswith(key):
            return f"{name} -W {key} loads an extension that runs code no rule reads", took
        if names_stdin(value):
            return f"{name} -W {key} reads its program from standard input", took
        if awk_runs(value):
            return f"{name}'s program runs commands (system, a pipe) known only at run time", took
    return "", took


#: awk's long options (``-W`` names, any prefix) that take a program, a file of one, or an extension.
_AWK_VALUED = ("exec", "file", "include", "source", "load")


def _sed(words: list[str]) -> str:
    """sed runs a command only by ``e`` (a command, or a flag of ``s``): the text it runs is the
    pattern space, made from the input at run time."""
    if _value_is_stdin(words, "f", ("--file",)):
        return "sed -f - reads its script (where e runs commands) from standard input"
    parsed = parse_args(SED_SPEC, words)
    scripts = parsed.values("-e", "--expression")
    if not scripts and not parsed.values("-f", "--file"):
        scripts = parsed.positionals[:1]  # with -f the first operand is input, the script a file
    if any("unknown option" in r or "value" in r for r in parsed.reasons):
        scripts = words  # options this model does not know: every word may be a script
    if any("e" in script and script_runs(script) for script in [*scripts, "\n".join(scripts)]):
        return "sed's script may run text of its input as a command (e), known only at run time"
    return ""


def _option_values(words: Sequence[str], short: str, longs: tuple[str, ...]) -> list[str]:
    """The values of an option ``-SHORT``/``--LONG`` (separate, attached, ``=``, a long one abbreviated)."""
    values = []
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        option, eq, value = word.partition("=")
        if option in longs or any(len(option) > 2 and long.startswith(option) for long in longs):
            values.append(value if eq else following)
        elif word[:1] == "-" and word[1:2] != "-" and short in word[1:]:
            values.append(word[word.index(short, 1) + 1 :] or following)
    return values


def _value_is_stdin(words: Sequence[str], short: str, longs: tuple[str, ...]) -> bool:
    """Whether an option ``-SHORT``/``--LONG`` is given standard input."""
    return any(names_stdin(value) for value in _option_values(words, short, longs))


def _ssh_reads_stdin(words: Sequence[str]) -> bool:
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--" or not word.startswith("-"):
            i += 1 if word == "--" else 0
            break
        letters = word[1:]
        if "N" in letters or "W" in letters or "O" in letters:
            return False  # no remote command is run (forwarding, control)
        valued = next((at for at, c in enumerate(letters) if c in _SSH_VALUED), None)
        i += 2 if valued is not None and valued == len(letters) - 1 else 1
    rest = words[i:]
    return len(rest) <= 1  # a host and no command


#: A remote command's words the remote shell reads as themselves (no quoting, expansion or operator).
_PLAIN_REMOTE = re.compile(r"[A-Za-z0-9_./:=@%+,-]*")


def _ssh_remote_code(words: Sequence[str]) -> str:
    """The command line ``ssh`` joins from its words after the host when the remote shell would read it as
    more than those words (``ssh h 'x=r; ${x}m y'``, red team, round 51); "" otherwise. OpenSSH reads
    options again after the host (``ssh h -p 22 cmd``) and joins the rest with spaces."""
    i, host = 0, False
    while i < len(words):
        word = words[i]
        if word == "--":  # the end of the options: the host (if not yet given) and the command follow
            i += 1 if host else 2
            host = True
            break
        if not word.startswith("-") or word == "-":
            if host:
                break
            host, i = True, i + 1
            continue
        letters = word[1:]
        valued = next((at for at, c in enumerate(letters) if c in _SSH_VALUED), None)
        i += 2 if valued is not None and valued == len(letters) - 1 else 1
    rest = list(words[i:])
    if not host or not rest:
        return ""
    return "" if all(_PLAIN_REMOTE.fullmatch(w) for w in rest) else " ".join(rest)


def value_code(value: str, name: str | None = None) -> str:
    """Why a command given as a value (``core.pager=sh``, ``man -P python3``, ``alias.x='!perl'``,
    ``GIT_PAGER=…``) runs code no rule reads ("" when it does not): a shell or an interpreter that
    reads its program from standard input, which is then the output of the command that starts it
    (a hostile repository's commit messages for git's pager). ``name``: the variable the value is
    assigned to (None for an option's value); for an option or a variable that names a command
    (`_COMMAND_VARIABLE`) the value is read as a command line too (`_command_value`)."""
    if name is not None and (why := config_variable_code(name, value)):
        return why
    if name is not None:
        # An options variable (`GOFLAGS`) gives its program options; any other variable may hold one
        # given later as a word (`p="--access-hook=$x"; git daemon "$p"`: red team, round 37), so
        # there only a dashed option counts (`desc="setup $x"` names nothing).
        runner = _run_time_runner(value, dashed=not OPTIONS_VARIABLE.fullmatch(name))
        if runner:
            return f"{name} gives {runner!r} a value known only at run time: a program no rule can read"
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]  # one pair of quotes around the value; inner quotes are the command's
    text = _VALUE_PREFIX.sub("", text.strip("'\"") if text.count('"') % 2 else text).strip()
    try:
        words = shlex.split(text)
    except ValueError:
        return ""  # not static: the option checks refuse it as a value known only at run time
    if not words:
        return ""
    program = os.path.basename(words[0])
    why = unread_code(program, words)
    if why:
        return f"{value!r} starts {program}: {why}"
    if name is not None and not _COMMAND_VARIABLE.fullmatch(name):
        return ""
    piped = name is None or "PAGER" in name or "SSH" in name or bool(_PIPED_PREFIX.match(value.strip(" '\"")))
    return _command_value(value, text, piped)


def _run_time_runner(value: str, dashed: bool = False) -> str:
    """The option in an options variable's value (``-toolexec=$x``, ``-C linker=$x``) whose name says it
    names a program and whose value is known only at run time ("" when none is): round 36 (analysis2).
    ``dashed``: only an option spelt with a leading ``-`` counts."""
    pieces = value.replace("'", " ").replace('"', " ").replace("(", " ").split()
    for i, piece in enumerate(pieces):
        option, eq, given = piece.partition("=")
        if not eq:
            option, given = (pieces[i - 1] if i > 0 else ""), piece
        if dashed and not option.startswith("-"):
            continue
        if given[:1] in ("$", "`") and RUNS_NAME.search(option):
            return option
    return ""


_SETTING_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)


def command_settings(assignments: Sequence[str]) -> list[tuple[str, str]]:
    """(name, command line) for each of the plan's ``assignments`` (as written: a prefix's, a standalone
    one's, or env's ``NAME=VALUE`` operand, which the planner reads as an assignment: round 50) whose
    name holds a command line a program hands to ``sh -c`` (``LESSOPEN='|cmd %s'``,
    ``GIT_EXTERNAL_DIFF=cmd``), its ``|``/``!`` mark dropped: for deny rules as an option's command
    value is (a value the shell reads differently from its text, ``r""m``, is not static there; red
    team, round 49). The quotes are the shell's: ``X='|r""m y'`` holds ``|r""m y``."""
    found: list[tuple[str, str]] = []
    for word in assignments:
        setting = _SETTING_WORD.fullmatch(word)
        if setting is None or _COMMAND_VARIABLE.fullmatch(setting.group(1)) is None:
            continue
        value = setting.group(2)
        try:
            decoded = shlex.split(value)
        except ValueError:
            decoded = []
        value = decoded[0] if len(decoded) == 1 else value  # else kept as written: not static
        found.append((setting.group(1), _VALUE_PREFIX.sub("", value.strip())))
    return found


def is_command_variable(name: str) -> bool:
    """Whether a variable named ``name`` holds a command line a program runs (``GIT_PAGER``), or
    configuration that may name one (``GIT_CONFIG_VALUE_0``, ``npm_config_script_shell``)."""
    return _COMMAND_VARIABLE.fullmatch(name) is not None or is_config_variable(name)


#: Variables whose value is a command line (``GIT_PAGER``, ``LESSOPEN``, ``GIT_SSH_COMMAND``, ``EDITOR``).
_COMMAND_VARIABLE = re.compile(
    r"[A-Z0-9_]*(?:PAGER|EDITOR|VISUAL|COMMAND|CMD|SSH|SHELL|OPEN|CLOSE|PROGRAM|HELPER|EXTERNAL_DIFF|ASKPASS|"
    r"DIFF|PROXY|FILTER|"
    # Round 37: programs named as what they are (`BROWSER` for `man -H`, git web--browse, python's
    # webbrowser; `MAILER`, `TERMINAL`, TeX's `TEXEDIT`).
    r"BROWSER|MAILER|TERMINAL|TEXEDIT|"
    # Round 36 (analysis2): programs named without saying "run": `RUSTC_WRAPPER`, cmake's
    # `CMAKE_C_COMPILER_LAUNCHER`, `CARGO_TARGET_…_RUNNER`, `…_LINKER`.
    r"WRAPPER|LAUNCHER|COMPILER|LINKER|RUNNER)[A-Z0-9_]*"
    # Build tools' program variables, whole or after a prefix (`CC`, `HOST_CXX`, `RUSTC`; never `ACCESS`).
    r"|(?:[A-Z0-9_]*_)?(?:CC|CXX|CPP|LD|AR|AS|FC|F77|NM|RANLIB|STRIP|OBJCOPY|OBJDUMP|RUSTC|RUSTDOC|GCC|CLANG|"
    r"MAKE|NINJA|CMAKE)"
)
#: What marks a value as a command before its words: git's alias ``!``, ``LESSOPEN``'s ``|``, ``||``, ``|-``.
_VALUE_PREFIX = re.compile(r"^(?:!|\|+-?)")
#: ``LESSOPEN='|-cmd'``: the command reads the file on standard input too.
_PIPED_PREFIX = re.compile(r"\|+-")


def _command_value(value: str, text: str, piped: bool) -> str:
    """Why the command line ``text`` (a value that names a command) runs code no rule reads: a
    program name computed at run time (``sh -c "$(printf r)m x"``), or a program with no model given
    code (``guile -c``, ``kotlin -e``) or, when ``piped``, fed what the command that starts it prints
    (``GIT_PAGER=guile``: the repository's commit messages). Wrappers and ``sh -c`` code are read
    as the analysis reads a command (red team, round 31)."""
    from shellrt.analysis.analyze import analyze  # analyze does not import this module's callers

    for sub in analyze(text).subcommands:
        if not sub.name:
            if all(_ASSIGNMENT_WORD.fullmatch(w) for w in sub.argv):
                continue
            return f"{value!r} runs a command whose name is computed at run time ({sub.text})"
        why = unread_code(sub.name, sub.argv)
        if not why and not modelled(sub.name):
            why = foreign_code(sub.name, sub.argv, ("|",) if piped else ())
        if why:
            return f"{value!r} starts {sub.name}: {why}"
    return ""


_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=.*", re.DOTALL)


def script_files(name: str, argv: Sequence[str]) -> list[str]:
    """The files ``argv`` runs as code, as written: a shell's or an interpreter's script, the file
    ``source`` reads, ``-f`` programs and makefiles (every operand for the other code readers), and a
    program file an option that runs one is given (``--preview=./q``: round 37), and a file an option
    loads code or program names from (``less --lesskey-src=k``, ``man -C k``: round 47)."""
    return _script_files(name, argv) + option_program_paths(argv) + glued_programs(name, argv) + loaded_files(name, argv)


def _script_files(name: str, argv: Sequence[str]) -> list[str]:
    words = list(argv[1:])
    lang = _lang(name)
    if lang in ("busybox", "toybox") and words:
        return _script_files(words[0], words)
    if lang in _LANGS:
        return [script for script in _interpreter(lang, name, words)[1:] if script]
    if lang in ("source", "."):
        return words[:1]
    if lang in _SHELL_NAMES:
        inline, script = _shell(words)
        return [script] if script and not inline else []
    if lang in _AWK or lang == "sed":
        return _option_values(words, "f", ("--file",))
    if lang in ("make", "gmake"):
        return _option_values(words, "f", ("--file", "--makefile")) or ["GNUmakefile", "makefile", "Makefile"]
    if lang == "java":
        return _java_code(words)
    if name == "hash":  # `hash -p ./q ls`: `ls` now runs the file (round 37)
        return _option_values(words, "p", ())
    return [w for w in words if not w.startswith("-")] if lang in CODE_READERS else []


def _java_code(words: list[str]) -> list[str]:
    """What ``java`` runs: ``-jar``'s archive, or a source file (``java X.java``); a class name is
    looked up on the class path (the workspace's code, as a script that exists is)."""
    # an agent every JVM loads before main (round 43: ``java -javaagent:a.jar`` read as running nothing)
    agents = [w.partition(":")[2].partition("=")[0] for w in words if w.startswith(("-javaagent:", "-agentpath:"))]
    if "-jar" in words:
        return [*agents, *words[words.index("-jar") + 1 :][:1]]
    return [*agents, *[w for w in words if w.endswith(".java")][:1]]


def value_scripts(words: Sequence[str]) -> list[str]:
    """The files the command lines given as values run as code: an option's or a setting's value
    (``-c alias.x='!sh s'``, ``GIT_SSH_COMMAND='sh s'``, ``core.pager 'sh s'``, ``PAGER='sh s'``,
    ``LESSOPEN='|sh s'``, ``--to-command='sh s'``, ``-I 'sh s'``, ``-TT 'sh s'``). Why: deny rules read
    such a value's words (`permissions.embedded`), not the script it runs, which the same command may
    have written (red team, round 40). Only a value that starts a code reader counts (``-m "add f"`` runs
    nothing)."""
    found: list[str] = []
    for word in words:
        if not any(c.isspace() for c in word) and "=" not in word and word[:1] not in ("!", "|"):
            continue
        for value in (word, *(piece for _, _, piece in (word.partition("="),) if piece)):
            try:
                parts = shlex.split(value.strip().lstrip("!|").strip())
                if len(parts) == 1 and parts[0] != value:  # a quoted value: `'|sh s'`
                    parts = shlex.split(parts[0].strip().lstrip("!|").strip())
            except ValueError:
                continue
            if parts and not parts[0].startswith("-"):
                found += script_files(os.path.basename(parts[0]), parts)
                # A program by path only where a command is certain: a setting's value, `!…`, `|…`.
                found += parts[:1] if "/" in parts[0] and (len(parts) > 1 or value.lstrip("'\"")[:1] in ("!", "|")) else []
    return found


def made_here(scripts: Sequence[str], dirs: Sequence[str], others: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Why a part runs a file another part of the same command may write ("" when it does not): its
    program (``./s``) or a file it runs as code (``sh s``, ``python3 s.py``, ``. ./s``), each relative
    to the directories the part may run in, is among what ``others`` (each another part's text and
    writes; "" for a name not known) write."""
    # `~+/q` is the working directory's `q` (bash's tilde-plus): round 37.
    scripts = [script[3:] if script.startswith("~+/") else script for script in scripts]
    candidates = {os.path.normpath(os.path.join(d, script)) for script in scripts for d in dirs or ("",)}
    if not candidates:
        return ""
    for text, writes in others:
        made = sorted(candidates & set(writes))
        if made:
            return f"it runs {made[0]}, which {text!r} writes in the same command"
        if "" in writes:
            return f"it runs a file that {text!r} may write in the same command (its writes are not all known)"
    return ""


#: Code readers that find no file by themselves: what they run is named (``sed -f s``, ``ed``'s input), or
#: is the part of its own a multi-call binary runs (``busybox sh s``).
_READERS_FIND_NOTHING = frozenset({"sed", "ed", "red", "ex", "busybox", "toybox"})


def reader_write(name: str, others: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Why a modelled code reader no finder table describes (`has_finder`: ``fish``, ``nu``, ``.``) may
    load a file another part writes by name: what its script sources or imports is its own (red team,
    round 45: ruby, perl, lua, php, java, tcl, make, sqlite3 and vim ran a written module past a deny
    rule). "" for readers with a table, readers that find nothing, and names no table here reads."""
    lang = _lang(name)
    if lang not in CODE_READERS or lang in _READERS_FIND_NOTHING or has_finder(name):
        return ""
    found = first_named_write(others)
    if found is None:
        return ""
    text, path = found
    return f"{lang} has no model of the files its code loads by itself, and {text!r} writes {path} in the same command"


def made_hook(
    name: str,
    argv: Sequence[str],
    dirs: Sequence[str],
    others: Sequence[tuple[str, Sequence[str]]],
    read_only: bool = False,
    unknown: Sequence[str] = (),
) -> str:
    """Why a git part runs a hook another part of the same command writes by name ("" when it does not):
    ``cp "$x" .git/hooks/post-checkout; git checkout .``, ``git clone --template=t`` after writing
    ``t/hooks/post-checkout`` (red team, round 37), a file ``git config`` stores as a program
    (``git config core.fsmonitor ./q``), a hook or git directory written anywhere (`git_code_write`).
    Writes by a program whose writes are not modelled (``npm ci``) do not count: every git command beside
    one would ask otherwise; a write no word names (``cp q "$p"``, ``> "$d/x"``: ``unknown``, the texts of
    such parts) does (round 39)."""
    named = [(text, [w for w in writes if w]) for text, writes in others]
    # A program copied where PATH may find it, run by its bare name (`cp q ~/bin/ls; ls`: round 38).
    why = on_path_write(name, argv, others, read_only)
    if why:
        return why
    # A read-only git part may run hooks too (`git status` writes the index: `post-index-change`); a
    # program that is not read-only may run git itself (`make commit`, `npm run`, `pre-commit`: round 38).
    if name != "git" and (read_only or not may_run_git(name)):
        return ""
    why = unnamed_write(name, unknown) or found_code_write(name, named, argv) or config_write(name, named)
    if not why and not read_only:
        why = unknown_program_write(name, named) if not modelled(name) else reader_write(name, named)
    if why:
        return why
    git_argv = argv if name == "git" else ("git",)
    why = made_here([*git_hook_paths(git_argv), *git_config_paths(git_argv)], dirs, named)
    if why:
        return why
    # Where git finds its repository is not read here (`GIT_DIR`, `--git-dir`, `-C`, a worktree's main
    # repository, a submodule, `core.hooksPath`, a subdirectory): a hook's name, a `hooks` directory or a
    # git directory written anywhere counts, below the directories the part runs in (a workspace in a
    # directory named `x.git` is not one) (red team, round 37, review3).
    # `git --exec-path=.` runs `./git-<name>` for a subcommand git does not build in (`git lfs`).
    exec_path = any(w.startswith("--exec-path=") for w in argv[1:])
    for text, writes in named:
        code = next(
            (w for w in writes if git_code_write(_below(w, dirs)) or (exec_path and os.path.basename(w).startswith("git-"))),
            "",
        )
        if code:
            return f"git may run {code} (a hook or a git directory), which {text!r} writes in the same command"
    # An archive or a tree unpacked into such a place (`tar xf t.tar -C .git`, `unzip -d .git/hooks`,
    # `rsync -a d/ .git/hooks/`): what it writes there is not known, where is.
    for text, _writes in others:
        code = _unpacked_git_place(text)
        if code:
            return f"git may run what {text!r} unpacks into {code} (a hook or a git directory) in the same command"
    # Round 38: a hook or git directory named through a run-time word (`cp q .git/hooks/"$h"`), and an
    # archive or diff whose own paths decide what it writes (`tar xf t.tar` holding `.git/hooks/x`).
    for text, written in others:
        if not written:
            continue
        code = dynamic_place(text, _git_place_word)
        if code:
            return f"git may run {code} (a hook or a git directory), which {text!r} writes in the same command"
        if unpacks_unknown(text) and "" in written:
            return f"git may run what {text!r} unpacks (its own paths may hold .git/hooks/) in the same command"
    return ""


def _git_place_word(word: str) -> bool:
    """A written word with a run-time piece that may be a hook or a git directory: `git_code_write` of
    it, or a ``hooks`` directory on its way (``$d/hooks/$h``, a ``core.hooksPath``)."""
    return git_code_write(word) or "hooks" in word.split("/")[:-1]


#: Programs that write files an archive or another tree names, into a directory their words name.
_UNPACKERS = frozenset({"tar", "bsdtar", "gtar", "unzip", "7z", "7za", "7zr", "cpio", "pax", "rsync", "ar", "busybox"})


def _below(path: str, dirs: Sequence[str]) -> str:
    """``path`` relative to the first of ``dirs`` it lies in (as given when in none)."""
    for d in dirs:
        if d and os.path.isabs(path) and os.path.isabs(d) and (path == d or path.startswith(d.rstrip("/") + "/")):
            return os.path.relpath(path, d)
    return path


def _unpacked_git_place(text: str) -> str:
    """A word (or an option's ``=`` value) naming a hook or git directory, of a part whose program
    unpacks files there (`_UNPACKERS`; "" for any other part or none)."""
    try:
        words = shlex.split(text)
    except ValueError:
        return ""
    if not words or os.path.basename(words[0]) not in _UNPACKERS:
        return ""
    for word in words[1:]:
        place = word.partition("=")[2] if word.startswith("-") else word
        if place and git_code_write(place):
            return place
    return ""
