"""The operator's git config files that the environment, not the home directory, names, and the
files the operator's own configs include.

Why: every later ``git`` on the host obeys ``$XDG_CONFIG_HOME/git/config`` and
``$GIT_CONFIG_GLOBAL`` (``core.fsmonitor``, ``core.pager``, aliases with ``!``: programs it runs
in every repository). The after-command check knew them only as ``~/.config/git/config`` and
``~/.gitconfig``; with ``XDG_CONFIG_HOME`` inside a writable root (a dotfiles repository as the
workspace, its ``config/`` the operator's XDG directory) a command planted one unseen (red team
round 18). So did a file those configs include (``[include] path = ~/dotfiles/git/extra.inc``, a
common way to keep settings in a dotfiles repository): git reads it as more of the operator's own
config (red team round 36: trust). The files are guarded as git config (only code-running keys count).
And the directory they name as ``init.templateDir`` (or ``$GIT_TEMPLATE_DIR``): every file of it is
copied into each repository the operator's next ``git init``/``git clone`` makes (round 37).
"""

from __future__ import annotations

import functools
import os

__all__ = ["env_gitconfigs", "operator_config_programs", "operator_template_dirs", "relative_template_dirs"]

#: The configs looked at -> (the versions of those and of the files they include, those files'
#: spellings) of the last look (`_included`).
_included_cache: dict[tuple[str, ...], tuple[tuple[object, ...], tuple[str, ...], frozenset[str]]] = {}


def env_gitconfigs() -> frozenset[str]:
    """The env-named user git configs, and the files the operator's user and system configs
    include, spelled as the check's walk spells paths (the directory resolved, the name kept)
    and as given."""
    env = os.environ.get
    home = env("HOME") or ""
    xdg, global_file = env("XDG_CONFIG_HOME") or "", env("GIT_CONFIG_GLOBAL") or ""
    return _named(xdg, global_file) | _linked(home) | _included(home, xdg, global_file, env("GIT_CONFIG_SYSTEM") or "")


@functools.lru_cache(maxsize=8)
def _named(xdg: str, global_file: str) -> frozenset[str]:
    found: set[str] = set()
    for path in (os.path.join(xdg, "git", "config") if os.path.isabs(xdg) else "", global_file):
        if not path or not os.path.isabs(path):  # git ignores a relative XDG_CONFIG_HOME
            continue
        found |= _spellings(path)
    return frozenset(found)


def _spellings(path: str) -> set[str]:
    """``path`` as given (normalised), with its directory resolved, and resolved whole."""
    return {
        os.path.normpath(path),
        os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path)),
        os.path.realpath(path),
    }


def _linked(home: str) -> frozenset[str]:
    """Where ``~/.gitconfig`` and ``~/.config/git/config`` lead when a link takes them elsewhere (a
    dotfiles repository: ``~/.gitconfig -> ~/dotfiles/gitconfig``; red team round 31). Not cached:
    a link can change between sessions."""
    if not os.path.isabs(home):
        return frozenset()
    found = set()
    for path in (os.path.join(home, ".gitconfig"), os.path.join(home, ".config", "git", "config")):
        real = os.path.realpath(path)
        if real != path:
            found.add(real)
    return frozenset(found)


def _included(home: str, xdg: str, global_file: str, system_file: str) -> frozenset[str]:
    """Every file the operator's own git configs include (``include.path``, ``includeIf.*.path``:
    each condition taken as met, ten deep, at most 256 files a config, relative to the including file, ``~`` expanded), also
    those that do not exist yet (a command may create one). Read once per version of them all."""
    from shellrt.supervisor.protect import config_hooks_and_includes  # it imports this module

    tops = [
        os.path.join(home, ".gitconfig") if os.path.isabs(home) else "",
        os.path.join(xdg if os.path.isabs(xdg) else os.path.join(home, ".config"), "git", "config"),
        global_file,
        "/etc/gitconfig",
        system_file,
    ]
    tops = [t for t in dict.fromkeys(tops) if t and os.path.isabs(t)]
    key = tuple(tops)
    cached = _included_cache.get(key)
    if cached is not None and cached[0] == tuple(file_version(f) for f in (*tops, *cached[1])):
        return cached[2]
    included: list[str] = []
    for top in tops:
        # Past the walk's bound (a file of 100 000 includes: round 36 review2) the first files named
        # are guarded; the file that named the rest is guarded git config itself (it is one of these).
        included += config_hooks_and_includes(top)[1]
    files = tuple(dict.fromkeys(included))
    result = frozenset(spelling for path in files for spelling in _spellings(path))
    _included_cache.clear()  # one environment at a time: the operator's
    _included_cache[key] = (tuple(file_version(f) for f in (*tops, *files)), files, result)
    return result


