"""Places the operator's own environment makes host programs load from, as home names.

Why (red team round 38: trust): the home's names are not the only places programs obey. The
operator's ``PATH`` finds every program by name (a ``git`` in a ``bin/`` of a tools repository on it
shadows the host's in every later shell), ``PYTHONSTARTUP``/``BASH_ENV``/``ENV`` name files run at
start, ``CARGO_HOME``/``GNUPGHOME``/``DOCKER_CONFIG``… move the home's directories elsewhere. With
one of them inside the workspace a command wrote there unguarded (round 37 honoured only
``XDG_CONFIG_HOME`` and ``PYTHONUSERBASE``). The rule: a variable of shellrt's own environment (the
operator's, as started) that names such a place makes it stand for the home name it replaces, and
`_protect_home` guards it by that name. Read from ``os.environ`` at each read (cheap, no disk).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import NamedTuple

__all__ = [
    "MODULE_VARIABLES",
    "PathPrograms",
    "env_key",
    "module_paths",
    "operator_places",
    "path_entries",
    "path_programs",
    "path_word",
    "project_path_dirs",
    "relative_path_entries",
]

#: Variables naming a directory -> the home directory they replace (its guarded names apply there).
_DIRS: dict[str, str] = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "PYTHONUSERBASE": ".local",
    "CARGO_HOME": ".cargo",
    "RUSTUP_HOME": ".rustup",
    "GNUPGHOME": ".gnupg",
    "DOCKER_CONFIG": ".docker",
    "IPYTHONDIR": ".ipython",
    "JUPYTER_CONFIG_DIR": ".jupyter",
    "PYENV_ROOT": ".pyenv",
    "RBENV_ROOT": ".rbenv",
    "NVM_DIR": ".nvm",
    "VOLTA_HOME": ".volta",
    "PIPX_HOME": ".local/pipx",
    "BUN_INSTALL": ".bun",
    "DENO_INSTALL": ".deno",
    "ASDF_DATA_DIR": ".asdf",
    "SDKMAN_DIR": ".sdkman",
    "GOPATH": "go",  # a list: each entry's bin/ is where `go install` puts programs
    # round 39: where `gem install` puts gems every later `require` activates (the highest version
    # wins) and their programs; local::lib's root (its lib/perl5 is on PERL5LIB)
    "GEM_HOME": ".gem",
    "GEM_PATH": ".gem",
    "PERL_LOCAL_LIB_ROOT": "perl5",
    # round 40: Gradle's user home (init.d scripts, gradle.properties: every build of any project)
    "GRADLE_USER_HOME": ".gradle",
}
#: Variables naming files a program loads at start (``:``-lists where the program reads one).
_FILES = (
    "PYTHONSTARTUP",
    "BASH_ENV",
    "ENV",
    "INPUTRC",
    "LESSKEY",
    "PSQLRC",
    "MYVIMRC",
    "IRBRC",
    "R_PROFILE_USER",
    "R_ENVIRON_USER",
    "NPM_CONFIG_USERCONFIG",
    "npm_config_userconfig",
    "PIP_CONFIG_FILE",
    "UV_CONFIG_FILE",
    "WGETRC",
    "RIPGREP_CONFIG_PATH",  # ``--pre=PROGRAM`` runs for every file searched
    "STARSHIP_CONFIG",  # custom modules' commands run at every prompt
    "KUBECONFIG",  # a list; a user's exec plug-in runs at every kubectl
    "AWS_CONFIG_FILE",  # credential_process
    "SCREENRC",
)
#: Module search variables of other interpreters -> the language whose module names a directory
#: on them may shadow (round 40 trust3). Lua's are ``;``-lists of templates (``/x/?.lua``).
_MODULE_VARS: dict[str, str] = {
    "PERL5LIB": "perl",
    "PERLLIB": "perl",
    "RUBYLIB": "ruby",
    "CLASSPATH": "java",
    # round 40 review18: searched after node_modules, but a package's optional dependency
    # (``try { require("supports-color") }`` in debug, ``bufferutil`` in ws) falls through to it
    "NODE_PATH": "node",
    **{f"LUA_{kind}PATH{v}": "lua" for kind in ("", "C") for v in ("", "_5_1", "_5_2", "_5_3", "_5_4", "_5_5")},
}
#: What follows the ``?`` of a Lua template whose files are named by the module alone (``?.lua``).
_LUA_PLAIN = frozenset({".lua", ".so", ".dll", "/init.lua"})
#: Interpreters' option variables (round 40 trust3): each option naming a file run at every start
#: (``NODE_OPTIONS=--require /x.js``, ``JAVA_TOOL_OPTIONS=-javaagent:/x.jar``) or a module directory
#: searched first (``RUBYOPT=-I/x``, ``PERL5OPT=-I/x``) -> the language of such a directory.
_OPTION_VARS: dict[str, str] = {
    "NODE_OPTIONS": "node",
    "RUBYOPT": "ruby",
    "PERL5OPT": "perl",
    "JAVA_TOOL_OPTIONS": "java",
    "JDK_JAVA_OPTIONS": "java",
    "_JAVA_OPTIONS": "java",
}
#: An option naming a file (group 1, or 2 as the next word), or a directory searched first (group 3).
_FILE_OPTION = re.compile(
    r"^(?:(?:--require|--import|--loader|--experimental-loader|-r)=?(.*)|-(?:javaagent|agentpath):([^=]*).*"
    r"|-I(.*)|-Xbootclasspath/[ap]:(.*))$"
)
#: The module search variables `module_paths` reads (a cache of it is stale when one changed).
MODULE_VARIABLES: tuple[str, ...] = (*_MODULE_VARS, *_OPTION_VARS)
#: Variables whose ``@file`` value names a file run at every start (``LUA_INIT=@~/x.lua``).
_INIT_VARS = tuple(f"LUA_INIT{v}" for v in ("", "_5_1", "_5_2", "_5_3", "_5_4", "_5_5"))
#: Variables that are ``:``-separated lists.
_LISTS = frozenset({"PATH", "PYTHONPATH", "GOPATH", "GEM_PATH", "KUBECONFIG"})
_NAMES = ("PATH", "PYTHONPATH", *_DIRS, *_FILES, *_MODULE_VARS, *_INIT_VARS, *_OPTION_VARS)
#: Variables naming the project's own PATH (`project_path_dirs`): part of `env_key`.
_PROJECT_NAMES = ("VIRTUAL_ENV", "CONDA_PREFIX", "DIRENV_DIR")
#: Entries looked at in all (a ``PATH`` of thousands of entries costs no more).
_ENTRIES = 256
#: Jars whose manifests `module_paths` reads in all, and the largest manifest read.
_MANIFEST_JARS, _MANIFEST_BYTES = 64, 64 << 10
#: Names `path_programs` lists in all (a system's PATH holds a few thousand).
_PROGRAM_NAMES = 65_536


class PathPrograms(NamedTuple):
    """What `path_programs` read of the operator's ``PATH``."""

    #: Each program name -> the real directories (by ``real``) of absolute entries holding it.
    places: dict[str, set[str]]
    #: Each program name -> the least index in ``PATH`` of an absolute entry holding it.
    first: dict[str, int]
    #: False when the read stopped at its bound: a name not listed may be held further on.
    complete: bool


