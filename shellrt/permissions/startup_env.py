"""Start-up variables a host program inherits: dropped when they name a place commands write.

Why: a hook runs on the host, as the operator, with the workspace as its cwd. Besides search paths
(`hook_env`), programs load one named file or module at start from variables: ``BASH_ENV``,
``PYTHONUSERBASE`` (its ``.pth`` files run), ``NODE_OPTIONS=--require ./x.js``, ``LD_PRELOAD``.
A relative name there is resolved from the cwd, and an absolute one may lie in a writable root:
either way the host ran what a sandboxed command wrote (red team, round 34). Such a variable is
removed whole (an option list is not ours to rewrite): kept only when every file it can name is
an absolute path `host_path` keeps. A hook that needs another value sets it in its own command.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from shellrt.permissions.env_values import safe_path as _safe

__all__ = [
    "COMMAND_VARIABLES",
    "EXPANDED_VARIABLES",
    "LIBRARY_LIST_VARIABLES",
    "OPTION_VARIABLES",
    "PATH_VARIABLES",
    "UNSAFE_VARIABLES",
    "WORD_LIST_VARIABLES",
    "names_writable",
]

#: Each ``:``-separated entry is a file or directory read or run at start.
PATH_VARIABLES: tuple[str, ...] = (
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONPYCACHEPREFIX",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "XDG_CONFIG_HOME",
    "GEM_HOME",
    "BUNDLE_GEMFILE",
    "NPM_CONFIG_USERCONFIG",
    "PIP_CONFIG_FILE",
    "CARGO_HOME",
    "GOENV",
    # Round 35: the home and XDG directories (git reads ~/.gitconfig, bash ~/.bashrc), git's
    # repository variables, and other runtimes' start-up files and library directories.
    "HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "R_PROFILE",
    "R_PROFILE_USER",
    "R_ENVIRON",
    "R_ENVIRON_USER",
    "R_LIBS",
    "R_LIBS_USER",
    "R_LIBS_SITE",
    "TCL_LIBRARY",
    "TK_LIBRARY",
    "DOTNET_STARTUP_HOOKS",
    "DOTNET_ADDITIONAL_DEPS",
    "DOTNET_ROOT",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "INPUTRC",
    "GNUPGHOME",
    "IRBRC",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "JULIA_DEPOT_PATH",
    "JULIA_LOAD_PATH",
    "GUILE_LOAD_PATH",
    "GUILE_LOAD_COMPILED_PATH",
    "ERL_LIBS",
    "OCAMLPATH",
    "CURL_HOME",
    "WGETRC",
    "LESSKEY",
    "PSQLRC",
    "MYSQL_HOME",
    "MYVIMRC",
    "NPM_CONFIG_GLOBALCONFIG",
    "npm_config_userconfig",
    "npm_config_globalconfig",
    "YARN_RC_FILENAME",
    # Where a hook and git make temporary files: a relative one is a directory commands write.
    "TMPDIR",
    "TMP",
    "TEMP",
    "TEMPDIR",
)
#: Start-up files the shell expands before reading (parameter expansion, command substitution):
#: ``BASH_ENV=/$(sh x.sh)`` runs ``x.sh`` from the cwd whatever path the pieces look like (review
#: of round 35). A ``$`` or a backquote drops them.
EXPANDED_VARIABLES: tuple[str, ...] = ("BASH_ENV", "ENV")
#: Blank-separated directories (a Tcl list): ``TCLLIBPATH=lib`` is the cwd's ``lib``.
WORD_LIST_VARIABLES: tuple[str, ...] = ("TCLLIBPATH",)
#: Lua's ``;``-separated templates; an empty entry (``;;``) is the default, which has ``./?.lua``.
_LUA_PATHS = re.compile(r"LUA_C?PATH(_5_[0-9])?")
#: Lua code or ``@file`` run at start: kept only as ``@`` and a kept absolute path.
_LUA_INIT = re.compile(r"LUA_INIT(_5_[0-9])?")
#: Libraries ``ld.so`` loads into every program: a name with a ``/`` is opened as written.
LIBRARY_LIST_VARIABLES: tuple[str, ...] = ("LD_PRELOAD", "LD_AUDIT")
#: Command-line options a runtime reads at start; some name a file or module to load.
OPTION_VARIABLES: tuple[str, ...] = (
    "NODE_OPTIONS",
    "RUBYOPT",
    "PERL5OPT",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
)
#: A command line a program runs (git, ssh, sudo, editors): its words that are paths.
COMMAND_VARIABLES: tuple[str, ...] = (
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "BROWSER",
)
#: Put the cwd on a search path whatever their value (Perl's ``.`` in ``@INC``).
UNSAFE_VARIABLES: tuple[str, ...] = ("PERL_USE_UNSAFE_INC",)

#: Options whose argument is a file or a module resolved from the cwd (``node_modules``, ``-I``).
_PATH_OPTIONS = (
    "--require",
    "-r",
    "--import",
    "--loader",
    "--experimental-loader",
    "--env-file",
    "--env-file-if-exists",
    "-I",
    "-javaagent",
    "-agentpath",
    "-cp",
    "-classpath",
    "--class-path",
    "-Xbootclasspath/a",
    "-Xbootclasspath/p",
    "-Xbootclasspath",
)
_SEPARATORS = re.compile(r"[=:,]")
#: A Java system property naming directories searched (``java.library.path``, ``java.ext.dirs``);
#: ``-Dfile.encoding`` is not one.
_PATH_PROPERTY = re.compile(r"(?i)(path|dirs?|home)$")


def names_writable(name: str, value: str, roots: Sequence[str], home: str | None = None) -> bool:
    """Whether variable ``name`` set to ``value`` can make a program load or run something that is
    not an absolute path outside ``roots`` (False for variables this module does not know).
    ``roots``: real paths of every writable root, every live session's included (pass
    `env_values.every_root`'s). ``home``: what ``~/`` in a command variable means (unknown: such a
    word fails closed)."""
    if name in COMMAND_VARIABLES:  # a bare program name is looked up on the cleaned PATH
        words = [home + word[1:] if home and word.startswith("~/") else word for word in value.split()]
        return any(_path_like(word) and not _safe(word, roots) for word in words)
    if name in UNSAFE_VARIABLES:
        return True
    if name in EXPANDED_VARIABLES and ("$" in value or "`" in value):
        return True
    if name in PATH_VARIABLES:
        return any(not _safe(entry, roots) for entry in value.split(os.pathsep))
    if name in WORD_LIST_VARIABLES:
        return any(not _safe(entry, roots) for entry in value.split() or [""])
    if _LUA_PATHS.fullmatch(name):
        return any(not _safe(entry, roots) for entry in value.split(";"))
    if _LUA_INIT.fullmatch(name):
        return not (value.startswith("@") and _safe(value[1:], roots))
    if name in LIBRARY_LIST_VARIABLES:
        return any("/" in lib and not _safe(lib, roots) for lib in re.split(r"[\s:]+", value) if lib)
    if name in OPTION_VARIABLES:
        return _options_name_writable(value.split(), roots)
    return False


def _options_name_writable(words: list[str], roots: Sequence[str]) -> bool:
    """Any option argument that is a file or module not at an absolute path outside ``roots``,
    or any other piece that looks like a relative path (``-r./x``, ``-Mlib=lib``)."""
    expect_path = False
    for word in words:
        if expect_path:
            expect_path = False
            if not _safe(word, roots):
                return True
            continue
        if word in _PATH_OPTIONS:
            expect_path = True
            continue
        for option in _PATH_OPTIONS:
            for joined in (option + "=", option + ":"):
                if word.startswith(joined) and not _safe(word[len(joined) :], roots):
                    return True
        if word.startswith("-I") and len(word) > 2 and not _safe(word[2:], roots):
            return True
        if word.startswith(("-Mlib=", "-mlib=")) and not all(_safe(d, roots) for d in word[6:].split(",")):
            return True  # Perl's ``use lib`` from the command line
        prop, equals, setting = word.partition("=")
        path_property = equals and prop.startswith("-D") and _PATH_PROPERTY.search(prop)
        if path_property and not all(_safe(entry, roots) for entry in setting.split(os.pathsep)):
            return True  # -Djava.library.path=lib: searched from the cwd (round 35)
        pieces = _SEPARATORS.split(word)
        if re.match(r"-[A-Za-z]", word):  # a one-letter option's attached argument (-r./x, -Mlib)
            pieces.append(word[2:])
        if any(_path_like(piece) and not _safe(piece, roots) for piece in pieces):
            return True
    return expect_path  # a path option with nothing after it: fail closed


def _path_like(piece: str) -> bool:
    return not piece.startswith("-") and ("/" in piece or piece in (".", ".."))
