"""What a later host program runs or obeys from the home directory, when the workspace holds it.

With the home directory as the workspace (``shellrt serve`` started in ``~``), or a
workspace that contains it (``/home``), a command could write more than the names
protected anywhere (shell rc files, ``.claude/``, git hooks and config): a program on
the PATH (``~/.local/bin``), a systemd user unit or an autostart entry the next login
starts, an ``authorized_keys`` line or ``~/.ssh/rc``, a fish or X session script, a
``.pth`` file every later Python runs, pip/npm/cargo configuration that names programs
or indexes, gpg's agent configuration (``pinentry-program``). These names count only
below a home directory inside the workspace: `HomeNames` tells `protect.WorkspaceGuard`
which files there are protected (created or changed: reverted and quarantined).

The trade-off: ``pip install --user``, ``npm config set``, ``systemctl --user enable``
and installers that drop a program into ``~/.local/bin`` are reverted too (with a note
naming each file). Install into the project instead (``python -m venv .venv``, ``npm
install`` without ``-g``), or run them yourself outside the agent.

Names below the home are compared folded (`sandbox._namefold`, red team round 27 fold2): with a
home on a folding filesystem (macOS), ``~/.SSH/authorized_keys`` is the operator's file; elsewhere
such a file is guarded too (fails closed). The tables are compared folded (`_HOME_FILES_F`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import re
import shlex
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from sandbox._hostread import read_regular
from sandbox._namefold import fold_name, fold_path
from sandbox._realpath import settled_realpath as _resolved

__all__ = ["HOME_FILES", "HOME_TREES", "HomeNames", "home_reason", "linked_places"]

#: Home-relative files a later host program runs or obeys (created or changed: reverted).
HOME_FILES = frozenset(
    {
        # login and session scripts beyond the shell rc files protected anywhere
        ".bash_aliases",
        ".xprofile",
        ".xsession",
        ".xsessionrc",
        ".xinitrc",
        ".pam_environment",
        ".config/fish/config.fish",
        # ssh: who may log in, what runs at login, what ssh runs on the way out (ProxyCommand)
        ".ssh/rc",
        ".ssh/authorized_keys",
        ".ssh/authorized_keys2",
        ".ssh/environment",
        ".ssh/config",
        # git's user-level attributes (drivers; the user configs are judged by their keys)
        ".config/git/attributes",
        # package managers: indexes, scripts, programs they run
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".config/pip/pip.conf",
        ".pip/pip.conf",
        ".pydistutils.cfg",
        ".cargo/config",
        ".cargo/config.toml",
        # gnupg: pinentry-program, agent and dirmngr programs
        ".gnupg/gpg.conf",
        ".gnupg/gpg-agent.conf",
        ".gnupg/dirmngr.conf",
        ".gnupg/scdaemon.conf",
        ".gnupg/common.conf",
        # tools that run commands from their start-up file (man-db: DEFINE pager/tbl/troff ...)
        ".manpath",
        # less (the pager of git, man, pwsh's help): lesskey's #env LESSOPEN=|-CMD runs CMD (round 25)
        ".lesskey",
        ".config/lesskey",
        ".less",
        ".vimrc",
        ".gvimrc",
        ".exrc",
        ".emacs",
        ".emacs.d/init.el",
        ".tmux.conf",
        ".gdbinit",
        ".direnvrc",
        ".config/direnv/direnvrc",
        ".config/direnv/direnv.toml",
        # other agents' user configs (round 31): the MCP servers, hooks and start-up scripts they
        # name run as you when the agent starts (Claude Code's user and per-project mcpServers,
        # Windsurf's Cascade hooks, Crush's crushrc: a bash script)
        ".claude.json",
        ".codeium/windsurf/hooks.json",
        ".codeium/windsurf/mcp_config.json",
        ".config/crush/crushrc",
        ".config/crush/crush.json",
        ".copilot/mcp-config.json",
        ".config/goose/config.yaml",
        # programs any later call of a common tool runs, whatever project it is called in (round 31):
        # the AWS CLI's credential_process, a kubeconfig's exec plugin, Gradle's init scripts,
        # what `mvn` sources, starship's custom prompt commands (every prompt)
        ".aws/config",
        ".kube/config",
        ".gradle/init.gradle",
        ".gradle/init.gradle.kts",
        ".mavenrc",
        ".config/starship.toml",
        # the XDG spellings of the editor/debugger/multiplexer start-up files above, and lldb's and
        # wezterm's (Lua run at every terminal start) (round 31)
        ".emacs.el",
        ".emacs.d/early-init.el",
        ".config/emacs/init.el",
        ".config/emacs/early-init.el",
        ".config/tmux/tmux.conf",
        ".config/gdb/gdbinit",
        ".gdbearlyinit",
        ".config/gdb/gdbearlyinit",
        ".config/vim/vimrc",
        ".config/vim/gvimrc",
        ".lldbinit",
        ".wezterm.lua",
        ".config/wezterm/wezterm.lua",
        # round 37: editors' user settings (a terminal profile's program, an interpreter path run when
        # a folder opens), the VS Code server's start-up script (sourced at every remote connect),
        # psql's start-up file (`\!` runs a shell command), mailcap (commands that open files), and
        # terminals' configs (the shell program, kitty's start-up session)
        ".config/Code/User/settings.json",
        ".config/Code/User/tasks.json",
        ".config/Code - Insiders/User/settings.json",
        ".config/VSCodium/User/settings.json",
        ".config/Cursor/User/settings.json",
        ".vscode-server/data/Machine/settings.json",
        ".vscode-server/server-env-setup",
        ".psqlrc",
        ".mailcap",
        ".config/kitty/kitty.conf",
        ".config/alacritty/alacritty.toml",
        ".config/alacritty/alacritty.yml",
        # round 38: the docker client's config (credsStore/credHelpers name programs it runs,
        # cliPluginsExtraDirs directories of plug-ins), uv's user config (its index: what the next
        # `uv tool install` builds and runs), window managers' start-up configs (`exec` lines at the
        # next login) and xbindkeys' (a command a key press runs)
        ".docker/config.json",
        ".config/uv/uv.toml",
        ".config/i3/config",
        ".i3/config",
        ".config/sway/config",
        ".config/hypr/hyprland.conf",
        ".config/openbox/autostart",
        ".config/labwc/autostart",
        ".config/niri/config.kdl",
        ".xbindkeysrc",
        # git's per-user ignore file (used with no core.excludesFile): a rule there hides a later
        # plant (a conftest.py, a .pth) from every repository's `git status` (round 17's class)
        ".config/git/ignore",
        # round 40: what every later build of any project loads from the home: Gradle's user
        # properties (org.gradle.jvmargs=-javaagent:… in every daemon), Bazel's user rc
        # (--workspace_status_command runs a program), bun's global config (preload scripts)
        ".gradle/gradle.properties",
        ".bazelrc",
        ".bunfig.toml",
        ".config/.bunfig.toml",
    }
)
#: Home-relative directories whose every file (at any depth) is protected.
HOME_TREES = frozenset(
    {
        ".local/bin",
        "bin",
        ".config/systemd",
        ".local/share/systemd",
        ".config/autostart",
        ".local/share/applications",
        ".config/environment.d",
        ".config/fish/conf.d",
        ".config/fish/functions",
        ".bashrc.d",
        ".config/nvim",
        ".vim",
        ".config/opencode",  # round 31: opencode's user config, plugins and commands
        ".gradle/init.d",  # round 31: run before every Gradle build
        # round 37: node's global folders, searched by every later `require` no node_modules answers
        ".node_modules",
        ".node_libraries",
        # round 37: code a program loads from the home at every start -- editor extensions and
        # plug-ins (VS Code and its forks load every extension below these; neovim's data directory
        # holds `site/` on its runtimepath and lazy.nvim's and mason's plug-ins and servers; Emacs
        # activates every installed package's autoloads), IPython's and Jupyter's start-up and
        # config files (`profile_*/startup/*.py` run at every IPython start), and shell and tmux
        # frameworks a start-up file sources by a variable (`source $ZSH/oh-my-zsh.sh`; tpm's plug-ins)
        ".vscode/extensions",
        ".vscode-insiders/extensions",
        ".vscode-oss/extensions",
        ".cursor/extensions",
        ".windsurf/extensions",
        ".vscode-server/extensions",
        ".vscode-server/bin",
        ".vscode-server/cli",
        ".local/share/nvim",
        ".emacs.d/elpa",
        ".emacs.d/straight",
        ".config/emacs/elpa",
        ".config/emacs/straight",
        ".ipython",
        ".jupyter",
        ".oh-my-zsh",
        ".zprezto",
        ".zplug",
        ".zinit",
        ".local/share/zinit",
        ".antigen",
        ".zsh",
        ".bash_it",
        ".tmux/plugins",
        ".config/tmux/plugins",
        # round 38: what language toolchains install in the home and the operator's PATH then finds
        # (programs by name: cargo's, go's, bun's, deno's, docker's CLI plug-ins), and whole
        # toolchain managers' trees (an interpreter's site-packages or node_modules is imported by
        # every program the shims start: pyenv, rbenv, nvm, volta, asdf, mise, sdkman, rustup),
        # uv's managed Pythons, and the environments uv and pipx tools run from (``~/.local/bin``
        # links into them)
        ".cargo/bin",
        "go/bin",
        ".bun/bin",
        ".deno/bin",
        ".docker/cli-plugins",
        ".dotnet/tools",  # round 40: `dotnet tool install -g`'s programs (on the PATH its installer sets)
        ".pyenv",
        ".rbenv",
        ".nvm",
        ".volta",
        ".asdf",
        ".local/share/mise",
        ".sdkman",
        ".rustup",
        ".local/share/uv/tools",
        ".local/share/uv/python",
        ".local/pipx",
        ".local/share/pipx",
        # round 39: gems `gem install --user-install` puts where every later `require` activates the
        # highest version, and local::lib's root (`cpanm`'s modules, on PERL5LIB)
        ".gem",
        ".local/share/gem",
        "perl5",
    }
)
#: Files a tree's own program writes as it is used (no code): not protected below that tree.
_TREE_DATA = {".ipython": ("history.sqlite",)}
#: Agents' user settings protected anywhere by their directory's name, which a link from the home
#: can give another name in a workspace (``~/.codex -> ~/dotfiles/codex``; round 31).
_LINKED_AGENT_FILES = frozenset(
    {".codex/config.toml", ".gemini/settings.json", ".cursor/mcp.json", ".cursor/hooks.json", ".qwen/settings.json"}
)
_LINKED_TREES = frozenset({".claude", ".shellrt", ".config/zsh", ".oh-my-zsh/custom"})
#: The tables folded (`fold_path`): what `_protects` compares a folded name with. The tables keep
#: the names' real case (``.config/Code/User``) for the paths built from them (links, binds).
_HOME_FILES_F = frozenset(fold_path(rel) for rel in HOME_FILES)
_HOME_TREES_F = frozenset(fold_path(rel) for rel in HOME_TREES)
#: Every tree `_protects` looks a directory up in (folded), built once.
_ALL_TREES_F = _HOME_TREES_F | _LINKED_TREES
#: A symlink at one of these redirects what is obeyed below it (``ln -s ~/evil ~/.config``).
_ANCESTORS = frozenset(
    "/".join(parts[:i])
    for rel in _HOME_FILES_F | _HOME_TREES_F
    for parts in [rel.split("/")]
    for i in range(1, len(parts) + 1)
)
#: The user site-packages, and every directory below it: Python puts it on ``sys.path`` before the
#: system's and the interpreter's own site-packages whenever it exists, so any module there
#: (``anyio/__init__.py``) is what every later Python -- shellrt's next start included -- imports,
#: besides its ``.pth`` files and ``usercustomize`` (round 37: only those were guarded). Folded
#: names (lower case): macOS's ``~/Library/Python/X.Y/lib/python/site-packages`` too.
_USER_SITE = re.compile(
    r"^(?:\.local/lib/python[0-9.]+|library/python/[0-9.]+/lib/python)/site-packages(?:/|$)"
)
#: Directories on the way to it: a symlink at one redirects what Python imports.
_USER_SITE_WAY = re.compile(r"^(?:\.local/lib(?:/python[0-9.]+)?|library(?:/python(?:/[0-9.]+(?:/lib(?:/python)?)?)?)?)$")


_SSH_INCLUDED_FOLDED = fold_path(".ssh/(included by ssh config)")
_GIT_TEMPLATE_FOLDED = fold_path(".git-template (init.templateDir)")
#: The home-relative name a directory on the operator's ``PATH`` stands for (`_operator_places`):
#: each file directly in it is a program the next shell runs by its name (round 38).
PATH_DIR = ".(a directory on your PATH)"
#: The name a file a start-up variable (``PYTHONSTARTUP``, ``BASH_ENV``…) names stands for.
ENV_FILE = ".(a file your environment names)"
#: The name a program or script the operator's git or ssh config names by its path stands for.
CONFIG_PROGRAM = ".(a program your git or ssh config names)"
_PATH_DIR_FOLDED = fold_path(PATH_DIR)
#: The name a directory on the operator's ``PYTHONPATH`` stands for, its real path after it (round 39).
PYTHONPATH_DIR = ".(a directory on your PYTHONPATH)"
_PYTHONPATH_DIR_FOLDED = fold_path(PYTHONPATH_DIR)
#: The name a directory on another interpreter's module path (``PERL5LIB``, ``RUBYLIB``, ``LUA_PATH``,
#: ``CLASSPATH``) stands for, its real path after it (round 40 trust3).
LIBPATH_DIR = ".(a directory on your PERL5LIB, RUBYLIB, LUA_PATH, CLASSPATH or NODE_PATH)"
_LIBPATH_DIR_FOLDED = fold_path(LIBPATH_DIR)
_CONFIG_PROGRAM_FOLDED = fold_path(CONFIG_PROGRAM)
_ENV_FILE_FOLDED = fold_path(ENV_FILE)


def _homes() -> list[str]:
    """``$HOME`` and the password database's home (CI points HOME elsewhere), real paths."""
    found = [os.environ.get("HOME", "")]
    with contextlib.suppress(KeyError, OSError):
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    return list(dict.fromkeys(os.path.realpath(h) for h in found if h.startswith("/")))