def path_programs(real: Callable[[str], str]) -> PathPrograms:
    """The names of the programs the operator's ``PATH`` finds (every absolute entry's names). A file
    of that name in a ``PATH`` directory inside the workspace shadows the program the operator means
    (``git``, ``ls``, ``sudo``: not the project's code); a new name there (an entry point ``pip
    install`` puts in an activated venv's ``bin/``) is the project's own, run by choosing it (round 18's
    judgement of ``node_modules/.bin``). Incomplete past `_PROGRAM_NAMES` entries read: the caller
    fails closed (round 38 review4: a command's 65,536 files in a workspace directory first on
    ``PATH`` used the bound up, ``/usr/bin`` went unread and its ``git`` was "a new name")."""
    places: dict[str, set[str]] = {}
    first: dict[str, int] = {}
    count = 0
    for index, entry in enumerate(path_entries()):
        if not os.path.isabs(entry) or "$" in entry:
            continue
        place = real(entry)
        try:
            with os.scandir(entry) as found:
                for item in found:
                    places.setdefault(item.name, set()).add(place)
                    first.setdefault(item.name, index)
                    count += 1
                    if count >= _PROGRAM_NAMES:
                        return PathPrograms(places, first, False)
        except OSError:
            continue
    return PathPrograms(places, first, True)