#: (the configs and their versions) -> the ``init.templateDir`` values and the programs named by
#: path of the last look.
_template_cache: dict[tuple[object, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
#: Most program paths one look keeps (a config naming more: the rest are not guarded; it is itself).
_NAMED_PROGRAMS = 256


def operator_template_dirs() -> tuple[str, ...]:
    """`_operator_keys`' template directories."""
    return _operator_keys()[0]


def operator_config_programs() -> tuple[str, ...]:
    """The programs and scripts the operator's own git configs name by an absolute or ``~/`` path
    in a code-running value (``core.pager = ~/dotfiles/bin/pager``, ``credential.helper``, ``alias.x
    = !sh ~/dotfiles/x.sh``, ``core.fsmonitor``), ``~`` expanded. Why (red team round 38: trust):
    the configs were guarded, not what they run: with the dotfiles repository as the workspace a
    command rewrote the script and the operator's next ``git log``/``git push`` ran it."""
    return _operator_keys()[1]


def _operator_keys() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(template directories, `operator_config_programs`). The git template directories the operator's
    next ``git init``/``git clone`` copies into the new repository (``~`` expanded): ``$GIT_TEMPLATE_DIR`` and every ``init.templateDir``
    of the operator's own configs and the files they include (each condition taken as met, every
    value kept, not only git's last: fails closed). Why (red team round 37: trust): the template's
    ``hooks/`` become the clone's hooks (``post-checkout`` runs during the clone) and its ``config``
    the clone's config; one kept in a dotfiles repository is the workspace's to write. Read without
    running git, once per version of those files. A relative value (resolved from wherever git
    runs) is returned as written (`relative_template_dirs`)."""
    from shellrt.supervisor.protect import code_running_git_keys, config_hooks_and_includes

    env = os.environ.get
    home, xdg = env("HOME") or "", env("XDG_CONFIG_HOME") or ""
    tops = [
        os.path.join(home, ".gitconfig") if os.path.isabs(home) else "",
        os.path.join(xdg if os.path.isabs(xdg) else os.path.join(home, ".config"), "git", "config"),
        env("GIT_CONFIG_GLOBAL") or "",
        "/etc/gitconfig",
        env("GIT_CONFIG_SYSTEM") or "",
    ]
    tops = [t for t in dict.fromkeys(tops) if t and os.path.isabs(t)]
    files = list(tops)
    for top in tops:
        files += config_hooks_and_includes(top)[1]  # bounded (round 36 review2)
    files = list(dict.fromkeys(files))
    # The environment too: a program named through `$DOTFILES` moves with it (round 38 review4).
    key = (*files, *(file_version(f) for f in files), hash(frozenset(os.environ.items())))
    cached = _template_cache.get(key)
    if cached is None:
        found: list[str] = []
        programs: list[str] = []
        for path in files:
            content = _read(path)
            for name, value in code_running_git_keys(content) if content else ():
                if name == "init.templatedir" and value.strip():
                    found.append(os.path.expanduser(value.strip()))
                elif len(programs) < _NAMED_PROGRAMS:
                    programs += _path_words(value)[: _NAMED_PROGRAMS - len(programs)]
        cached = (tuple(found), tuple(dict.fromkeys(programs)))
        _template_cache.clear()
        _template_cache[key] = cached
    named = [os.path.expanduser(env("GIT_TEMPLATE_DIR") or ""), *cached[0]]
    # A path of PATH_MAX characters or more names no directory (and its realpath is quadratic: one
    # of 512 KiB took 13 s in every `linked_places`; round 37 review2). A relative one names a
    # directory of every directory git runs in: `relative_template_dirs`.
    return tuple(dict.fromkeys(v for v in named if v and len(v) < _PATH_MAX)), cached[1]


def _path_words(value: str) -> list[str]:
    """The words of a command-line value that are paths (`_operator_places.path_word`: ``~/``,
    ``$HOME``, ``${DOTFILES}`` expanded as the shell git runs it does; an alias's ``!`` dropped; split
    on blanks and quotes, a ``--opt=PATH`` word's value too; within `_PATH_MAX` each)."""
    from shellrt.supervisor._operator_places import path_word

    home = os.environ.get("HOME") or ""
    words = value.lstrip("!").replace('"', " ").replace("'", " ").split()
    found = []
    for word in words[:64]:
        for part in (word, word.partition("=")[2]) if "=" in word else (word,):
            path = path_word(part.lstrip("!"), home)
            if path is not None:
                found.append(path)
    return found


def relative_template_dirs() -> tuple[str, ...]:
    """The relative template directories of `operator_template_dirs`, normalised (``./.tmpl`` ->
    ``.tmpl``): git resolves one from the directory it runs in, so ``<any directory>/.tmpl`` is copied
    into the repository the operator's next ``git clone`` there makes (red team round 38: round 37
    followed absolute values only). One naming a parent (``../t``) stands for every directory too."""
    found = []
    for value in operator_template_dirs():
        if not os.path.isabs(value):
            parts = [p for p in os.path.normpath(value).split("/") if p not in ("", ".", "..")]
            if parts:
                found.append("/".join(parts))
    return tuple(dict.fromkeys(found))


_PATH_MAX = 4096


def _read(path: str) -> str | None:
    """A config's text, never blocking (a FIFO), at most 1 MiB."""
    from sandbox._hostread import read_regular

    content = read_regular(path, 1 << 20)
    return None if content is None else content.decode("utf-8", "replace")


def file_version(path: str) -> object:
    """What tells a config file changed (size, mtime, inode, ctime; None when missing): a cache's key."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