@functools.cache
def _linked_files() -> frozenset[str]:
    """Home names protected anywhere by their own name (shell start-up files, `protect`'s), and
    agents' settings, followed with `HOME_FILES` and `HOME_TREES` through links (round 31). Imported
    when first asked: `protect` imports this module."""
    from shellrt.supervisor.protect import SHELL_STARTUP_FILES

    return SHELL_STARTUP_FILES | _LINKED_AGENT_FILES


def _protects(rel_dir: str, name: str, is_link: bool) -> bool:
    rel_dir, name = fold_path(rel_dir), fold_name(name)
    rel = f"{rel_dir}/{name}" if rel_dir else name
    if rel in _HOME_FILES_F or rel in _linked_files() or (is_link and rel in _ANCESTORS):
        return True
    if rel == _SSH_INCLUDED_FOLDED or rel_dir == _SSH_INCLUDED_FOLDED or rel_dir.startswith(_SSH_INCLUDED_FOLDED + "/"):
        return True  # ssh config ``~/.ssh/config`` includes (a file, or every file below a pattern's directory)
    if rel_dir.startswith(_SOURCED_GLOB_FOLDED + "/"):  # a file a start-up file's pattern sources (round 37)
        import fnmatch  # rare: not on `shellrt run`'s import path unless such a pattern is read

        pattern, _, below = rel_dir[len(_SOURCED_GLOB_FOLDED) + 1 :].partition("/")
        names = [*(below.split("/") if below else ()), name]
        components = pattern.split(_PATTERN_SEP)
        return len(names) == len(components) and all(map(fnmatch.fnmatchcase, names, components))
    if rel_dir.startswith(_PYTHONPATH_DIR_FOLDED + _PATTERN_SEP):  # a module on PYTHONPATH (round 39)
        return _shadows_a_module(rel_dir[len(_PYTHONPATH_DIR_FOLDED) + 1 :], name)
    if rel_dir.startswith(_LIBPATH_DIR_FOLDED + _PATTERN_SEP):  # another interpreter's module (round 40)
        from shellrt.supervisor._module_names import shadows_a_library

        _fresh_places()
        return shadows_a_library(_LIB_DIRS[0], rel_dir[len(_LIBPATH_DIR_FOLDED) + 1 :], name)
    if rel_dir.startswith(_PATH_DIR_FOLDED + _PATTERN_SEP):  # a program on PATH (rounds 38, 39)
        own = rel_dir[len(_PATH_DIR_FOLDED) + 1 :]
        return own in _path_whole() or _shadows_on_path(own, name)
    if rel in (_ENV_FILE_FOLDED, _CONFIG_PROGRAM_FOLDED):
        return True  # a file a start-up variable, or a git or ssh config, names (round 38)
    if rel == _GIT_TEMPLATE_FOLDED or rel_dir == _GIT_TEMPLATE_FOLDED or rel_dir.startswith(_GIT_TEMPLATE_FOLDED + "/"):
        return True  # the operator's git template: copied into every new repository (round 37)
    tree = next((t for t in _ALL_TREES_F if rel_dir == t or rel_dir.startswith(t + "/")), None)
    if tree is not None:
        return not name.startswith(_TREE_DATA.get(tree, ()))
    if is_link and (_USER_SITE_WAY.match(rel) or _USER_SITE.match(rel + "/")):
        return True
    return bool(_USER_SITE.match(rel_dir + "/"))


#: `linked_places` as last read (monotonic time it is good until, HOME and XDG_CONFIG_HOME then, the
#: map): the file tools ask it for every write they judge; a link changed within a second is seen a
#: second later.
_LINKED_CACHE: list[tuple[float, str, str, dict[str, str]]] = []
_LINKED_TTL_S = 1.0
#: A read of the host's places may take at most this share of the time it is used for, and is used for
#: at most `_LINKED_MAX_S`: a command that made 70,000 files in a PATH directory made each read of
#: the PATH map cost 0.4 s, and the guard's scan of them re-read it 462 times (178 s of a 190 s scan,
#: red team round 40, lead).
_READ_SHARE, _LINKED_MAX_S = 20, 5.0