def path_entries() -> list[str]:
    """The operator's ``PATH`` entries (the first `_ENTRIES`), a leading ``~`` expanded as bash does
    when it searches them. Why (red team round 39 trust2): ``export PATH="~/dotfiles/bin:$PATH"`` (the
    tilde quoted) works in bash, whose search expands it; read as written it was a relative entry
    naming ``<any directory>/~/dotfiles/bin``, and the real directory's plants were kept."""
    entries = os.environ.get("PATH", "").split(":")[:_ENTRIES]
    return [os.path.expanduser(e) if e.startswith("~") and "$" not in e else e for e in entries]


def relative_path_entries() -> tuple[tuple[int, str], ...]:
    """(index in ``PATH``, the entry normalised: ``.`` for the directory itself) of each relative
    entry of the operator's ``PATH``. Why (round 38 review4): an empty entry (``PATH=:/usr/bin``, a
    stray colon) or ``.`` names the directory the operator's next shell runs in, ``bin`` its ``bin/``:
    a program there shadows one later in ``PATH`` wherever the operator runs it, so every directory of
    the workspace holds such a place. A ``..`` names a directory of some directory too: dropped."""
    found: list[tuple[int, str]] = []
    for index, entry in enumerate(path_entries()):
        if os.path.isabs(entry) or "$" in entry or "`" in entry:
            continue
        parts = [p for p in os.path.normpath(entry or ".").split("/") if p not in ("", ".", "..")]
        found.append((index, "/".join(parts) or "."))
    return tuple(found)


