"""Environment variables that make a program load code no command rule reads.

``LD_PRELOAD=./x.so ls`` runs the library's code inside ``ls``; ``PATH=.:$PATH ls`` runs whatever
``./ls`` is; ``printf … > os.py; PYTHONPATH=. python3 s.py`` imports the file the command just
wrote. A ``Bash(rm:*)`` deny rule reads program names and words, none of which show that code (red
team, round 30). Three classes, from the most to the least reach:

- native loaders (the dynamic linker's, iconv's, OpenSSL's modules): code in every program, read-only
  ones too; always counted; so are ``BASH_FUNC_NAME%%`` functions, which every bash started below
  defines (round 35);
- ``PATH`` (and ``GIT_EXEC_PATH``): an entry that is relative or empty (the working directory,
  which the repository fills), not static, or a directory the command writes a program in, makes a
  program name mean a file there;
- search paths and start-up files of interpreters, shells and tools (``PYTHONPATH``, ``PERL5LIB``,
  ``BASH_ENV``, ``ZDOTDIR``, any ``…PATH``/``…LIB``/``…RC``/``…FILE``… name, ``npm_config_…`` in lower
  case too), and programs an options variable names (``GOFLAGS=-toolexec=./q``): counted when the command
  writes (or may write) below what they name; files that exist before the call are the workspace's
  code, like a script (round 29's rule).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence

__all__ = ["assignments", "loader_code"]

#: Variables that load native code into any program, whatever their value.
_NATIVE = frozenset({
    "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "LD_ORIGIN_PATH", "GCONV_PATH", "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES",
    "GIO_MODULE_DIR", "GST_PLUGIN_PATH", "QT_PLUGIN_PATH", "GTK_PATH", "SASL_PATH",
})
#: Names that point a program at code to load or run at start-up (``PYTHONPATH``, ``RUBYLIB``,
#: ``BASH_ENV``, ``ZDOTDIR``, ``R_PROFILE_USER``, ``VIMINIT``…).
_SEARCH = re.compile(
    r"[A-Z0-9_]*(?:PATH|LIB|LIBS|HOME|DOTDIR|RC|ENV|INIT|STARTUP|PROFILE|PROFILE_USER|CONF|CONFIG|"
    r"CONFIG_GLOBAL|CONFIG_SYSTEM|GEMFILE|USERBASE|"
    # Round 42: a file named as one (``PIP_CONFIG_FILE``, ``YARN_RC_FILENAME``, less's ``LESSKEYIN``).
    r"FILE|FILENAME|KEYIN|LESSKEY)"
)
#: Variables holding a program's options (``GOFLAGS``, ``RUSTFLAGS``, ``CFLAGS``, ``TAR_OPTIONS``, ``MANOPT``).
_OPTIONS = re.compile(r"[A-Z0-9_]*(?:FLAGS|OPTIONS|OPTS|OPT)")
#: Names that only look like search paths: safe or data (``NODE_ENV``, ``MANPATH``, ``PKG_CONFIG_PATH``).
_DATA = frozenset({"NODE_ENV", "RAILS_ENV", "RACK_ENV", "MIX_ENV", "APP_ENV", "FLASK_ENV", "MANPATH", "INFOPATH",
                   "PKG_CONFIG_PATH", "CDPATH", "MAILPATH", "TMPDIR", "HISTFILE"})
_ASSIGNMENT = re.compile(r"(?:export\s+|declare\s+-\w*x\w*\s+)?([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)", re.DOTALL)
#: A ``PATH`` entry that only passes the inherited value on.
_INHERITED = re.compile(r"\$\{?PATH\}?")
#: The home directory (not the workspace): an entry below it is a file that exists, as ``/opt/bin``.
_HOME = re.compile(r"(?:\$HOME|\$\{HOME\}|~)(?=/|$)")
#: Program directories of the system and its package managers: only there (or in the home directory)
#: is an absolute ``PATH`` entry a place no call of the session wrote (bwrap and docker mount them
#: read-only or own them). ``/work/ws/bin`` (the repository by its absolute path, which ``bin``
#: asked for) and ``/tmp/w`` (filled by an earlier call) are not (red team, round 31).
_SYSTEM_DIR = re.compile(
    r"/(?!usr/tmp(?:/|$))(?:usr|bin|sbin|lib|lib32|lib64|libexec|opt|snap|nix|gnu|Library|System|Applications|"
    r"home/linuxbrew)(?:/|$)"
)


def assignments(assigned: Iterable[str], words: Iterable[str], names: Iterable[str]) -> dict[str, str | None]:
    """Each variable a part sets, with its value as written (None when not known): its assignments,
    ``env NAME=VALUE`` words (and ``make NAME=VALUE``: make exports them to recipes), ``env_names``."""
    found: dict[str, str | None] = {}
    for word in (*assigned, *words):
        match = _ASSIGNMENT.fullmatch(word.strip())
        if match:
            found[match.group(1)] = _unquoted(match.group(2))
    for name in names:
        found.setdefault(name, None)
    return found


def loader_code(
    variables: dict[str, str | None], dirs: Sequence[str], others: Sequence[tuple[str, Sequence[str]]]
) -> str:
    """Why ``variables`` make the part load code no rule reads ("" when they do not); ``others`` are
    the other parts' texts and writes ("" for a write whose path is not known)."""
    from .unread_code import is_command_variable  # heavier than this module: only when a part sets one
    from .value_programs import variable_program_paths

    for name, path in variable_program_paths(variables, is_command_variable):
        places = {os.path.normpath(os.path.join(d, path)) for d in dirs or ("",)}
        for text, writes in others:
            made = sorted(places & set(writes))
            if made:  # `cp "$x" q; CC=./q make`: the program it names is one the command writes (round 37)
                return f"{name} names the program {made[0]}, which {text!r} writes in the same command"
    # Round 42: a program's options in a variable (``GOFLAGS=-toolexec=./q``, ``RUSTFLAGS='-C linker=./q'``,
    # ``CFLAGS=-B./b/``, ``MAKEFLAGS='SHELL=./q'``) name a program, or a directory of programs, too.
    for name, value in variables.items():
        if not value or not _OPTIONS.fullmatch(name):
            continue
        why = option_write(name, value, dirs, others)
        if why:
            return why
    for name, value in variables.items():
        if name in _NATIVE:
            return f"{name} loads native code into the programs it runs"
        if name.startswith("BASH_FUNC_"):  # not a shell assignment: only `env`-like words set it
            return f"{name} defines a function in every bash the part starts: its body runs under that name"
        if name == "PATH" or name.endswith("EXEC_PATH"):  # GIT_EXEC_PATH: where git finds git-<cmd>
            why = _path_entries(name, value, dirs, others)
            if why:
                return why
        elif name not in _DATA and (_SEARCH.fullmatch(name) or ("_" in name and _SEARCH.fullmatch(name.upper()))):
            why = _written_below(name, value, dirs, others)
            if why:
                return why
    return ""