def _good_until(started: float) -> float:
    """When a read that began at ``started`` (and ends now) is to be read again."""
    now = time.monotonic()
    return now + min(_LINKED_MAX_S, max(_LINKED_TTL_S, _READ_SHARE * (now - started)))


def linked_places() -> dict[str, str]:
    """`_linked_places`, read again at most once a second (about 1 ms a read)."""
    now = time.monotonic()
    home = os.environ.get("HOME", "")
    from shellrt.supervisor._operator_places import env_key  # imported when first asked

    xdg = "\0".join((env_key(), os.environ.get("GIT_TEMPLATE_DIR", "")))
    if _LINKED_CACHE and now < _LINKED_CACHE[0][0] and _LINKED_CACHE[0][1:3] == (home, xdg):
        return _LINKED_CACHE[0][3]
    found = _linked_places()
    from shellrt.supervisor._env_gitconfig import relative_template_dirs

    _RELATIVE_TEMPLATES[:] = [tuple(fold_path(v) for v in relative_template_dirs())]
    from shellrt.supervisor._operator_places import project_path_dirs

    envs, direnv = project_path_dirs(os.path.realpath)
    _PYTHONPATH_DIRS[:] = [
        frozenset(fold_path(real) for real, rel in found.items() if rel == f"{PYTHONPATH_DIR}{_PATTERN_SEP}{real}")
    ]
    from shellrt.supervisor._operator_places import module_paths

    libs: dict[str, set[str]] = {}
    for real, language, is_dir in module_paths(os.path.realpath):
        if is_dir and found.get(real) == f"{LIBPATH_DIR}{_PATTERN_SEP}{real}":
            libs.setdefault(fold_path(real), set()).add(language)
    _LIB_DIRS[:] = [{d: frozenset(langs) for d, langs in libs.items()}]
    _PATH_WHOLE[:] = [
        frozenset(
            fold_path(real)
            for real, rel in found.items()
            if rel == f"{PATH_DIR}{_PATTERN_SEP}{real}"
            and real not in envs
            and not any(real == d or real.startswith(d.rstrip("/") + "/") for d in direnv)
        )
    ]
    _LINKED_CACHE[:] = [(_good_until(now), home, xdg, found)]  # its cost: the derived maps too
    return found


#: The operator's other module path directories (folded real paths) -> their languages (round 40).
_LIB_DIRS: list[dict[str, frozenset[str]]] = [{}]
#: The operator's ``PYTHONPATH`` directories (folded real paths), read with `linked_places`.
_PYTHONPATH_DIRS: list[frozenset[str]] = [frozenset()]
#: `_module_names` as last read (monotonic time it is good until, PYTHONPATH, the names).
_MODULES_CACHE: list[tuple[float, str, frozenset[str]]] = []


def _module_names() -> frozenset[str]:
    """The folded top-level module names Python finds past ``PYTHONPATH``: the standard library's,
    ``sitecustomize``/``usercustomize`` (``site`` imports them at every start) and every name in
    shellrt's interpreter's other ``sys.path`` directories (its site-packages). Read at most once a
    second, only when a file of a workspace ``PYTHONPATH`` directory is judged (~1 ms)."""
    import sys

    now, value = time.monotonic(), os.environ.get("PYTHONPATH", "")
    if _MODULES_CACHE and now < _MODULES_CACHE[0][0] and _MODULES_CACHE[0][1] == value:
        return _MODULES_CACHE[0][2]
    names = {fold_name(n) for n in sys.stdlib_module_names} | {"sitecustomize", "usercustomize", *_NEWER_STDLIB}
    skip = {os.path.realpath(e) for e in value.split(":") if e}
    for entry in [*sys.path, *_other_pythons()]:
        if not entry or os.path.realpath(entry) in skip:
            continue
        with contextlib.suppress(OSError), os.scandir(entry) as found:
            names.update(fold_name(item.name.split(".")[0]) for item in found)
    _MODULES_CACHE[:] = [(_good_until(now), value, frozenset(names))]
    return _MODULES_CACHE[0][2]


#: Top-level standard library names newer Pythons add (3.13's ``_colorize`` every traceback imports,
#: ``_pyrepl`` its prompt; 3.14's ``annotationlib``, ``compression``; 3.15's ``profiling``): the
#: operator's newer python finds them past ``PYTHONPATH`` (round 39 review12). Any ``_name`` counts too.
_NEWER_STDLIB = frozenset({"annotationlib", "compression", "profiling"})
#: Library and site directories of the operator's other Pythons (the system's ``/usr/bin/python3``
#: and its ``dist-packages``, ``/usr/local``'s, the user's): their names are found past ``PYTHONPATH``.
_OTHER_PYTHONS = (
    "/usr/lib/python3*",
    "/usr/lib/python3/dist-packages",
    "/usr/lib/python3*/site-packages",
    "/usr/lib64/python3*",
    "/usr/lib64/python3*/site-packages",
    "/usr/local/lib/python3*",
    "/usr/local/lib/python3*/*-packages",
    "/opt/homebrew/lib/python3*/site-packages",
    "~/.local/lib/python3*/site-packages",
)


def _other_pythons() -> list[str]:
    """The directories of `_OTHER_PYTHONS` present here. Why (red team round 39 review12): trust2 read
    shellrt's own interpreter's ``sys.path`` alone; a name only the system's python finds (``apt``,
    ``gi``, ``OpenSSL``: Debian's command-not-found handler is Python) was "new", and kept."""
    import glob

    return [d for pattern in _OTHER_PYTHONS for d in sorted(glob.glob(os.path.expanduser(pattern)))[:16]]


def _shadows_a_module(rest: str, name: str) -> bool:
    """Whether file ``name`` of folded ``rest`` (a ``PYTHONPATH`` directory's real path, then the
    directories below it) belongs to a top-level module Python would find later (`_module_names`).
    Why (red team round 39 trust2): ``PYTHONPATH`` comes before the standard library and
    site-packages on every ``sys.path``: a ``json.py``, ``subprocess/__init__.py`` or
    ``sitecustomize.py`` in a dotfiles repository's ``python/`` on it runs in every Python the
    operator starts (shellrt's next start included). A new name stays the project's own, imported by
    choosing it, as on PATH."""
    _fresh_places()
    top = next((d for d in _PYTHONPATH_DIRS[0] if rest == d or rest.startswith(d + "/")), None)
    if top is None:
        return True  # fail closed: which module it is is not known
    module = name.split(".")[0] if rest == top else rest[len(top) + 1 :].split("/")[0]
    return module.startswith("_") or module in _module_names()


#: The operator's absolute ``PATH`` directories guarded whole (folded real paths), read with
#: `linked_places`: all but the project's own (`_operator_places.project_path_dirs`), whose files
#: count only when they shadow a program (round 38).
_PATH_WHOLE: list[frozenset[str]] = [frozenset()]


def _path_whole() -> frozenset[str]:
    """`_PATH_WHOLE`, refreshed as `linked_places` is. Why (red team round 39 trust2): a new name in
    a directory on the operator's PATH was kept (round 38: "the project's own, run by choosing it");
    the operator's next typo (``sl``, ``gti``), a program not installed yet (``python`` beside
    ``python3``), ``git comit`` (git runs ``git-comit`` from PATH), a credential helper the git or
    docker config names but the host lacks all run it, in every shell, outside the project."""
    _fresh_places()
    return _PATH_WHOLE[0]