def project_path_dirs(real: Callable[[str], str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(The ``bin/`` of the environment the operator activated -- ``$VIRTUAL_ENV``, ``$CONDA_PREFIX``
    --, the directories direnv loaded an ``.envrc`` for -- ``$DIRENV_DIR`` --), real paths by ``real``.
    Why (red team round 39 trust2): every other ``PATH`` directory in the workspace is guarded whole,
    as ``~/bin`` is (a new name there -- ``sl``, ``gti``, ``git-comit`` that ``git comit`` runs -- is
    what the operator's next typo runs, in every shell); these are the project's own PATH, present
    only while the operator works in it, where ``pip install`` adds entry points (round 38's judgement)."""
    envs = frozenset(
        real(os.path.join(value, "bin"))
        for value in (os.environ.get(name, "") for name in ("VIRTUAL_ENV", "CONDA_PREFIX"))
        if os.path.isabs(value) and "$" not in value
    )
    direnv = os.environ.get("DIRENV_DIR", "").removeprefix("-")
    return envs, ((real(direnv),) if os.path.isabs(direnv) else ())


def env_key() -> str:
    """What `operator_places` depends on: a cache of it is stale when this changed."""
    return "\0".join(os.environ.get(name, "") for name in (*_NAMES, *_PROJECT_NAMES))


def operator_places(real: Callable[[str], str]) -> list[tuple[str, str, str | None]]:
    """(real path by ``real``, the variable, the home directory it replaces or None for a file or a
    ``PATH`` directory) of each absolute place the variables name; a relative entry (``PATH=.:…``)
    names a place that moves with the cwd: not one place."""
    found: list[tuple[str, str, str | None]] = []
    for name in _NAMES:
        value = os.environ.get(name, "")
        # Bounded per variable (round 38 review4: a bound in all, PATH first, let a PATH of 256
        # entries hide PYTHONSTARTUP, BASH_ENV, CARGO_HOME...): ~30 variables, 256 entries each.
        if name in _MODULE_VARS or name in _OPTION_VARS:
            continue  # `module_paths`
        if name in _INIT_VARS:
            value = value[1:] if value.startswith("@") else ""  # otherwise Lua code, no file
        listed = value.split(":") if name in _LISTS else [value]
        entries = path_entries() if name == "PATH" else listed[:_ENTRIES]
        for entry in entries:
            if not os.path.isabs(entry) or "$" in entry or "`" in entry:
                continue
            found.append((real(entry), name, _DIRS.get(name)))
    return found


def module_paths(real: Callable[[str], str]) -> list[tuple[str, str, bool]]:
    """(real path by ``real``, the language, whether it is a directory) of each absolute place the
    operator's ``PERL5LIB``, ``PERLLIB``, ``RUBYLIB``, ``LUA_PATH``/``LUA_CPATH`` (and their
    ``_5_x`` forms) and ``CLASSPATH`` name. Why (red team round 40 trust3): like ``PYTHONPATH``
    (round 39), each comes before the interpreter's own libraries -- a ``strict.pm`` or
    ``rubygems.rb`` there runs in every perl or ruby the operator starts -- and a ``CLASSPATH``
    directory's ``META-INF/services`` names what ``javac`` (annotation processors) and the JDK load.
    A Lua template's directory is what comes before its first ``?``; one not of the form ``dir/?.lua``
    (``.so``, ``.dll``, ``/init.lua``) is language ``lua?``, every file counting (round 40 review18:
    ``dir/mod_?.lua`` loads ``mod_socket.lua`` for ``socket``); a ``CLASSPATH`` ``dir/*`` names
    every jar of ``dir`` (language ``java*``); a named jar is a file."""
    found: list[tuple[str, str, bool]] = []
    for name, language in _MODULE_VARS.items():
        value = os.environ.get(name, "")
        if not value:
            continue
        entries = value.split(";" if language == "lua" else ":")[:_ENTRIES]
        for entry in entries:
            if "$" in entry or "`" in entry:
                continue
            kind, is_dir = language, True
            if language == "lua":
                head, _, tail = entry.partition("?")
                entry = head if head.endswith("/") else os.path.dirname(head)
                if not (head.endswith("/") and tail in _LUA_PLAIN):
                    kind = "lua?"  # ``mod_?.lua``, ``?.luac``, no ``?``: any file there may load (review18)
            elif language == "java" and entry.endswith("/*"):
                entry, kind = entry[:-2], "java*"
            elif language == "java" and entry.lower().endswith((".jar", ".zip")):
                is_dir = False
            if os.path.isabs(entry):
                found.append((real(entry), kind, is_dir))
    jars = [path for path, kind, is_dir in found if kind == "java" and not is_dir]
    jars += [
        os.path.join(path, n) for path, kind, _ in found if kind == "java*" for n in _listing(path, _MANIFEST_JARS)
    ]
    found += _manifest_places(jars, real)
    for name, language in _OPTION_VARS.items():
        found += _option_places(os.environ.get(name, ""), language, real)
    return found


def _listing(directory: str, most: int) -> list[str]:
    """The first ``most`` jar names of ``directory`` (none when it cannot be listed)."""
    try:
        with os.scandir(directory) as entries:
            return [e.name for e in entries if e.name.lower().endswith(".jar")][:most]
    except OSError:
        return []


def _manifest_places(jars: list[str], real: Callable[[str], str]) -> list[tuple[str, str, bool]]:
    """The places the ``Class-Path`` of each jar's manifest names (relative to the jar), and of
    theirs, at most `_MANIFEST_JARS` jars read. Why (round 40 review18): the JVM adds them to the
    class path after the jar: ``tool.jar``'s ``Class-Path: extra.jar deps/`` loaded a command's
    ``extra.jar`` (its ``META-INF/services``) and ``deps/``, unguarded, in every ``javac``."""
    found: list[tuple[str, str, bool]] = []
    todo, seen = list(jars), set[str]()
    while todo and len(seen) < _MANIFEST_JARS:
        jar = todo.pop(0)
        if jar in seen or not os.path.isfile(jar):
            continue
        seen.add(jar)
        for entry in _class_path(jar):
            path = os.path.normpath(os.path.join(os.path.dirname(jar), entry))
            is_dir = entry.endswith("/")
            found.append((real(path), "java", is_dir))
            if not is_dir:
                todo.append(path)
    return found


def _class_path(jar: str) -> list[str]:
    """The file paths ``jar``'s manifest ``Class-Path`` names (URLs ``file:`` or relative, unquoted);
    none when the jar cannot be read."""
    import urllib.parse
    import zipfile

    try:
        with zipfile.ZipFile(jar) as archive:
            info = archive.getinfo("META-INF/MANIFEST.MF")
            if info.file_size > _MANIFEST_BYTES:
                return []
            text = archive.read(info).decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile, ValueError, RuntimeError, NotImplementedError):
        return []
    joined = re.sub(r"\r?\n ", "", text)  # a manifest's continuation lines
    value = next((m.group(1) for m in re.finditer(r"(?im)^class-path:[ \t]*(.*)$", joined)), "")
    paths = []
    for url in value.split()[:_ENTRIES]:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme in ("", "file") and not parsed.netloc:
            paths.append(urllib.parse.unquote(parsed.path))
    return paths


def _option_places(value: str, language: str, real: Callable[[str], str]) -> list[tuple[str, str, bool]]:
    """What ``value`` (an interpreter's option variable) names as `module_paths` does: a file each
    ``--require``/``-r``/``--import``/``--loader``/``-javaagent:``/``-agentpath:`` runs, a directory
    (or jar) each ``-I``/``-Xbootclasspath/a:`` puts first. Why (red team round 40 trust3): the
    interpreter loads it at every start, as ``PYTHONSTARTUP``'s file (round 38)."""
    found: list[tuple[str, str, bool]] = []
    words = value.split()[:_ENTRIES]
    for index, word in enumerate(words):
        m = _FILE_OPTION.match(word)
        if m is None:
            continue
        files, dirs = [m.group(1), m.group(2)], [m.group(3)]
        if m.group(4) is not None:
            dirs = m.group(4).split(":")
        if m.group(1) == "" and index + 1 < len(words):
            files[0] = words[index + 1]  # ``--require /x.js``
        if m.group(3) == "" and index + 1 < len(words):
            dirs = [words[index + 1]]  # ``-I /x``
        for path in files:
            if path and os.path.isabs(path) and "$" not in path:
                found.append((real(path), language, False))
        for path in dirs:
            if path and os.path.isabs(path) and "$" not in path:
                is_jar = path.lower().endswith((".jar", ".zip"))
                found.append((real(path), language, not is_jar))
    return found


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_PATH_MAX = 4096


def path_word(word: str, home: str, *, ssh: bool = False) -> str | None:
    """``word`` of a command line a host program runs through the shell (git's ``core.pager``, ``!``
    aliases, ``credential.helper``; ssh's ``ProxyCommand``, ``Match exec``) as the path it names: ``~/``,
    ``$NAME`` and ``${NAME}`` from the operator's environment (``HOME`` as ``home``), and for ssh its
    ``%d`` (the home); None when it is no absolute path or a name is unset. Why (round 38 review4): a
    portable dotfiles config spells ``$HOME/dotfiles/pager``, ``%d/dotfiles/proxy.sh``; read as
    written, no path, and the script was not guarded."""
    if ssh:
        word = word.replace("%%", "\0").replace("%d", home).replace("\0", "%")
    if word == "~" or word.startswith("~/"):
        word = home + word[1:]
    pieces: list[str] = []
    end = 0
    for m in _VAR.finditer(word):
        name = m.group(1) or m.group(2)
        value = home if name == "HOME" else os.environ.get(name)
        if value is None:
            return None
        pieces += [word[end : m.start()], value]
        end = m.end()
    path = "".join(pieces) + word[end:] if pieces else word
    return path if path.startswith("/") and len(path) < _PATH_MAX else None
