"""Wrappers and interpreters: programs that run other programs.

Wrappers are never read-only themselves, but the command they run is also
emitted as a subcommand so a permission rule for the wrapper (``Bash(timeout:*)``)
can never smuggle the wrapped command past a rule check. Interpreters that take
a script string (``bash -c``, ``eval``) have that string parsed too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["INTERPRETERS", "SHELLS", "SYSTEM_DIRS", "WRAPPERS", "Unwrapped", "possible_program", "program_name", "unwrap"]


@dataclass(frozen=True)
class _Wrapper:
    value_opts: frozenset[str] = frozenset()
    #: Positional words consumed before the command (``timeout DURATION``).
    skip: int = 0
    #: ``NAME=value`` words before the command are skipped (env).
    assignments: bool = False
    #: Options whose value is a shell string (``env -S``, ``flock -c``).
    script_opts: frozenset[str] = frozenset()
    #: Options after which no command is run (``command -v``).
    no_command_opts: frozenset[str] = frozenset()
    #: Short option letters one of which must be given for a command to run (``jobs -x``).
    runs_with: str = ""


def _w(values: str = "", skip: int = 0, assignments: bool = False, script: str = "", none: str = "",
       runs_with: str = "") -> _Wrapper:
    return _Wrapper(frozenset(values.split()), skip, assignments, frozenset(script.split()),
                    frozenset(none.split()), runs_with)


WRAPPERS: Final[dict[str, _Wrapper]] = {
    "timeout": _w("-s --signal -k --kill-after", skip=1),
    "nice": _w("-n --adjustment"),
    "nohup": _w(),
    # env's arguments are read by `env_args.read_env` alone (its options, `-`, NAME=VALUE, -S strings):
    # no option spec here, which would be a second reading nobody checks (red team, round 51).
    "env": _w(),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "xargs": _w("-a --arg-file -d --delimiter -E -e --eof -I -i --replace -L -l --max-lines -n --max-args "
                "-P --max-procs -s --max-chars --process-slot-var"),
    "command": _w(none="-v -V"),
    "builtin": _w(),
    "exec": _w("-a"),
    "sudo": _w(assignments=True, values="-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role -t --type "
               "-T --command-timeout -U --other-user"),
    "doas": _w("-u -C"),
    "time": _w("-o --output -f --format"),  # GNU time's (/usr/bin/time); bash's keyword takes only -p
    "coproc": _w(),
    "setsid": _w(),
    "ionice": _w("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "chrt": _w(skip=1),
    "taskset": _w(skip=1),
    "unbuffer": _w(),
    "caffeinate": _w("-t -w"),
    "flock": _w("-w --timeout -E --conflict-exit-code", skip=1, script="-c --command"),
    "watch": _w("-n --interval -d --differences -c --color"),
    "strace": _w("-o -e -p -s -u -E -I -b -a -O -P -S -X"),
    "ltrace": _w("-o -e -p -s -u -a -n"),
    "nsenter": _w("-t --target -S --setuid -G --setgid"),
    "unshare": _w(),
    "chroot": _w(skip=1),
    "runuser": _w("-u -g -G", script="-c --command"),
    "su": _w("-g -G -s --shell", script="-c --command"),
    "firejail": _w(),
    "proxychains": _w("-f"),
    "torsocks": _w(),
    "catchsegv": _w(),
    "valgrind": _w(),
    "gdb": _w(),
    "entr": _w(),
    "parallel": _w(),
    "npx": _w(),
    "uvx": _w(),
    # bash's `jobs -x COMMAND` (also `-xl`, `-x -l`, `-rx`): runs COMMAND, job specs in it replaced;
    # without -x it runs nothing (red team, round 35).
    "jobs": _w(runs_with="x"),
}

#: Programs that take a shell script string with ``-c``.
SHELLS: Final = frozenset(["sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox"])
#: Programs that run code (never read-only, even without arguments).
INTERPRETERS: Final = frozenset(
    ["python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "R", "julia", "osascript", "awk", "gawk", "mawk", "nawk", "busybox", "pwsh", "powershell", "java", "groovy", "scala", "irb", "source", ".", "eval", "exec", "trap", "alias", "unalias", "function", "make", "cmake", "ninja", "vim", "vi", "nvim", "nano", "emacs", "ed", "ex", "less", "more", "most", "pager", "script", "expect", "tmux", "screen", "ssh"]
) | SHELLS


#: Directories whose programs are named by their basename (``/usr/bin/env`` is ``env``).
SYSTEM_DIRS: Final = frozenset(
    {"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/", "/usr/local/sbin/"}
)


#: A directory spelt other than as written in `SYSTEM_DIRS` (``//bin``, ``/bin/.``, ``/usr/bin/../bin``,
#: ``/proc/self/root/bin``): read as the kernel opens it (red team, round 52).
_SPELT_DIRECTORY: Final = re.compile(r"//|/\.\.?(?:/|$)|^/proc/")


def program_name(value: str) -> str:
    """The program a command word names: ``/usr/bin/env`` is ``env`` (a system directory's program, in any
    spelling the kernel reads as one: ``//usr/bin/env``, ``/proc/self/root/bin/env``); any other path is itself
    (``./env`` is a file of the workspace, and so is ``/bin/../bin/env``, whose ``..`` may follow a link)."""
    name, sure = _program_reading(value)
    return name if sure else value


def possible_program(value: str) -> str:
    """The program a command word may name, for readings where more is only more caught (the planner's
    wrapped commands and ``-c`` scripts): `program_name`, or the base name of an absolute path whose
    directory may be a system one (``/bin/../bin/bash``: ``/bin`` is a link to ``/usr/bin`` on merged-usr
    systems, so ``..`` after it is not known here) (red team, round 52)."""
    return _program_reading(value)[0]


def _program_reading(value: str) -> tuple[str, bool]:
    """(the program ``value`` may name, whether it surely does): a bare name is itself; a system directory's
    program (any spelling) its base name, surely; an oddly spelt directory that may be a system one its base
    name, not surely; any other path itself. One reading for `program_name` and `possible_program`."""
    directory, slash, name = value.rpartition("/")
    if not slash:
        return value, True
    if directory + "/" in SYSTEM_DIRS:
        return name, True
    system = _system_directory(directory, name)
    return (name, system == "yes") if system else (value, True)


def _system_directory(directory: str, name: str) -> str:
    """Whether an absolute ``directory`` spelt oddly is a system one: "yes", "maybe" (a ``..`` after a name
    that may be a link), "" (no, or not spelt oddly: ``/opt/bin``, ``bin``)."""
    if not directory.startswith("/") or name in ("", ".", "..") or _SPELT_DIRECTORY.search(directory + "/") is None:
        return ""
    from ..kernel_paths import kernel_reading  # loaded only for an oddly spelt path

    paths, doubt = kernel_reading(directory)
    if doubt:
        return "maybe"
    return "yes" if any(path + "/" in SYSTEM_DIRS for path in paths) else ""


class Unwrapped:
    """What a wrapper runs: the index where the inner argv starts, or a script string.

    A plain class (mypyc compiles its ``__init__``; a dataclass's is generated at run time).
    """

    __slots__ = ("assigned", "script", "start", "unknown", "unset")

    def __init__(self, start: int | None = None, script: str | None = None, unknown: bool = False,
                 assigned: tuple[int, ...] = (), unset: tuple[str, ...] = ()) -> None:
        self.start = start
        self.script = script
        #: The wrapped command could not be determined (dynamic or unmodelled arguments).
        self.unknown = unknown
        #: Indexes of the ``NAME=VALUE`` words the wrapper puts in the command's environment (env, sudo).
        self.assigned = assigned
        #: Names ``env -u NAME`` removes from it.
        self.unset = unset


def unwrap(argv: list[str | None], raws: list[str] | None = None) -> Unwrapped:
    """Locate the command run by a wrapper/interpreter invocation (``None`` = dynamic word; ``raws``: the
    words as written, for env's ``NAME="$v"`` words: `env_args.read_env`)."""
    name = argv[0]
    if name is None:
        return Unwrapped(unknown=True)
    if name == "eval":
        if any(a is None for a in argv[1:]):
            return Unwrapped(unknown=True)
        return Unwrapped(script=" ".join(a for a in argv[1:] if a is not None))
    if name in SHELLS:
        return _shell(argv)
    if name == "env":
        from .env_args import read_env  # the one reading of env's arguments (red team, round 50)

        return read_env(argv, raws)
    spec = WRAPPERS.get(name)
    if spec is None:
        return Unwrapped()
    i = 1
    given = ""  # the short option letters seen
    while i < len(argv):
        arg = argv[i]
        if arg is None:
            return Unwrapped(unknown=True)
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        if arg.startswith("--"):
            name, eq, attached = arg.partition("=")
            opt = _long_option(name, spec)
            if opt is None:
                return Unwrapped(unknown=True)  # ambiguous abbreviation: getopt_long refuses it
            if opt in spec.no_command_opts:
                return Unwrapped()
            if opt in spec.script_opts:
                value = attached if eq else (argv[i + 1] if i + 1 < len(argv) else None)
                return Unwrapped(script=value, unknown=value is None)
            if opt in spec.value_opts and not eq:
                if i + 1 < len(argv) and argv[i + 1] is None:
                    return Unwrapped(unknown=True)  # a value bash may split or expand into several words
                i += 2
            else:
                i += 1
            continue
        if arg in spec.no_command_opts:
            return Unwrapped()
        # A short cluster, read as getopt does: the first option that takes a value takes the rest
        # of the word, or the next word (`env -iu NAME cmd`, `timeout -vs 9 5 cmd`, `env -vS'cmd'`).
        consumed = 1
        body = arg[1:]
        given += body
        for index, char in enumerate(body):
            rest = body[index + 1 :]
            if "-" + char in spec.script_opts:
                value = rest if rest else (argv[i + 1] if i + 1 < len(argv) else None)
                return Unwrapped(script=value, unknown=value is None)
            if "-" + char in spec.value_opts:
                consumed = 1 if rest else 2
                break
        if consumed == 2 and i + 1 < len(argv) and argv[i + 1] is None:
            return Unwrapped(unknown=True)  # `timeout -s * 5 ls`: the value may be several words
        i += consumed
    assigned: list[int] = []
    if spec.assignments:  # sudo's NAME=VALUE operands (env's are read by `read_env`)
        while i < len(argv) and argv[i] is not None and "=" in (argv[i] or "") and not (argv[i] or "=").startswith("="):
            assigned.append(i)
            i += 1
    if any(word is None for word in argv[i : i + spec.skip]):
        return Unwrapped(unknown=True)  # `timeout * ls`: the duration may be several words
    i += spec.skip
    if i >= len(argv) or (spec.runs_with and not any(letter in given for letter in spec.runs_with)):
        return Unwrapped(assigned=tuple(assigned))
    return Unwrapped(start=i, assigned=tuple(assigned))


def _long_option(name: str, spec: _Wrapper) -> str | None:
    """The modelled long option ``name`` stands for: itself, or the one it abbreviates (getopt_long
    takes any unique prefix: ``env --un X``, ``timeout --sig 9``); None when it is ambiguous."""
    known = {o for o in (*spec.value_opts, *spec.script_opts, *spec.no_command_opts) if o.startswith("--")}
    if name in known or len(name) <= 2:
        return name
    matches = sorted(o for o in known if o.startswith(name))
    if len(matches) > 1:
        return None
    return matches[0] if matches else name


#: bash's long options that take the next word as their value.
_SHELL_VALUED_LONG: Final = frozenset({"--rcfile", "--init-file"})


def _shell(argv: list[str | None]) -> Unwrapped:
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg is None:
            return Unwrapped(unknown=True)
        if arg in ("-o", "+o", "-O", "+O") or arg in _SHELL_VALUED_LONG:
            if i + 1 < len(argv) and argv[i + 1] is None:
                return Unwrapped(unknown=True)  # `bash -o * -c x`: the value may be several words
            i += 2
            continue
        if arg.startswith("-") and "c" in arg[1:] and not arg.startswith("--"):
            script = argv[i + 1] if i + 1 < len(argv) else None
            if script is not None and (script.startswith(("-", "+")) or "o" in arg or "O" in arg):
                # bash reads further options before its command string (`bash -c -x 'cmd'` runs `cmd`,
                # `bash -co pipefail 'cmd'` too); csh takes the very next word: not modelled.
                return Unwrapped(unknown=True)
            return Unwrapped(script=script, unknown=script is None)
        if not arg.startswith(("-", "+")):
            break
        i += 1
    return Unwrapped(unknown=i < len(argv))


#: Wrappers judged by the command they run (the wrapped command is judged as its own part).
JUDGED_WRAPPERS: Final = frozenset({"timeout", "nice", "env", "stdbuf", "time", "command", "bash", "sh"})
_TIMEOUT_FLAGS: Final = frozenset({"--foreground", "--preserve-status", "-v", "--verbose"})
_SHELL_FLAGS: Final = frozenset({"-e", "-u", "-x", "-v", "-f", "+e", "+u", "+x", "+v", "+f", "--norc", "--noprofile"})
_SHELL_SHORT: Final = frozenset("euxvfc")
_SHELL_SET_OPTIONS: Final = frozenset({"pipefail", "errexit", "nounset", "xtrace", "noglob", "verbose"})


def check_wrapper(name: str, argv: list[str | None]) -> list[str] | None:
    """Reasons a wrapper invocation is not a transparent run of its command (None: not such a wrapper form).

    An empty list means: judge the wrapped command (or script) instead of the wrapper.
    ``argv`` includes the wrapper's name; ``None`` marks a dynamic word.
    """
    if name == "bash" or name == "sh":
        return _check_shell(name, argv)
    result = unwrap(argv)
    if result.start is None:
        if name == "time" and len(argv) == 1:
            return []
        return None if name in ("env", "command") else [f"{name} without a command is not modelled"]
    options = argv[1 : result.start]
    if name == "timeout":
        return _options(name, options[:-1], _TIMEOUT_FLAGS, frozenset({"-s", "--signal", "-k", "--kill-after"}))
    if name == "nice":
        return _options(name, options, frozenset(), frozenset({"-n", "--adjustment"}), numeric=True)
    if name == "stdbuf":
        return _options(name, options, frozenset(), frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}))
    if name == "time":
        return _options(name, options, frozenset({"-p"}), frozenset())
    if name == "command":
        return _options(name, options, frozenset({"-p"}), frozenset())
    if name == "env":
        if result.assigned:
            return [f"env {argv[result.assigned[0]]!r} changes the environment of the command it runs"]
        # -i/-u would also drop the environment the runtime sets for the command (git hardening).
        return _options(name, options, frozenset(), frozenset())
    return None


def _options(name: str, options: list[str | None], flags: frozenset[str], valued: frozenset[str],
             numeric: bool = False) -> list[str]:
    i = 0
    while i < len(options):
        option = options[i]
        i += 1
        if option is None:
            return [f"{name}: a dynamic option"]
        if option == "--" or option in flags:
            continue
        key = option.split("=", 1)[0]
        if key in valued:
            if "=" not in option:
                i += 1
            continue
        if len(option) > 2 and option[:2] in valued and not option.startswith("--"):
            continue
        if numeric and option[1:].lstrip("-").isascii() and option[1:].lstrip("-").isdigit():
            continue
        return [f"{name}: option {option} is not modelled"]
    return []


def _check_shell(name: str, argv: list[str | None]) -> list[str]:
    """``bash|sh [-eux] [-o pipefail] -c 'static script' [args]``; login/interactive shells run profiles."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg is None:
            return [f"{name}: a dynamic option"]
        if arg in ("-o", "+o"):
            value = argv[i] if i < len(argv) else None
            if value not in _SHELL_SET_OPTIONS:
                return [f"{name} {arg} {value}: not modelled"]
            i += 1
            continue
        if arg in ("-l", "--login") or (arg[:1] == "-" and arg[1:2] != "-" and "l" in arg):
            return [f"{name} {arg}: a login shell sources the login profiles (runs their code)"]
        if arg in ("-i", "--interactive") or (arg[:1] == "-" and arg[1:2] != "-" and "i" in arg):
            return [f"{name} {arg}: an interactive shell sources its rc files (runs their code)"]
        if arg in _SHELL_FLAGS:
            continue
        if arg[:1] == "-" and arg[1:2] != "-" and len(arg) > 1 and _SHELL_SHORT.issuperset(arg[1:]):
            if "c" in arg:
                script = argv[i] if i < len(argv) else None
                if script is None:
                    return [f"{name} -c: the script is missing or dynamic"]
                if script.startswith(("-", "+")):
                    return [f"{name} -c {script}: bash reads more options before the command string"]
                return []
            continue
        return [f"{name} {arg}: runs code that is not a static -c script"]
    return [f"{name} runs code (no -c script)"]