def option_write(
    name: str, value: str, dirs: Sequence[str], others: Sequence[tuple[str, Sequence[str]]]
) -> str:
    """Why the options ``value`` (of a variable or a program's own words) names a file or a directory of
    programs the command writes, "" when none (`option_files`)."""
    for path, below in option_files(value):
        places = {os.path.normpath(os.path.join(d, path)) for d in dirs or ("",)}
        for text, writes in others:
            made = sorted(w for w in writes if w and any(_holds(place, w, below=below) for place in places))
            if made:
                return f"{name} gives a program {path}, and {text!r} writes {made[0]} in the same command"
    return ""


def option_files(value: str) -> list[tuple[str, bool]]:
    """(file, whether what lies below it counts) for each place an options value may name: a path
    with a ``/`` (``-B./b/``, ``-C linker=./q``, ``SHELL=./q``: below counts), ``.`` or ``..``
    (``-B.``, ``-B .``: the files in it), and a bare name after ``=`` or ``:`` or in place of a short
    option's value (``-javaagent:a.jar``, ``-fplugin=p.so``: that file). Why: round 42 read only words
    holding a ``/``, so ``CFLAGS=-B.`` with ``./as`` written and ``JAVA_TOOL_OPTIONS=-javaagent:a.jar``
    passed (red team round 43). Run-time pieces name nothing known here."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    found: list[tuple[str, bool]] = []
    for word in words:
        word = word.lstrip("!|")
        if word.startswith("-"):
            word = word.partition("=")[2] if word.startswith("--") else word[2:]
        for piece in re.split(r"[:=,]", word):
            if not piece or "$" in piece or "`" in piece:
                continue
            found.append((piece, "/" in piece))
    return found


def _path_entries(
    name: str, value: str | None, dirs: Sequence[str], others: Sequence[tuple[str, Sequence[str]]]
) -> str:
    """Why a program search path (``PATH``, ``GIT_EXEC_PATH``) makes names mean files no rule reads."""
    if value is None:
        return f"it sets {name} to a value not known here, so its program names may mean any file"
    for entry in value.split(":"):
        if _INHERITED.fullmatch(entry):
            continue
        home = _HOME.match(entry)
        rest = entry[home.end() :] if home else entry
        if not entry or not (entry.startswith("/") or home) or "$" in rest or "`" in rest:
            shown = entry or "(empty: the working directory)"
            return f"{name} holds {shown}, so its program names may mean files of the workspace or of a run-time value"
        if (not home and not _SYSTEM_DIR.match(os.path.normpath(entry))) or "/.." in rest:
            return (
                f"{name} holds {entry}, outside the system's program directories (the workspace by its "
                "absolute path, /tmp, or files an earlier call wrote), so its program names may mean any file"
            )
    # Absolute entries: only a named write counts (``export PATH=/opt/x/bin:$PATH; ls`` leaves ``ls``
    # not read-only, so a write it does not name would count every such command).
    # Only a program file in the directory itself counts (PATH is not searched below it).
    return _written_below(name, value, dirs, [(t, [w for w in ws if w]) for t, ws in others], below=False)


def _written_below(
    name: str, value: str | None, dirs: Sequence[str], others: Sequence[tuple[str, Sequence[str]]],
    below: bool = True,
) -> str:
    """Why a part that sets ``name`` loads a file another part writes at or below what it names (or
    may write: a part whose writes are not known, beside a value that is not static)."""
    entries = [e for e in (value or "").split(":") if e and not _INHERITED.fullmatch(e)]
    dynamic = value is None or any("$" in e or "`" in e or e.startswith("~") for e in entries)
    dynamic = dynamic or (not dirs and any(not e.startswith("/") for e in entries))
    places = {os.path.normpath(os.path.join(d, e)) for e in entries for d in dirs or ("",)}
    for text, writes in others:
        if "" in writes or (dynamic and writes):
            return f"{name} names code that {text!r} may write in the same command (its writes are not all known)"
        for write in writes:
            if any(_holds(place, write, below) for place in places):
                return f"{name} names {write}, which {text!r} writes in the same command"
    return ""


def _holds(place: str, write: str, below: bool) -> bool:
    """Whether ``write`` is ``place``, a file in it, or (``below``) anywhere under it."""
    if below:
        return write == place or write.startswith(place.rstrip("/") + "/")
    return write == place or os.path.dirname(write) == place


def _unquoted(value: str) -> str:
    """A value without the quotes around it (``'a b'`` -> ``a b``); inner quotes stay (fail closed)."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