def _fresh_places() -> None:
    """`linked_places` when what `_PATH_WHOLE` and `_PYTHONPATH_DIRS` came from may have changed: the
    map older than a second, or a variable they are read from. Cheaper than its full key (~30
    variables): this is asked once per file of such a directory (a home's 30 PATH programs cost
    ~10 ms a guard's start through `linked_places`' key)."""
    from shellrt.supervisor._operator_places import MODULE_VARIABLES

    names = ("HOME", "PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "DIRENV_DIR", *MODULE_VARIABLES)
    key = "\0".join(os.environ.get(n, "") for n in names)
    if not (_LINKED_CACHE and time.monotonic() < _LINKED_CACHE[0][0] and _PLACES_KEY[0] == key):
        linked_places()
        _PLACES_KEY[0] = key


#: The variables `_fresh_places` last refreshed the map for.
_PLACES_KEY = [""]


class _Programs(NamedTuple):
    """`_operator_places.PathPrograms` with names and directories folded."""

    places: dict[str, set[str]]
    first: dict[str, int]
    complete: bool


#: `_path_programs` as last read (monotonic time it is good until, PATH, the map).
_PROGRAMS_CACHE: list[tuple[float, str, _Programs]] = []


def _path_programs() -> _Programs:
    """The folded names of the programs the operator's PATH finds -> the folded real directories
    holding them and the first PATH index holding them (`_operator_places.path_programs`): a file of
    such a name in a PATH directory of the workspace shadows one in another. Read only when a PATH
    directory's file is judged, at most once a second (~10 ms: a few thousand names)."""
    now, path = time.monotonic(), os.environ.get("PATH", "")
    if _PROGRAMS_CACHE and now < _PROGRAMS_CACHE[0][0] and _PROGRAMS_CACHE[0][1] == path:
        return _PROGRAMS_CACHE[0][2]
    from shellrt.supervisor._operator_places import path_programs

    read = path_programs(os.path.realpath)
    if not read.complete:  # every name fails closed: nothing to fold (a flood's 65,536: ~140 ms saved)
        _PROGRAMS_CACHE[:] = [(_good_until(now), path, _Programs({}, {}, False))]
        return _PROGRAMS_CACHE[0][2]
    folded: dict[str, str] = {}
    places: dict[str, set[str]] = {}
    first: dict[str, int] = {}
    for name, held in read.places.items():
        key = fold_name(name)
        places.setdefault(key, set()).update(folded.setdefault(p, fold_path(p)) for p in held)
        first[key] = min(first.get(key, read.first[name]), read.first[name])
    programs = _Programs(places, first, read.complete)
    _PROGRAMS_CACHE[:] = [(_good_until(now), path, programs)]
    return programs


def _shadows_on_path(own: str, name: str) -> bool:
    """Whether folded ``name`` in the PATH directory whose folded real path is ``own`` is named as a
    program another PATH directory holds; fails closed when the map of names is incomplete."""
    programs = _path_programs()
    return not programs.complete or bool(programs.places.get(name, set()) - {own})


def relative_path_shadow(directory: str, name: str, entries: tuple[tuple[int, str], ...]) -> bool:
    """Whether file ``name`` of absolute ``directory`` is in a place a relative ``PATH`` entry of
    ``entries`` (`_operator_places.relative_path_entries`) names from some directory, under a name
    an absolute entry after it holds: the operator's next shell there runs it instead (round 38
    review4). A new name stays the project's own, as in an absolute PATH directory."""
    if not entries:
        return False
    spelt, folded = fold_path(directory).rstrip("/"), fold_name(name)
    at = [i for i, entry in entries if entry == "." or spelt.endswith("/" + fold_path(entry))]
    if not at:
        return False
    programs = _path_programs()
    if not programs.complete:
        return True
    index = programs.first.get(folded)
    return index is not None and index > min(at)


#: The operator's relative ``init.templateDir`` values (folded), read with `linked_places`.
_RELATIVE_TEMPLATES: list[tuple[str, ...]] = [()]


def relative_templates() -> tuple[str, ...]:
    """The operator's relative git template directories (folded, ``.tmpl``, ``a/b``): git resolves
    one from the directory it runs in, so ``<any directory>/.tmpl`` is copied into the repository the
    operator's next ``git clone`` there makes (red team round 38). Refreshed as `linked_places` is."""
    linked_places()
    return _RELATIVE_TEMPLATES[0]


def in_relative_template(directory: str, templates: tuple[str, ...]) -> bool:
    """Whether ``directory`` (absolute) is, or lies below, one of ``templates`` of some directory."""
    spelt = fold_path(directory).rstrip("/") + "/"
    return any(f"/{t}/" in spelt for t in templates)


def _linked_places() -> dict[str, str]:
    """Real paths the home's obeyed names lead to through a symlink (``~/.bashrc ->
    ~/dotfiles/bashrc``: ``/…/dotfiles/bashrc`` -> ``.bashrc``; ``~/.config -> ~/dotfiles/config``:
    ``/…/dotfiles/config`` -> ``.config``), and ``$XDG_CONFIG_HOME`` (-> ``.config``), each mapped
    to the home-relative name it stands for.

    Why (red team round 31): a dotfiles repository as the workspace holds the operator's start-up
    files under other names; the home's names, not the repository's, say what is obeyed. Read once
    per guard (a few ``lstat`` per name); a link made later is seen by the next guard."""
    found: dict[str, str] = {}
    for home in _homes():
        # One lstat a place (names share their directories: ``.config/…``); below a missing or
        # linked place nothing more is looked at (round 37: 150 names cost 2.5 lstat each before).
        kinds: dict[str, str] = {}
        for rel in sorted(HOME_FILES | HOME_TREES | _linked_files() | _LINKED_TREES):
            parts = rel.split("/")
            for index in range(1, len(parts) + 1):
                place = home + "/" + "/".join(parts[:index])
                kind = kinds.get(place)
                if kind is None:
                    try:
                        kind = "link" if stat.S_ISLNK(os.lstat(place).st_mode) else "other"
                    except OSError:
                        kind = "missing"
                    kinds[place] = kind
                if kind == "missing":
                    break
                if kind == "link":
                    real = os.path.realpath(place)
                    if real != place and real not in found:
                        found[real] = "/".join(parts[:index])
                    break
        included, programs = _ssh_included(home)
        for real in included:
            found.setdefault(real, _SSH_INCLUDED)
        for real in programs:  # ProxyCommand's script, a PKCS11Provider library… (round 38)
            found.setdefault(real, CONFIG_PROGRAM)
        for real, rc in _rc_sourced(home):
            found.setdefault(real, rc)
    bounds = _Bounds()  # a value of thousands of components: resolved within a bound (round 37 review2)
    # The places the operator's environment names stand for the home names they replace (round 38:
    # `_operator_places`): `$XDG_CONFIG_HOME` for `~/.config` (systemd, autostart, fish, git and the
    # agents above read it there), `$PYTHONUSERBASE` for `~/.local` (round 37: its site-packages is
    # on every later Python's `sys.path`), `$CARGO_HOME`, `$GNUPGHOME`…; each `$PATH` directory,
    # `$PYTHONSTARTUP`, `$BASH_ENV`… guarded themselves. Whether they exist yet or not.
    from shellrt.supervisor._env_gitconfig import operator_config_programs, operator_template_dirs
    from shellrt.supervisor._operator_places import module_paths, operator_places

    for real, _language, is_dir in module_paths(bounds.real):  # PERL5LIB, RUBYLIB… (round 40)
        found.setdefault(real, f"{LIBPATH_DIR}{_PATTERN_SEP}{real}" if is_dir else ENV_FILE)

    for real, variable, replaced in operator_places(bounds.real):
        # A PATH directory's name carries its real path: a program there shadows one elsewhere.
        path_dir = f"{PATH_DIR}{_PATTERN_SEP}{real}"
        if variable == "PYTHONPATH":
            found.setdefault(real, f"{PYTHONPATH_DIR}{_PATTERN_SEP}{real}")
            continue
        found.setdefault(real, replaced or (path_dir if variable == "PATH" else ENV_FILE))

    for program in operator_config_programs():  # core.pager, credential.helper… by path (round 38)
        if not os.path.isdir(program):  # a directory (`!cd ~/x && make`) is no program
            found.setdefault(bounds.real(program), CONFIG_PROGRAM)
    for template in operator_template_dirs():  # every file is copied into the next clone (round 37)
        if os.path.isabs(template):  # a relative one: `relative_templates`
            found.setdefault(bounds.real(template), _GIT_TEMPLATE)
    return found


#: The home-relative name the operator's git template directory stands for: every file below it
#: is copied into each repository the operator's next ``git init``/``git clone`` makes (hooks,
#: config), wherever it lies (`protect.operator_template_dirs`).
_GIT_TEMPLATE = ".git-template (init.templateDir)"


#: The home-relative name the files ``~/.ssh/config`` includes stand for: a tree of ssh's config.
_SSH_INCLUDED = ".ssh/(included by ssh config)"
#: ssh's own limit on nested ``Include``.
_SSH_INCLUDE_DEPTH = 16
_GLOB_MAGIC = re.compile(r"[*?\[]")
_SSH_INCLUDE = re.compile(r"^\s*include(?:\s*=\s*|\s+)(.+)$", re.IGNORECASE)


#: ssh options naming a program or library ssh runs or loads, and ``Match exec``'s command.
_SSH_PROGRAM = re.compile(
    r"^\s*(?:proxycommand|pkcs11provider|securitykeyprovider|knownhostscommand|localcommand|match\s.*\bexec)"
    r"(?:\s*=\s*|\s+)(.+)$",
    re.IGNORECASE,
)


def _ssh_included(home: str) -> tuple[list[str], list[str]]:
    """Real paths ``~/.ssh/config`` includes (``Include``: relative to ``~/.ssh``, ``~`` expanded,
    nested), each as ssh reads it; a pattern (``~/dotfiles/ssh.d/*``) gives its literal directory,
    whose every file then counts (one created later is read too). Why (red team round 36: trust):
    with a dotfiles repository as the workspace, a command wrote ``ProxyCommand`` into an included
    file, and the operator's next ``ssh`` (a ``git push``) ran it."""
    found: list[str] = []
    programs: list[str] = []
    todo = [(os.path.join(home, ".ssh", "config"), 0)]
    seen: set[str] = set()
    from shellrt.supervisor._operator_places import path_word

    bounds = _Bounds()
    while todo:
        path, depth = todo.pop(0)  # breadth first: the operator's own names before what they name
        real = bounds.real(path)
        if real in seen:
            continue
        seen.add(real)
        content = bounds.read(path)
        if content is None:
            continue
        for line in content.decode("utf-8", "replace").splitlines():
            named = _SSH_PROGRAM.match(line)
            if named is not None and len(programs) < _NAMED_FILES:
                # Its words that are paths (``~`` expanded), the program's and its arguments' (round 38).
                for word in (w for part in _split(named.group(1), bounds) for w in part.split()):
                    # ``$HOME``, ``${DOTFILES}``, ``%d`` too (round 38 review4)
                    path = path_word(word, home, ssh=True) or ""
                    if path and len(programs) < _NAMED_FILES:
                        if os.path.isdir(path):
                            continue  # no program
                        programs.append(bounds.real(path))
                continue
            match = _SSH_INCLUDE.match(line)
            if match is None:
                continue
            for word in _split(match.group(1), bounds):
                if len(found) >= _NAMED_FILES:  # the file naming more is guarded itself (round 36 review2)
                    return found, programs
                if word == "~" or word.startswith("~/"):
                    target = os.path.join(home, word[2:])
                elif word.startswith("~"):  # ~user/…
                    target = os.path.expanduser(word)
                else:  # relative to ~/.ssh (an absolute word stays itself)
                    target = os.path.join(home, ".ssh", word)
                if _GLOB_MAGIC.search(target):  # its literal directory: a file created there later is read too
                    literal = _GLOB_MAGIC.split(target, maxsplit=1)[0]
                    found.append(bounds.real(literal if literal.endswith("/") else os.path.dirname(literal)))
                    if depth < _SSH_INCLUDE_DEPTH:
                        todo += [(match, depth + 1) for match in _bounded_glob(target, bounds)]
                elif len(target) < _PATH_MAX:  # a longer path names no file
                    found.append(bounds.real(target))
                    if depth < _SSH_INCLUDE_DEPTH:
                        todo.append((target, depth + 1))
    return found, programs


#: Most files (or pattern directories) the ssh and rc readers collect a read: 1 MB of ``Include
#: /x<i>`` lines named 39 000, 2.4 s a read, every guard and every second of file-tool writes.
_NAMED_FILES = 256
#: Linux's ``PATH_MAX``: a longer path (or a value making one) names no file, so it is not followed.
_PATH_MAX = 4096
#: Path components one read resolves through symlinks (`_Bounds`); past it, paths are kept as
#: written (``normpath``). ``realpath`` is quadratic in a path's components: a ``. /x/x/x…`` of
#: 512 KiB took 13 s, 256 of 4,000 characters 2.5-4.4 s, every read (round 37 review2).
_REALPATH_PARTS = 16_384
#: Characters the start-up files' variables and loops may hold in one read (values and words, as
#: expanded): a value doubled forty times (``A=$A$A``) was 2^40 characters, out of memory
#: (round 37 review2).
_EXPANDED_CHARS = 1 << 20
#: Bytes of the files one read (the ssh reader's, the rc reader's) takes in, 1 MiB a file at most.
#: Why (stop 62): every file's text is scanned by five patterns (~0.25 s a MiB); a sourced file of a
#: dotfiles workspace naming 40 others of 1 MiB each made every read 9.5 s (255 of them: a minute),
#: every guard. Breadth first, the operator's own files spend it first; a file past it is guarded by
#: its own name, what it names not followed (as past `_NAMED_FILES`).
_READ_BYTES = 2 << 20
#: Directory entries the pattern expansions of one read look at in all (four patterns' worth).
_GLOB_READ_ENTRIES = 16_384
#: Characters of ``for`` loops' word lists, tmux ``source-file`` and ssh ``Include`` lines split in
#: one read (``shlex``: ~3 s a MiB here).
_LOOP_TEXT = 64 << 10


class _Bounds:
    """One read's bounds: ``os.path.realpath`` within `_REALPATH_PARTS` components, then
    ``os.path.normpath`` (the names stay guarded, as written); `_EXPANDED_CHARS` and `_LOOP_TEXT`
    (``room``, ``loop_text``: past them a variable or loop is unknown), ``braces`` (past it a brace
    group reads as ``*``). Shared by the files of
    one read, read breadth first: the operator's own files spend them first."""

    def __init__(self) -> None:
        self.left = _REALPATH_PARTS
        self.room = _EXPANDED_CHARS
        self.loop_text = _LOOP_TEXT
        self.entries = _GLOB_READ_ENTRIES
        self.braces = _LOOP_TEXT  # characters brace expansion may scan (round 40 review18)
        self.bytes = _READ_BYTES  # of the files read (stop 62)

    def read(self, path: str) -> bytes | None:
        """``path``'s content within what is left of `_READ_BYTES` (each file 1 MiB at most); None
        when it is no regular file or nothing is left (the file stays guarded by its own name)."""
        if self.bytes <= 0:
            return None
        content = read_regular(path, min(1 << 20, self.bytes))
        if content is not None:
            self.bytes -= max(len(content), 1)
        return content

    def real(self, path: str) -> str:
        parts = path.count("/")
        if parts > self.left:
            return os.path.normpath(path)
        self.left -= parts
        return os.path.realpath(path)


#: Most directory entries one ``Include`` pattern's expansion looks at, and most files it follows.
_GLOB_ENTRIES = 4096
_GLOB_FILES = 256


def _bounded_glob(pattern: str, bounds: _Bounds) -> list[str]:
    """``glob.glob(pattern)`` (no hidden names, as ssh's glob), looking at `_GLOB_ENTRIES` entries at
    most, and at what is left of the read's `_GLOB_READ_ENTRIES`. Why (round 36 review2): ``Include
    /*/*/*/*/*/*/*`` in an included file a command wrote walked the whole host (58 s a read, every
    read); 300 patterns of 4,096 entries each 1.85 s a read (round 37 review2). What is past the
    bound lies below the pattern's literal directory, which is guarded whole (its matches are not
    read for what they source)."""
    import fnmatch  # rare: not on `shellrt run`'s import path

    parts = pattern.split("/")
    index = next(i for i, part in enumerate(parts) if _GLOB_MAGIC.search(part))
    level = ["/".join(parts[:index]) or "/"]
    allowed = min(_GLOB_ENTRIES, bounds.entries)
    budget = allowed
    try:
        for position, part in enumerate(parts[index:], start=index):
            last = position == len(parts) - 1
            found: list[str] = []
            for directory in level:
                if not _GLOB_MAGIC.search(part):
                    found.append(os.path.join(directory, part))
                    continue
                try:
                    with os.scandir(directory) as entries:
                        for entry in entries:
                            budget -= 1
                            if budget < 0:
                                return sorted(found)[:_GLOB_FILES] if last else []
                            if not entry.name.startswith(".") and fnmatch.fnmatchcase(entry.name, part):
                                found.append(entry.path)
                except OSError:
                    continue
            level = found
        return sorted(p for p in level if os.path.lexists(p))[:_GLOB_FILES]
    finally:
        bounds.entries -= allowed - max(budget, 0)  # what this walk looked at


#: ``source FILE`` / ``. FILE`` in a shell start-up file (after a line start, ``;``, ``&&``, ``||``,
#: ``{``, ``(``, ``then``, ``do``, ``else``): the file's word. Blanks only, never newlines, between
#: them: ``\s*`` ran from every line start over all the newlines after it (round 36 review2: a
#: sourced file of 40 KB of blank lines took 8 s a read, 1 MB over an hour). Round 40 review18: also
#: past ``builtin``, ``command`` and ``A=1`` (each still sources the file).
_SOURCED = re.compile(
    r"""(?:^|[;&|{(]|\b(?:then|do|else)\b)(?>[ \t]*(?:builtin|command|[A-Za-z_]\w*=[^\s;&|()`<>]*)(?=[ \t]))*"""
    r"""[ \t]*(?:source|\.)[ \t]+((?:"[^"\n]*"|'[^'\n]*'|[^\s;&|)"']+)+)""",
    re.MULTILINE,
)
_HOME_VAR = re.compile(r"^(?:\$HOME|\$\{HOME\}|~)(?=/|$)")
#: A word in a command's place that is a path (``/``, ``~/``, ``$NAME/``, ``${NAME}/``): a program a
#: shell start-up file runs by its path -- at a line start, after ``;``, ``&``, ``|``, ``{``, ``(``
#: (``$(``, ``<(``), a backquote, ``then``/``do``/``else``, ``eval``/``exec``/``command``; blanks only
#: between (round 39 trust2: ``eval "$(~/dotfiles/bin/prompt init bash)"`` runs it at every shell start).
#: Round 39 review12: also after ``if``/``elif``/``while``/``until``/``!``, in an ``alias x='…'``, and
#: past any run of words that hand on to a program (``time``, ``nohup``, ``env``, ``sudo``, ``exec -a
#: NAME``, ``command -p``, an option, ``A=1``): each ran a path trust2's list did not name.
_RUN_WORDS = r"(?:then|do|else|elif|if|while|until|eval|exec|command|builtin|time|nohup|env|sudo|doas|nice)"
_RUNS = re.compile(
    rf"""(?:^|[;&|{{(`!]|\b{_RUN_WORDS}\b|\balias[ \t]+[\w.:-]+=)"""
    rf"""(?>[ \t]*(?:-[\w-]+(?:[ \t]+(?![~/$"'])[^\s;&|()"'`<>]+)?|[A-Za-z_]\w*=[^\s;&|()`<>]*|!|{_RUN_WORDS}(?=[ \t])))*"""
    r"""[ \t]*(?=["']?(?:~|\$\{?[A-Za-z_]\w*\}?["']?)?["']?/|["']?\$\{?[A-Za-z_]\w*\}?["']?(?:[\s;&|)`]|$))""",
    re.MULTILINE,
)
#: ``run-parts [OPTIONS] DIR``: every program of DIR runs (round 40 trust3); the rest of the command.
#: Found by its literal first (a lead before it, as `_RUNS` reads, cost a pass over every position).
_RUN_PARTS = re.compile(r"(?<![\w./-])run-parts\b([^;&|\n]*)")
#: Marks a word `_sourced_words` gives as a program run, not a file sourced: guarded, not read.
_RUN_MARK = "\0"
#: How deep sourced files are followed (a file sourcing a file …).
_SOURCE_DEPTH = 8
#: A start-up file's own variables (round 37): ``NAME=value``, ``export NAME=value`` at a line start.
_ASSIGN = re.compile(
    r"""^[ \t]*(?:(?:export|readonly|local|declare(?:[ \t]+-\w+)*)[ \t]+)?([A-Za-z_]\w*)=""",
    re.MULTILINE,
)
#: ``for NAME in WORDS`` (bash, zsh, fish): the files a ``source "$NAME"`` in its body loads (round 37).
_FOR = re.compile(r"(?:^|[;&|{(]|\b(?:then|do|else)\b)[ \t]*for[ \t]+([A-Za-z_]\w*)[ \t]+in[ \t]+([^;\n]*)", re.MULTILINE)
_VAR = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")
#: tmux's ``source-file [-Fnqv] PATH…`` (``source`` too) and vim's ``:source FILE`` (``:so``…).
_TMUX_SOURCE = re.compile(r"^[ \t]*source(?:-file)?((?:[ \t]+-[A-Za-z]+)*)[ \t]+([^\n]+)$", re.MULTILINE)
_VIM_SOURCE = re.compile(r"^[ \t]*:?so(?:u(?:r(?:ce?)?)?)?!?[ \t]+([^|\n]+?)[ \t]*(?:\||$)", re.MULTILINE)
#: Home start-up files read for what they source, by the syntax of their program (round 37: tmux,
#: vim and fish besides the shells' of round 36).
_OTHER_TOPS = {
    ".config/fish/config.fish": "sh",
    ".tmux.conf": "tmux",
    ".config/tmux/tmux.conf": "tmux",
    ".vimrc": "vim",
    ".gvimrc": "vim",
    ".exrc": "vim",
    ".config/vim/vimrc": "vim",
    ".config/nvim/init.vim": "vim",
    # round 38: Lua's dofile/loadfile and neovim's vim.cmd source (round 37's Left)
    ".config/nvim/init.lua": "lua",
    ".wezterm.lua": "lua",
    ".config/wezterm/wezterm.lua": "lua",
}
#: A Lua string or comment (to drop comments without reading ``"--x"`` as one).
_LUA_NOISE = re.compile(r"""("[^"\n]*"|'[^'\n]*')|--[^\n]*""")
#: ``dofile(EXPR)`` / ``loadfile(EXPR)`` (one level of parentheses inside), or with a bare string.
_LUA_LOAD = re.compile(
    r"""\b(?:dofile|loadfile)\s*(?:\(\s*((?:[^()\n]|\([^()\n]*\))*)\)|("[^"\n]*"|'[^'\n]*'))"""
)
#: neovim's ``vim.cmd("source X")``, ``vim.cmd [[source X]]``, ``vim.cmd.source("X")``.
_LUA_VIMCMD = re.compile(r"""\bvim\.cmd(\.source)?\s*\(?\s*(?:"([^"\n]*)"|'([^'\n]*)'|(\[\[))""")
#: The pieces of a Lua path expression joined by ``..``: a string, the environment, the home.
_LUA_PIECE = re.compile(
    r"""\s*(?:"([^"\n]*)"|'([^'\n]*)'|os\.getenv\s*\(\s*["'](\w+)["']\s*\)|vim\.env\.(\w+)"""
    r"""|(vim\.fn\.expand\s*\(\s*["']~["']\s*\)|vim\.(?:loop|uv)\.os_homedir\s*\(\s*\)))\s*(?:\.\.|$)"""
)
#: The home-relative name a directory a start-up file sources by a pattern stands for; the pattern
#: (its components below that directory, joined by `_PATTERN_SEP`) follows it: only what it matches counts.
_SOURCED_GLOB = ".(sourced by a start-up file)"
_SOURCED_GLOB_FOLDED = fold_path(_SOURCED_GLOB)
#: Joins a pattern's components in that name (``*/init.sh``): a name no path holds, never opened.
_PATTERN_SEP = "\0"


def _rc_sourced(home: str) -> list[tuple[str, str]]:
    """(real path, the start-up file's name) of each file a start-up file of ``home`` sources by a
    path known without running it (nested), read as its program reads it: a shell's ``source`` /
    ``.`` of a literal path (``~/``, ``$HOME/``, absolute), of the file's own variables
    (``DOTFILES=~/dotfiles``, then ``. "$DOTFILES/x"``) or of a ``for`` loop's words (``for f in
    ~/dotfiles/bash.d/*.sh; do . "$f"; done``); tmux's ``source-file``; vim's ``:source``. A pattern
    gives its literal directory, standing for `_SOURCED_GLOB` and the pattern's components below it
    (``*/init.sh``): a file a command adds there that the pattern matches is loaded too.

    Why (red team round 36: trust): ``. ~/dotfiles/aliases.sh`` in ``~/.bashrc``, with the dotfiles
    repository as the workspace, ran a command's plant in the operator's next shell; round 37: the
    same through a variable, a loop, tmux, vim and fish."""
    from shellrt.supervisor.protect import SHELL_STARTUP_FILES  # it imports this module

    found: list[tuple[str, str]] = []
    todo = [
        (os.path.join(home, rc), rc, "sh", 0) for rc in sorted(SHELL_STARTUP_FILES) if rc not in (".envrc", ".env.rc")
    ]
    todo += [(os.path.join(home, rc), rc, kind, 0) for rc, kind in _OTHER_TOPS.items()]
    seen: set[str] = set()
    bounds = _Bounds()
    tried: set[str] = set()  # as named: one name sourced again is not read (nor spent) again
    while todo:
        path, rc, kind, depth = todo.pop(0)  # breadth first: the operator's own names before what they name
        if path in tried:
            continue
        tried.add(path)
        content = bounds.read(path)  # first: most of the names do not exist
        if content is None:
            continue
        real = bounds.real(path)
        if real in seen:
            continue
        seen.add(real)
        for word in _sourced_words(content.decode("utf-8", "replace"), kind, home, bounds):
            if len(found) >= _NAMED_FILES:  # the file naming more is guarded itself (round 36 review2)
                return found
            if word.startswith(_RUN_MARK):  # a program it runs: guarded as the file, not read as one
                found.append((bounds.real(word[1:]), rc))
                continue
            if not _GLOB_MAGIC.search(word):
                found.append((bounds.real(word), rc))
                if depth < _SOURCE_DEPTH:
                    todo.append((word, rc, kind, depth + 1))
                continue
            # The literal directory, standing for the pattern's names below it (one a component).
            parts = word.split("/")
            index = next(i for i, part in enumerate(parts) if _GLOB_MAGIC.search(part))
            literal = "/".join(parts[:index]) or "/"
            found.append((bounds.real(literal), f"{_SOURCED_GLOB}/{_PATTERN_SEP.join(parts[index:])}"))
            if depth < _SOURCE_DEPTH:
                todo += [(match, rc, kind, depth + 1) for match in _bounded_glob(word, bounds)]
    return found


def _sourced_words(text: str, kind: str, home: str, spent: _Bounds) -> Iterator[str]:
    """The absolute paths (patterns kept) a start-up file of ``kind`` (``sh``, ``tmux``, ``vim``)
    sources, each expanded as far as the file itself says (``~``, ``$HOME``, its own variables) and
    the operator's environment (round 38).
    Lazily, in the file's order: the caller stops at its bound (round 36 review2). What its
    variables and loops hold is bounded (`_EXPANDED_CHARS`, `_PATH_MAX`; round 37 review2): past
    it a name is unknown, its uses not followed (the file doing so is the command's, guarded itself)."""
    # The operator's environment as shellrt was started with it (round 38: round 37 knew only HOME
    # and the file's own assignments): the variables an rc file uses but another start-up file
    # exports (``$DOTFILES``, ``$XDG_CONFIG_HOME``, ``$ZSH_CUSTOM``) hold these values in the next shell.
    known: dict[str, str] = {
        name: value
        for name, value in os.environ.items()
        if value and len(value) < _PATH_MAX and "$" not in value and "`" not in value
    }
    known["HOME"] = home
    loops: dict[str, list[str]] = {}
    if kind == "tmux":
        for match in _TMUX_SOURCE.finditer(text):
            yield from (w for w in (_expand(w, known) for w in _split(match.group(2), spent)) if w)
        return
    if kind == "vim":
        yield from (w for w in (_expand(m.group(1).strip(), known) for m in _VIM_SOURCE.finditer(text)) if w)
        return
    if kind == "lua":
        yield from (w for w in (_expand(raw, known) for raw in _lua_loads(text, known)) if w)
        return
    # A backslash-newline is removed before a shell reads words (``. ~/dot/a\<newline>b.sh`` sources
    # ``ab.sh``): `_word_at` stopped there, the word not followed (round 40 review18).
    text = text.replace("\\\n", "")
    streams = (
        _ASSIGN.finditer(text),
        _FOR.finditer(text),
        _SOURCED.finditer(text),
        _RUNS.finditer(text),
        _RUN_PARTS.finditer(text),
    )
    for match in _in_order(streams):
        if match.re is _ASSIGN:
            raw = _word_at(text, match.end())
            value = None if raw is None else _expand(raw, known, absolute=False)
            if value is None or len(value) > spent.room:
                known.pop(match.group(1), None)  # no longer known: a later use is not followed
            else:
                spent.room -= len(value)
                known[match.group(1)] = value
        elif match.re is _FOR:
            words: list[str] | None = []
            for raw in (w for piece in _split(match.group(2), spent) for w in _braces(piece, spent)):
                word = _expand(raw, known)
                if word and len(word) > spent.room:
                    words = None  # past the room: unknown
                    break
                if word and words is not None:
                    spent.room -= len(word)
                    words.append(word)
                if words is not None and len(words) >= _NAMED_FILES:
                    break  # no more is ever followed
            if words is None:
                loops.pop(match.group(1), None)
            else:
                loops[match.group(1)] = words
        elif match.re is _RUN_PARTS:  # every program of a directory (round 40)
            for raw in (w for piece in _split(match.group(1), spent) for w in _braces(piece, spent)):
                directory = _expand(raw, known)
                if directory and not _GLOB_MAGIC.search(directory):
                    yield directory.rstrip("/") + "/*"
        elif match.re is _RUNS:  # a program the start-up file runs by its path (round 39)
            start = match.end()
            if match.group(0).lstrip().startswith("alias") and text[start : start + 1] in ("'", '"'):
                # ``alias r='$D/x --go'``: the value is a command line (read when the alias is used)
                close = text.find(text[start], start + 1, text.find("\n", start) % (len(text) + 1))
                value = text[start + 1 : close] if close > 0 else ""
                word = _word_at(value, len(value) - len(value.lstrip()))
            else:
                word = _word_at(text, start)
            if word is None:
                continue
            loop = _VAR.fullmatch(word)
            if loop is not None and (loop.group(1) or loop.group(2)) in loops:
                # ``for f in ~/dot/init.d/*; do "$f"; done`` (round 40): each word, a pattern guarded
                # as sourced patterns are (every file it matches)
                for item in loops[loop.group(1) or loop.group(2)]:
                    yield item if _GLOB_MAGIC.search(item) else _RUN_MARK + item
                continue
            for expanded in (_expand(w, known) for w in _braces(word, spent)):
                if expanded:  # a pattern (braces past their bound) guarded as sourced patterns are
                    yield expanded if _GLOB_MAGIC.search(expanded) else _RUN_MARK + expanded
        else:
            word = _word_at(text, match.start(1))  # the regex's word: its extent only (a fast scan)
            if word is None:
                continue
            loop = _VAR.fullmatch(word)
            if loop is not None and (loop.group(1) or loop.group(2)) in loops:
                yield from loops[loop.group(1) or loop.group(2)]
                continue
            yield from (w for w in (_expand(b, known) for b in _braces(word, spent)) if w)


def _lua_loads(text: str, known: dict[str, str]) -> Iterator[str]:
    """The paths a Lua start-up file loads by ``dofile``/``loadfile`` of an expression of strings,
    ``os.getenv``/``vim.env`` and the home joined by ``..``, and by neovim's ``vim.cmd`` source;
    anything else in the expression makes it unknown (round 38)."""
    code = _LUA_NOISE.sub(lambda m: m.group(1) or "", text)
    for m in _LUA_LOAD.finditer(code):
        expr = m.group(1) if m.group(1) is not None else m.group(2)
        pieces: list[str] = []
        end = 0
        for piece in _LUA_PIECE.finditer(expr):
            if piece.start() != end:
                break
            end = piece.end()
            literal = piece.group(1) if piece.group(1) is not None else piece.group(2)
            variable = piece.group(3) or piece.group(4)
            value = literal if literal is not None else known.get(variable) if variable else known["HOME"]
            if value is None:
                break
            pieces.append(value)
        else:
            if end == len(expr) and pieces and sum(map(len, pieces)) < _PATH_MAX:
                yield "".join(pieces)
    close = -1  # the next ``]]`` (found once per block: a `.*?` per ``[[`` was quadratic)
    for m in _LUA_VIMCMD.finditer(code):
        if m.start() < close:
            continue  # text of the block before (read once)
        if m.group(4):
            if close < m.end():
                close = code.find("]]", m.end())
            if close < 0:
                return
            body = code[m.end() : close]
        else:
            body = m.group(2) if m.group(2) is not None else m.group(3)
        if m.group(1):  # vim.cmd.source("X")
            yield body.strip()
        else:
            yield from (v.group(1).strip() for v in _VIM_SOURCE.finditer(body))


def _in_order(streams: tuple[Iterator[re.Match[str]], ...]) -> Iterator[re.Match[str]]:
    """The matches of several ``finditer`` streams by their position, lazily (``heapq.merge``
    without its import on `shellrt run`'s path)."""
    heads = [next(stream, None) for stream in streams]
    while True:
        live = [(head.start(), i, head) for i, head in enumerate(heads) if head is not None]
        if not live:
            return
        _, index, head = min(live, key=lambda item: item[:2])
        yield head
        heads[index] = next(streams[index], None)


#: Groups a word may hold before it reads as one pattern (six lists of two are past `LIMIT` already).
_BRACE_GROUPS = 16
_BRACE_OPEN = re.compile(r"(?<!\$)\{")


def _braces(word: str, spent: _Bounds) -> list[str]:
    """``word``'s brace expansion (``~/.{path,exports}``: round 40 review18) within the read's
    ``braces``; past it each group as ``*`` (guarded as a pattern). Imported only for a word with a
    brace: not on `shellrt run`'s path otherwise."""
    if "{" not in word:
        return [word]
    from shellrt.supervisor._shell_braces import expand_braces

    if spent.braces < len(word) or len(word) >= _PATH_MAX or word.count("{") > _BRACE_GROUPS:
        first, close = _BRACE_OPEN.search(word), word.rfind("}")  # one ``*`` over them all: cheap
        return [word] if first is None or close < first.start() else [word[: first.start()] + "*" + word[close + 1 :]]
    words, scanned = expand_braces(word)
    spent.braces -= scanned
    return words


def _split(text: str, spent: _Bounds) -> list[str]:
    """The words of ``text`` as a shell splits them, within the read's `_LOOP_TEXT` (past it none:
    not followed; ``shlex`` costs ~3 s a MiB, round 37 review2)."""
    if len(text) > spent.loop_text:
        return []
    spent.loop_text -= len(text)
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _word_at(text: str, start: int) -> str | None:
    """The shell word of ``text`` at ``start``, its quotes removed (``"${HOME}"/dot/'a b'`` ->
    ``${HOME}/dot/a b``: round 40 trust3, a path built in quoted pieces), ``$`` left for `_expand`;
    None when a piece cannot be read so (a ``$`` in single quotes or escaped, a backquote, a
    backslash in double quotes, an unclosed quote, longer than `_PATH_MAX`): not followed."""
    out: list[str] = []
    index, size = start, 0
    while (m := _WORD_PIECE.match(text, index)) is not None and m.end() > index:
        piece = next(g for g in m.groups() if g is not None)
        if (m.group(2) is not None and "$" in piece) or (m.group(4) is not None and piece in "$`"):
            return None  # a ``$`` that is no expansion: `_expand` would read it as one
        size += len(piece)
        if size >= _PATH_MAX:
            return None
        out.append(piece)
        index = m.end()
    if text[index : index + 1] in ("\\", '"', "'"):
        return None  # a backslash, an unclosed quote, or a quoted piece with a newline or backquote
    return "".join(out)


#: One piece of a shell word: a double-quoted string, a single-quoted one, an unquoted run.
_WORD_PIECE = re.compile(r""""([^"\n`\\]*)"|'([^'\n`]*)'|([^\s;&|()<>`\\"']+)|\\([^\n])""")


def _unquote(word: str) -> str:
    return word[1:-1] if len(word) > 1 and word[0] == word[-1] and word[0] in "\"'" else word


def _expand(word: str, known: dict[str, str], *, absolute: bool = True) -> str | None:
    """``word`` with ``~`` and the known variables replaced; None when something else is left (a
    command substitution, another variable) or, with ``absolute``, when it is not an absolute path."""
    word = _unquote(word)
    if word == "~" or word.startswith("~/"):
        word = known["HOME"] + word[1:]
    pieces: list[str] = []
    size = end = 0
    for m in _VAR.finditer(word):  # each piece counted as it comes: a path is shorter than PATH_MAX
        value = known.get(m.group(1) or m.group(2))
        if value is None:
            return None
        pieces += [word[end : m.start()], value]
        size, end = size + m.start() - end + len(value), m.end()
        if size >= _PATH_MAX:
            return None  # longer than any path (round 37 review2: values doubled by ``A=$A$A``)
    word = "".join(pieces) + word[end:]
    if "$" in word or "`" in word or len(word) >= _PATH_MAX:
        return None
    return word if not absolute or word.startswith("/") else None


def _linked_rel(real: str, linked: dict[str, str]) -> str | None:
    """The home-relative name of real path ``real`` by `linked_places`, or None: by the nearest
    place holding it (round 38: the first found named it, so ``$CARGO_HOME`` inside a directory on
    ``PATH`` was that directory's, whose rule guards only its own files)."""
    best: tuple[int, str] | None = None
    for target, rel in linked.items():
        if real == target:
            return rel
        if real.startswith(target + "/") and (best is None or len(target) > best[0]):
            best = (len(target), f"{rel}/{real[len(target) + 1 :]}")
    return None if best is None else best[1]


def _ways_below(place: str, top: str) -> list[str]:
    """``place`` and its parent directories strictly below ``top``."""
    found = []
    while place != top and place.startswith(top + "/"):
        found.append(place)
        place = os.path.dirname(place)
    return found


class HomeNames:
    """The home directories inside one workspace, as the guard's walk names them; a home spelt
    otherwise on the way (``HOME=/x/WS/home``, workspace ``/x/ws``: one directory on a folding
    filesystem) counts too, compared folded (red team round 27 fold2; fails closed elsewhere)."""

    def __init__(self, root: Path) -> None:
        walk_root = str(root)
        self._root = walk_root
        real_root = os.path.realpath(root)
        homes: list[str] = []
        for home in _homes():
            for top, place in ((real_root, home), (fold_path(real_root), fold_path(home))):
                if place == top or place.startswith(top.rstrip("/") + "/"):
                    homes.append(walk_root if place == top else f"{walk_root}/{os.path.relpath(place, top)}")
                    break
        self.homes: tuple[str, ...] = tuple(dict.fromkeys(homes))
        self._folded = tuple(fold_path(h) for h in self.homes)
        #: Places in this workspace a home name outside it links to (`linked_places`), as the walk
        #: spells them -> the home-relative name they stand for (a dotfiles repository, round 31).
        self.linked: dict[str, str] = {}
        for real, rel in linked_places().items():
            if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
                self.linked[walk_root + real[len(real_root) :] if real != real_root else walk_root] = rel

        #: Each linked place and the directories on its way inside the workspace: a symlink made at
        #: one redirects what the operator's name leads to (round 38; the map is read at the start).
        self._ways = frozenset(
            way
            for place in self.linked
            for way in _ways_below(place, walk_root)
        )
        #: The operator's relative git template directories: one of every directory (round 38).
        self.templates = relative_templates()
        from shellrt.supervisor._operator_places import relative_path_entries

        #: The operator's relative PATH entries (``.``, an empty one): in every directory (round 38 review4).
        self.path_entries = relative_path_entries()

    def shadows(self, directory: str, name: str) -> bool:
        """Whether file ``name`` of ``directory`` shadows a program by a relative PATH entry."""
        return bool(self.path_entries) and relative_path_shadow(directory, name, self.path_entries)

    def in_template(self, directory: str) -> bool:
        """Whether every file of ``directory`` (as the walk spells it) is a relative template's."""
        return bool(self.templates) and in_relative_template(directory[len(self._root) :] or "/", self.templates)

    @property
    def active(self) -> bool:
        """Whether any name here is a home's (a home inside the workspace, or a place one links to)."""
        return bool(self.homes or self.linked)

    def linked_way(self, path: str) -> bool:
        """Whether a symlink at ``path`` (as the walk spells it) redirects a linked place."""
        return path in self._ways

    def linked_file(self, path: str) -> bool:
        """Whether file ``path`` (as the walk spells it) is an obeyed home file by a link to it."""
        rel = self.linked.get(path)
        if rel is None:
            return False
        rel_dir, _, name = rel.rpartition("/")
        return _protects(rel_dir, name, is_link=False)

    def relatives(self, directory: str) -> tuple[str, ...]:
        """The home-relative names of ``directory``: by the home it is in (``""`` for the home
        itself; a match of the folded names gives the folded rest) and by the nearest linked place
        holding it, both. Why (red team round 39 trust2): with the home as the workspace, a linked
        place inside it (a ``PATH`` directory ``~/dot/bin``, ``$CARGO_HOME``, a directory the
        ``.bashrc`` sources by a pattern) was named by the home alone (``dot/bin``: no row), and
        what it stands for was never looked up: its plants were kept."""
        found: list[str] = []
        for home in self.homes:
            if directory == home:
                found.append("")
                break
            if directory.startswith(home + "/"):
                found.append(directory[len(home) + 1 :])
                break
        else:
            if self.homes:
                folded = fold_path(directory)
                for home in self._folded:
                    if folded == home or folded.startswith(home + "/"):
                        found.append(folded[len(home) + 1 :])
                        break
        if self.linked:
            linked = _linked_rel(directory, self.linked)
            if linked is not None:
                found.append(linked)
        return tuple(found)

    def relative(self, directory: str) -> str | None:
        """The first of `relatives` (by the home when in one), else None."""
        found = self.relatives(directory)
        return found[0] if found else None

    @staticmethod
    def protects(rel_dir: str, name: str, is_link: bool) -> bool:
        """Whether entry ``name`` (a file or symlink) of home-relative ``rel_dir`` is protected."""
        return _protects(rel_dir, name, is_link)


def home_reason(path: str | Path) -> str | None:
    """Why a later host program obeys absolute ``path`` because of where it lies in a home, or None
    (by its name alone, as `protect.protected_reason`: the disk is not looked at)."""
    normal = os.path.normpath(path)
    homes = [*_homes(), *(os.path.normpath(h) for h in (os.environ.get("HOME", ""),) if h.startswith("/"))]
    folded = fold_path(normal)
    for home in dict.fromkeys(homes):
        top = home.rstrip("/") + "/"
        ftop = fold_path(top)
        rest = (
            normal[len(top) :]
            if normal.startswith(top)
            else folded[len(ftop) :]
            if folded.startswith(ftop)
            else None
        )
        if rest is not None:
            rel_dir, _, name = rest.rpartition("/")
            if _protects(rel_dir, name, is_link=False):
                return "a file in the home directory that a later program runs, imports or obeys (PATH, login, ssh, autostart, the user site-packages)"
    if in_relative_template(os.path.dirname(normal), relative_templates()):
        return (
            "a file of a directory your git config names as a relative init.templateDir: your next git "
            "init or git clone run in the directory holding it copies it into the new repository"
        )
    from shellrt.supervisor._operator_places import relative_path_entries

    if relative_path_shadow(os.path.dirname(normal), os.path.basename(normal), relative_path_entries()):
        return (
            "a program named as another your PATH finds, in a directory a relative entry of your PATH "
            "(an empty one, '.') names: your next shell run there may run it instead of the one you mean"
        )
    real = _resolved(normal)
    if real is None:  # fail closed: what it leads to is not known
        return "a path a link on whose way changed while it was resolved (it may lead to a home file)"
    linked = _linked_rel(real, linked_places())
    if linked is not None:
        rel_dir, _, name = linked.rpartition("/")
        if linked.startswith(_SOURCED_GLOB + "/") and _protects(rel_dir, name, is_link=False):
            return (
                "a file your shell's, tmux's or vim's start-up file sources by a pattern or a loop (a file "
                "added there runs in your next shell too)"
            )
        if linked == _GIT_TEMPLATE or linked.startswith(_GIT_TEMPLATE + "/"):
            return (
                "a file of your git template directory (init.templateDir or $GIT_TEMPLATE_DIR): your next "
                "git init or git clone copies it into the new repository (its hooks run, its config applies)"
            )
        if rel_dir.startswith(PATH_DIR + _PATTERN_SEP) and _protects(rel_dir, name, is_link=False):
            return (
                "a file in a directory on your PATH: your next shell runs it by its name (instead of a "
                "program you mean, at a typo, or as a helper git or docker runs by name)"
            )
        if rel_dir.startswith(PYTHONPATH_DIR + _PATTERN_SEP) and _protects(rel_dir, name, is_link=False):
            return (
                "a module in a directory on your PYTHONPATH named as one Python finds later (the standard "
                "library's, an installed package's, sitecustomize): every python you start imports it instead"
            )
        if rel_dir.startswith(LIBPATH_DIR + _PATTERN_SEP) and _protects(rel_dir, name, is_link=False):
            return (
                "a module in a directory on your PERL5LIB, RUBYLIB, LUA_PATH or CLASSPATH named as one that "
                "interpreter finds later (its standard library's, an installed one's, a service entry): "
                "every perl, ruby, lua or java you start loads it instead"
            )
        if linked == CONFIG_PROGRAM:
            return (
                "a program or script your git or ssh config names by its path (core.pager, "
                "credential.helper, ProxyCommand…): your next git or ssh command runs it"
            )
        if linked == ENV_FILE:
            return (
                "a file your environment names as a program's start-up file (PYTHONSTARTUP, BASH_ENV, "
                "KUBECONFIG…): that program loads it at its next start"
            )
        if _protects(rel_dir, name, is_link=False):
            return (
                f"~/{linked} by a link from the home directory or a variable of your environment: a file a later program runs or obeys "
                "(shell start-up, ssh, autostart, an agent's settings)"
            )
    return None
