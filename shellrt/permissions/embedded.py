"""Commands a program runs from its own option values, and programs that read any file.

A rule names a program (``Bash(git:*)``), but some programs run another
command given as an option value: ``git -c alias.x='!rm f' x``, ``zip
-TT='rm f'``, ``tar --checkpoint-action=exec='rm f'``, ``rsync -e CMD``. The
engine must see that command (deny rules match it) and must not let a rule
for the outer program cover it (allow rules never match such a part). When
the value is not static (``-e "$c"``), what runs is unknown.

Interpreters (``python3 -c``, ``perl -e``, ``awk``…) open whatever their
program text computes: for path rules their reads are unknown.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence

from shellrt.analysis.kernel_paths import names_stdin
from shellrt.analysis.runner_names import RUNS_NAME
from shellrt.permissions.host_path import host_path

__all__ = [
    "GIT_COMMAND_KEYS",
    "GIT_SAFE_KEYS",
    "INTERPRETERS",
    "command_options",
    "is_dynamic",
    "reads_anything",
    "unknown_code",
]

#: Options whose value a program runs as a command (long options also match ``--opt=value``;
#: a short option also matches its value attached, ``-Icmd``).
_COMMAND_OPTIONS: dict[str, frozenset[str]] = {
    "zip": frozenset({"-TT", "--unzip-command"}),
    "tar": frozenset(
        {
            "--checkpoint-action",
            "--to-command",
            "--use-compress-program",
            "-I",
            "--info-script",
            "--new-volume-script",
            "-F",
            "--rsh-command",
            "--rmt-command",
        }
    ),
    "rsync": frozenset({"-e", "--rsh", "--rsync-path"}),
    "sort": frozenset({"--compress-program"}),
    "env": frozenset({"-S", "--split-string"}),
    "find": frozenset({"-exec", "-execdir", "-ok", "-okdir"}),
    "scp": frozenset({"-S", "-o"}),
    "sftp": frozenset({"-S", "-D", "-o"}),
    "ssh": frozenset({"-o"}),
    "man": frozenset({"-P", "--pager", "-H", "--html"}),
    "sdiff": frozenset({"--diff-program"}),
    "diff3": frozenset({"--diff-program"}),
    "less": frozenset({"+"}),
    "script": frozenset({"-c", "--command"}),
    "su": frozenset({"-c", "--command", "--session-command"}),
    "runuser": frozenset({"-c", "--command", "--session-command"}),
    "flock": frozenset({"-c", "--command"}),
    "sg": frozenset({"-c"}),
    "rg": frozenset({"--pre", "--hostname-bin"}),
    "fd": frozenset({"-x", "--exec", "-X", "--exec-batch"}),
    "fdfind": frozenset({"-x", "--exec", "-X", "--exec-batch"}),
    "git": frozenset(
        {"--upload-pack", "--receive-pack", "--exec", "--extcmd", "--config-env", "--exec-path"}
    ),
    # Round 36: GNU split pipes each piece to `sh -c FILTER`; wget runs its askpass program; pandoc
    # runs each filter program; gcc runs every tool it drives as `WRAPPER,ARGS… tool` (commas are blanks).
    "split": frozenset({"--filter"}),
    "wget": frozenset({"--use-askpass"}),
    "pandoc": frozenset({"--filter", "-F"}),
    **dict.fromkeys(("gcc", "g++", "cc", "c++", "gfortran", "cpp"), frozenset({"-wrapper"})),
}

#: vi-family editors: ``+CMD`` and ``--cmd CMD`` are Ex commands (``+'!rm f'`` runs a shell command,
#: ``+'call system(…)'`` any); ``+N`` only moves to a line (round 36).
_EX_EDITORS = frozenset(
    {"vi", "vim", "nvim", "gvim", "view", "rview", "vimdiff", "gvimdiff", "ex", "rvim", "evim", "gview", "vimx",
     "mvim", "nvi"}
)  # fmt: skip

#: ``git -c KEY=VALUE`` keys that run nothing (anything else may name a program: aliases with ``!``,
#: ``core.pager``, ``*.command``, filters, ``include.path`` loading another config…).
_GIT_SAFE_KEYS = re.compile(
    r"(?i)(color\..*|user\.(name|email)|core\.(quotepath|autocrlf|safecrlf|abbrev|filemode|ignorecase)|"
    r"advice\..*|init\.defaultbranch|log\..*|diff\.(renames|algorithm|noprefix|mnemonicprefix)|"
    r"status\..*|column\..*|i18n\..*|safe\.directory|gc\.auto|commit\.gpgsign|tag\.gpgsign|"
    r"pull\.(rebase|ff)|merge\.(ff|conflictstyle)|fetch\.prune|push\.default|branch\.sort|"
    r"maintenance\.auto)"
)

#: ``git -c KEY=VALUE`` keys whose value is itself the command (any other unsafe key names a file
#: of configuration or hooks, ``include.path``, ``core.hooksPath``: what runs is not known).
_GIT_COMMAND_KEYS = re.compile(
    r"(?i)(alias\..*|core\.(pager|editor|sshcommand|askpass|gitproxy)|pager\..*|sequence\.editor|"
    r"diff\.external|gpg(\..*)?\.program|.*\.(command|cmd|textconv|clean|smudge|process|driver))"
)

#: Public names for the judging of git configuration given in the environment (`git_env_config`).
GIT_SAFE_KEYS = _GIT_SAFE_KEYS
GIT_COMMAND_KEYS = _GIT_COMMAND_KEYS

#: Programs whose program text decides what they open (a path rule cannot see it).
INTERPRETERS = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|irb|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|"
    r"luajit|rscript|r|julia|tclsh[0-9.]*|wish|expect|awk|gawk|mawk|nawk|busybox|bash|sh|dash|zsh|ksh|"
    r"mksh|fish|csh|tcsh|pwsh|powershell|osascript|java|jshell|ghci|runghc|racket|guile|sbcl|ocaml|swift|"
    r"groovy|scala|kotlin|elixir|erl|escript)"
)
_AWK = frozenset({"awk", "gawk", "mawk", "nawk"})
_INLINE_FLAGS = frozenset({"-c", "-e", "-E", "-r", "-p", "-", "--eval", "--print", "--command"})

#: In a value a shell will parse again: expansions, and quoting, escapes, globs and braces that can
#: spell a program name no rule sees (``!"r"m f``, ``r\\m f``, ``/bin/r?``, ``{rm,f}``).
_DYNAMIC = re.compile(r"[$`'\"\\*?\[{~]")


def reads_anything(name: str, argv: Sequence[str]) -> bool:
    """``argv`` runs program text no path rule can see: an interpreter given its program inline
    (``python3 -c``, ``perl -ne``, ``node -e``, any ``awk``) or on stdin (``python3 <<EOF``).
    A script file (``python3 build.py``) is a file in the workspace, judged as a read of it."""
    if not name or INTERPRETERS.fullmatch(name.lower()) is None:
        return False
    if name.lower() in _AWK:
        return True
    words = argv[1:]
    for word in words:
        if word in _INLINE_FLAGS or word.startswith(("--eval=", "--print=")):
            return True
        if word.startswith("-") and not word.startswith("--") and set(word[1:]) & {"c", "e", "E"}:
            return True
    return not any(not w.startswith("-") for w in words)


def command_options(name: str, argv: Sequence[str]) -> list[tuple[str, str]]:
    """(option, value) pairs of ``argv`` whose value ``name`` runs as a command.

    A value holding ``$`` or a backquote is not static: the caller treats the part as unknown.
    Over-inclusive on purpose (``scp -o User=x``): it only keeps allow rules off the part.
    """
    found: list[tuple[str, str]] = []
    options = _COMMAND_OPTIONS.get(name, frozenset())
    if name == "git" and {"rebase", "difftool"} & set(argv):
        options = options | {"-x"}  # git rebase -x CMD, git difftool -x CMD
    if name == "git" and "grep" in argv:
        options = options | {"-O", "--open-files-in-pager"}  # git grep -Orm x: `rm` on every file found
    if name in _EX_EDITORS or name == "less":
        found += _plus_commands(name, argv)
    if name == "git":
        found += _git_subcommand_runs(argv) + _git_config_set(argv)
    words = list(argv[1:])
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if name == "git" and word == "-c" and following:
            found += _git_config(following)
            continue
        if name == "git" and word.startswith("-c") and len(word) > 2:
            found += _git_config(word[2:])
            continue
        if name == "git" and word.startswith("--config-env"):
            # --config-env=KEY=ENVVAR: the value is an environment variable's, known only when it runs.
            found.append(("--config-env", "$" + (word.partition("=")[2] or following)))
            continue
        if name == "tar" and i == 0 and not word.startswith("-") and set(word) & {"I", "F"}:
            found.append((word, following))  # old-style letters: ``tar cIf prog a.tar x``
            continue
        for option in options:
            if word == option:
                found.append((option, following))
            elif option.startswith("--") and word.startswith(option + "="):
                found.append((option, word[len(option) + 1 :]))
            elif _abbreviates(name, word.partition("=")[0], option):  # getopt_long: `tar --to-com=CMD`
                found.append((option, word.partition("=")[2] if "=" in word else following))
            elif (
                option.startswith("-")
                and not option.startswith("--")
                and word.startswith(option)
                and word != option
            ):
                found.append((option, word[len(option) :].removeprefix("=")))
            elif len(option) == 2 and option[0] == "-" and word[:1] == "-" and word[1:2] not in ("-", ""):
                at = word.find(option[1], 1)
                if at > 0:  # a cluster: ``script -qc CMD``, ``tar -cIzstd``, ``ssh -vo ProxyCommand=CMD``
                    found.append((option, word[at + 1 :] or following))
    if name in _GCC_WRAPPED:
        found = [(o, v.replace(",", " ") if o == "-wrapper" else v) for o, v in found]
    module = python_module(name, argv)
    if module is not None and _STATIC_MODULE.fullmatch(module[0]) is None:
        found.append(("-m", module[0]))  # `python3 -m "$x"`: a module (pip, webbrowser) no rule names
    return found + _named_runners(name, words)


_PYTHONS = re.compile(r"(?i)(python|pypy)[0-9.]*")
#: A module name as a rule reads it (a dotted name, quoted or not); anything else is not static.
_STATIC_MODULE = re.compile(r"([\w.]+)|'([\w.]+)'|\"([\w.]+)\"")


def python_module(name: str, argv: Sequence[str]) -> tuple[str, list[str]] | None:
    """(the module as written, the words after it) when a Python interpreter runs ``-m MODULE``,
    however getopt lets it be spelled (``-mpip``, ``-Im pip``, ``-I -W x -m pip``), else None.

    Why: a rule names ``python3 -m pip``, and the module is the command (round 36, analysis2)."""
    if _PYTHONS.fullmatch(name) is None:
        return None
    words = list(argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--check-hash-based-pycs":
            i += 2
            continue
        if not word.startswith("-") or word in ("-", "--") or word.startswith("--"):
            return None  # a script, stdin, or an option no module follows
        for at in range(1, len(word)):
            flag = word[at]
            if flag == "c":
                return None
            if flag in "WX":
                i += 0 if word[at + 1 :] else 1
                break
            if flag == "m":
                rest = word[at + 1 :]
                if rest:
                    return rest, words[i + 1 :]
                return (words[i + 1], words[i + 2 :]) if i + 1 < len(words) else None
        i += 1
    return None


_RUNS_NAME = RUNS_NAME
#: Output options whose value, when it starts with ``|``, is a command the program pipes into
#: (``perf record -o "|CMD"``, ``valgrind --log-file="|CMD"``, ``strace -o "|CMD"``).
_PIPE_OUTPUT = re.compile(r"(?i)-(?:o|output(?:-file)?|out(?:file)?|log(?:-?file)?)")
#: ``-o|CMD`` (the short output option with its value attached).
_ATTACHED_PIPE = re.compile(r"(-o)(\|.*)", re.DOTALL)
#: A cmake cache entry's type after its name (``-DNAME:FILEPATH=``).
_CMAKE_TYPE = re.compile(r"(?i):(?:filepath|path|string|bool|internal|static|uninitialized)['\"]*$")
#: Text before a run-time value that runs it whatever the option: socat's ``EXEC:``/``SYSTEM:``
#: addresses, fzf's ``execute(…)``.
_RUNS_TEXT = re.compile(r"(?i)(?:^|[^a-z])(?:(?:exec|system):|(?:execute(?:-silent)?|become)\()")


#: Builtins whose words are data: a value there runs nothing.
_DATA_BUILTINS = frozenset({"echo", "printf", ":", "true", "false", "test", "[", "printenv"})


def _run_time_at(word: str) -> int | None:
    """Where bash expands something in ``word`` as written (a ``$`` or backquote outside single
    quotes), or None: ``'$x'`` is text."""
    single = double = False
    for at, char in enumerate(word):
        if char == "'" and not double:
            single = not single
        elif char == '"' and not single:
            double = not double
        elif char in "$`" and not single:
            return at
    return None


def _named_runners(name: str, words: Sequence[str]) -> list[tuple[str, str]]:
    """Options of any program whose run-time value (``$``, a backquote) is by its name a program it
    runs: ``tig --pager="$x"``, ``gpg --photo-viewer "$x"``, ``hg --config ui.editor="$x"``, ``socat -
    "EXEC:$x y"`` (red team, round 36). No table lists every such option; a static value is a word the
    deny rules read already (``--pager='rm x'``), so only a run-time one is reported (as unknown)."""
    found: list[tuple[str, str]] = []
    if name in _DATA_BUILTINS:
        return found  # `echo "EDITOR=$EDITOR"` prints (round 34)
    for i, word in enumerate(words):
        at = _run_time_at(word)
        if at is None:
            if name == "socat" and _RUNS_TEXT.match(word.lstrip("'\"")):
                found.append(("EXEC:", word.partition(":")[2].split(",")[0].strip("'\"")))
            continue
        head = word[:at]
        flat = head.replace("'", "").replace('"', "")
        option, eq, start = flat.partition("=")
        attached = _ATTACHED_PIPE.match(flat)
        if attached is not None:
            option, start = attached.group(1), attached.group(2)
        elif not eq:
            option, start = (words[i - 1] if i > 0 else ""), flat
        if _PIPE_OUTPUT.fullmatch(option) and start.startswith("|"):
            found.append((option, word))  # `perf record -o "|$x"`: a pipe to a program known at run time
        elif _RUNS_TEXT.search(head):
            found.append((head, word))
        elif "=" in head:
            # cmake's typed `-DCMAKE_C_COMPILER:FILEPATH=` names the same setting as the untyped one.
            if _RUNS_NAME.search(_CMAKE_TYPE.sub("", head.rsplit("=", 1)[0])):
                found.append((head.rsplit("=", 1)[0], word))
        elif i > 0 and words[i - 1].startswith("-") and "=" not in words[i - 1] and _RUNS_NAME.search(words[i - 1]):
            found.append((words[i - 1], word))
    return found


_GCC_WRAPPED = frozenset({"gcc", "g++", "cc", "c++", "gfortran", "cpp"})


def _plus_commands(name: str, argv: Sequence[str]) -> list[tuple[str, str]]:
    """What ``vim +CMD``/``--cmd CMD`` and ``less +CMD`` run: a shell command after ``!`` (as
    written), else Ex code no rule can read (a ``$`` value: unknown); ``+N`` and less's other
    commands (``+G``, ``+/pattern``) run nothing."""
    found: list[tuple[str, str]] = []
    words = list(argv[1:])
    for i, word in enumerate(words):
        if word == "--cmd" and name in _EX_EDITORS:
            body = words[i + 1] if i + 1 < len(words) else ""
        elif word[:1] == "+" and word != "--":
            body = word.lstrip("+")
        else:
            continue
        if not body or body.isdigit():
            continue
        if body.startswith("!") and not is_dynamic(body[1:]) and "|" not in body:
            found.append(("+", body[1:]))
        elif name in _EX_EDITORS or "!" in body or "|" in body:
            found.append(("+", "$" + body))
    return found


#: Long options that are a prefix of a program-running one yet options of their own (an exact name wins).
_OWN_PREFIXES: dict[str, frozenset[str]] = {"tar": frozenset({"--checkpoint"})}


def _abbreviates(name: str, given: str, option: str) -> bool:
    """Whether ``given`` (``--to-com``) is a shortened ``option`` (``--to-command``): GNU getopt_long,
    argp and git's parse-options take any unambiguous prefix. Over-inclusive: a prefix of two
    options counts for both (it only keeps allow rules off, or asks when the value is unknown)."""
    return (
        option.startswith("--")
        and len(given) > 3
        and given != option
        and option.startswith(given)
        and given not in _OWN_PREFIXES.get(name, frozenset())
    )


#: git subcommands whose arguments are a command (``git submodule foreach CMD``, ``git bisect run
#: CMD``) and filter-branch/send-email options whose value is one.
_GIT_RUNS_REST = (("submodule", "foreach"), ("bisect", "run"))
_GIT_COMMAND_VALUES = frozenset(
    {
        "--env-filter",
        "--tree-filter",
        "--index-filter",
        "--parent-filter",
        "--msg-filter",
        "--commit-filter",
        "--tag-name-filter",
        "--setup",
        "--sendmail-cmd",
        "--to-cmd",
        "--cc-cmd",
        "--header-cmd",
        "--smtp-server",
    }
)


#: ``git config`` options that take the next word as their value.
_GIT_CONFIG_VALUED = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment", "--value"})


def _git_config_set(argv: Sequence[str]) -> list[tuple[str, str]]:
    """``git config [set] KEY VALUE`` whose key runs its value (``core.pager``, ``alias.*``) and whose value
    is known only at run time: a later git (of this command or the next) runs a program no rule reads
    (round 36, analysis2). A static value is a word the deny rules read already."""
    rest, _ = git_subcommand(argv)
    if rest[:1] != ["config"]:
        return []
    words: list[str] = []
    skip = False
    for word in rest[1:]:
        if skip:
            skip = False
        elif word in _GIT_CONFIG_VALUED:
            skip = True
        elif not word.startswith("-") and not (not words and word in ("set", "--add")):
            words.append(word)
    if len(words) < 2:
        return []
    key = words[0].strip("'\"")
    if _GIT_SAFE_KEYS.fullmatch(key) or _run_time_at(" ".join(words[1:])) is None:
        return []
    return [(f"config {key}", "$" + " ".join(words[1:]))]


def _git_subcommand_runs(argv: Sequence[str]) -> list[tuple[str, str]]:
    words = list(argv[1:])
    found: list[tuple[str, str]] = []
    for first, second in _GIT_RUNS_REST:
        if first in words:
            i = words.index(first)
            rest = [w for w in words[i + 1 :] if w != "--" and not w.startswith("-")]
            if rest[:1] == [second] and len(rest) > 1:
                found.append((f"{first} {second}", " ".join(rest[1:])))
    for i, word in enumerate(words):
        option, eq, value = word.partition("=")
        if option in _GIT_COMMAND_VALUES:
            found.append((option, value if eq else (words[i + 1] if i + 1 < len(words) else "")))
    return found


_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish"})


def unknown_code(name: str, argv: Sequence[str]) -> str:
    """Why ``argv`` runs shell code no rule can read ("" when it does not): a shell reading its
    program from standard input (``printf … | sh``, ``bash <<< "$x"``) or interactive (rc files,
    ``PROMPT_COMMAND``), ``source /dev/stdin``, ``trap "$x"``, or a name given a program through a
    value known only when bash parses it (``alias ls=$'\\x72m'``, ``BASH_CMDS[ls]=…``, ``hash -p``):
    later parts then run a program their name does not say."""
    redefines = _redefines(name, argv)
    if redefines:
        return redefines
    words = list(argv[1:])
    if name in _SHELLS:
        options = [w for w in words if w.startswith("-") and not w.startswith("--")]
        if any("i" in w[1:] for w in options):
            return f"{name} -i runs start-up files and PROMPT_COMMAND"
        if not any("c" in w[1:] for w in options) and not any(not w.startswith("-") for w in words):
            return f"{name} reads its program from standard input"
        if any("s" in w[1:] for w in options):
            return f"{name} -s reads its program from standard input"
        script = next((w for w in words if not w.startswith("-")), "")
        if names_stdin(script):
            return f"{name} {script} reads its program from standard input"
    later = _runs_stdin_commands(name, words)
    if later:
        return later
    if name in ("source", ".") and (not words or names_stdin(words[0]) or is_dynamic(words[0])):
        return f"{name} runs code read from standard input or a file named at run time"
    if name == "trap" and any(_DYNAMIC_CODE.search(w) for w in words):
        return "trap runs a value computed at run time"
    return ""


_DYNAMIC_CODE = re.compile(r"[$`]")
_STARTUP_VARIABLE = re.compile(r"(?:BASH_ENV|ENV)=(.*)", re.DOTALL)


def startup_from_stdin(words: Sequence[str]) -> str:
    """Why ``words`` (assignments as written, a part's argv) make a shell run start-up code no rule
    reads ("" when they do not): ``BASH_ENV=/dev/stdin bash -c true <<< 'rm f'``."""
    for word in words:
        found = _STARTUP_VARIABLE.fullmatch(word)
        if found is None:
            continue
        value = found.group(1).strip("'\"")
        if names_stdin(value) or _DYNAMIC_CODE.search(value) or value.startswith("<("):
            return f"{word.partition('=')[0]} makes a shell run start-up code from standard input or a run-time value"
    return ""


#: Programs that run shell commands read from standard input (or a file) when no command is given:
#: schedulers run them later (``echo 'rm x' | at now``), ``su``/``script`` start a shell fed by stdin.
_SCHEDULERS = frozenset({"at", "batch"})
_SHELL_STARTERS = {"su": ("c", "--command", "--session-command"), "runuser": ("c", "--command", "--session-command"),
                   "script": ("c", "--command")}  # fmt: skip


def _runs_stdin_commands(name: str, words: Sequence[str]) -> str:
    """Why ``name`` runs commands no rule can read from stdin or a file ("" when it does not)."""
    if name in _SCHEDULERS and not {"-l", "-d", "-r", "-c"} & set(words):  # not atq, atrm, at -c
        return f"{name} runs commands read from standard input or a file"
    if name == "parallel" and all(w.startswith("-") for w in words):
        return "parallel runs each line of standard input as a command"
    if name == "crontab" and "-l" not in words:
        return "crontab installs commands read from standard input or a file"
    inline = _SHELL_STARTERS.get(name)
    if inline is None:
        return ""
    short, *longs = inline
    given = any(
        w in longs
        or w.startswith(tuple(f"{o}=" for o in longs))
        or (w[:1] == "-" and w[1:2] != "-" and short in w[1:])
        for w in words
    )
    return "" if given else f"{name} without {longs[0]} starts a shell that reads standard input"


#: Assignments that decide what a command name runs: bash's alias and command-hash tables
#: (nothing but a trick writes them; a static value is judged too, as a word of the part).
_NAME_TABLES = re.compile(r"(-v)?(BASH_ALIASES|BASH_CMDS)(\[.*\])?(\+?=|$)")


def _redefines(name: str, argv: Sequence[str]) -> str:
    """Why ``argv`` gives a command name a program no rule can read ("" when it does not)."""
    words = list(argv[1:]) if name else list(argv)
    if name == "alias":
        values = [w.partition("=")[2] for w in words if "=" in w]
        if any(is_dynamic(v) for v in values):
            return "alias defines a command from a value known only at run time"
    if name == "hash" and any(w.startswith("-") and "p" in w[1:] for w in words):
        programs = [w for w in words if not w.startswith("-")][:1]
        if any(is_dynamic(p) for p in programs):
            return "hash -p gives a name a program known only at run time"
    for word in words:
        if _NAME_TABLES.match(word):  # BASH_CMDS[ls]=…, printf -v 'BASH_CMDS[ls]', read BASH_ALIASES[ls]
            return f"{word.partition('=')[0]} changes what a command name runs"
    return ""


def _git_config(setting: str) -> list[tuple[str, str]]:
    """``git -c KEY=VALUE``: nothing for a harmless key, the command for a command key, and an
    unknown value (``$``) for a key that names where commands come from (``include.path``)."""
    key, _, value = setting.partition("=")
    key = key.strip("'\"")
    if _GIT_SAFE_KEYS.fullmatch(key):
        return []
    if _GIT_COMMAND_KEYS.fullmatch(key):
        return [(f"-c {key}", value.strip("'\"").lstrip("!"))]
    return [(f"-c {key}", "$" + setting)]


def is_dynamic(value: str) -> bool:
    """The value holds an expansion or quoting: what it runs is known only when a shell parses it."""
    return _DYNAMIC.search(value) is not None


#: git's global options (before the subcommand) with no value, and with a value (separate or ``=``).
_GIT_GLOBAL_FLAGS = frozenset(
    {
        "-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects", "--literal-pathspecs",
        "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-advice",
        "--no-lazy-fetch", "--exec-path",
    }
)  # fmt: skip
_GIT_GLOBAL_VALUES = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source"}
)


def git_subcommand(argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(the words from git's subcommand on, the ``-c alias.NAME=VALUE`` aliases given): what
    ``git --no-pager -C d push`` runs is ``git push``, which a ``Bash(git push:*)`` rule names."""
    words = list(argv[1:])
    aliases: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        option, eq, value = word.partition("=")
        if word in _GIT_GLOBAL_FLAGS or (option in ("--exec-path", *_GIT_GLOBAL_VALUES) and eq):
            i += 1
        elif word in _GIT_GLOBAL_VALUES:
            value = words[i + 1] if i + 1 < len(words) else ""
            i += 2
        elif word.startswith("-c") and len(word) > 2:
            value, i = word[2:], i + 1
        elif word.startswith("-C") and len(word) > 2:
            i += 1
        else:
            break
        if option in ("-c",) or word.startswith("-c"):
            key, _, alias = value.strip("'\"").partition("=")
            if key.lower().startswith("alias."):
                aliases[key[len("alias.") :]] = alias
    return words[i:], aliases


def git_forms(argv: Sequence[str]) -> list[str]:
    """``git SUBCOMMAND …`` without the global options before it, with a ``-c`` alias expanded."""
    rest, aliases = git_subcommand(argv)
    if not rest:
        return []
    forms = [" ".join(["git", *rest])]
    alias = aliases.get(rest[0])
    if alias is not None and not alias.startswith("!"):
        forms.append(" ".join(["git", alias, *rest[1:]]))
    return forms


def _git_commands() -> frozenset[str]:
    """git's own commands and the ``git-*`` programs on PATH (empty when git cannot say).

    Run at ``/`` with the repository discovery pointed nowhere: ``git --list-cmds`` reads the
    configuration of the repository it starts in, and the server's own working directory may
    be a hostile one (a FIFO ``.git/config`` blocked it, and an empty answer turns the alias
    check off). A failure is not cached: the next call asks again."""
    if _GIT_COMMANDS:
        return _GIT_COMMANDS[0]
    path = host_path()  # never a git (or git-* program) a sandboxed command wrote (round 15)
    git = shutil.which("git", path=path)
    if git is None:
        return frozenset()
    from shellrt.permissions.hook_env import hook_env  # only when git is asked: import budget

    env = {
        **hook_env(os.environ, ()),  # no LD_PRELOAD or GIT_CONFIG_GLOBAL a command wrote (round 34)
        "PATH": path,
        "GIT_DIR": "/nonexistent/.git",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }
    try:
        listed = subprocess.run(
            [git, "--list-cmds=main,others,nohelpers"],
            cwd="/",
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    known = frozenset(listed.split())
    if known:
        _GIT_COMMANDS.append(known)
    return known


#: The one successful `_git_commands` answer (a list: filled once, never with a failure).
_GIT_COMMANDS: list[frozenset[str]] = []


def git_alias_unknown(argv: Sequence[str]) -> str:
    """Why the git subcommand may run another one no rule names ("" when it does not): a name that
    is no git command is an alias, from a configuration the command or the repository wrote
    (``git config alias.p push`` earlier, then ``git p``)."""
    rest, aliases = git_subcommand(argv)
    if not rest or rest[0].startswith("-") or rest[0] in aliases:
        return ""
    known = _git_commands()
    if not known or rest[0] in known:
        return ""
    return f"git {rest[0]} is no git command: an alias, whose command no rule can read"


def subcommand_forms(name: str, argv: Sequence[str]) -> list[str]:
    """``NAME SUB …`` for each word that may be the subcommand behind leading global options:
    ``kubectl -n prod delete pod`` runs ``kubectl delete``, ``npm --prefix d publish`` runs
    ``npm publish``. A word right after an option may be that option's value, so both readings
    count. Over-inclusive on purpose; deny and ask rules only."""
    if not name:
        return []
    words = list(argv[1:])
    forms: list[str] = []
    module = python_module(name, argv)
    if module is not None and (static := _STATIC_MODULE.fullmatch(module[0])) is not None:
        given = next(g for g in static.groups() if g).split(".")
        for depth in range(len(given), 0, -1):  # `-m pip.__main__` runs pip: a package's modules are it
            forms.append(" ".join([name, "-m", ".".join(given[:depth]), *module[1]]))  # `-Im pip` too
    i = 0
    after_option = False
    while i < len(words):
        word = words[i]
        if word == "--":
            break
        if word.startswith("-") and word != "-":
            after_option = "=" not in word
            i += 1
            continue
        if i > 0:
            forms.append(" ".join([name, *words[i:]]))
        if not after_option:
            break
        after_option = False
        i += 1
    return forms
