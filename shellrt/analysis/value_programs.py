"""Program files named by a value: an option that runs a program, a variable that names one.

Why: a command that writes a program and runs it through a value (``cp "$x" q; java -XX:OnError=./q``,
``…; fzf --preview=./q``, ``…; git daemon --access-hook=./q``, ``…; CC=./q make``,
``…; npm_config_script_shell=./q npm run t``, ``…; GIT_CONFIG_VALUE_0=./q git status``) runs what it
wrote under a name no rule reads (``x`` held ``/bin/rm``): the engine's "made here" check read a
program's own path, its scripts and the option table's values, not these (red team, round 37). Only a
value with a ``/`` is a file here; a bare name is a word the rules read.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Final

from .runner_names import RUNS_NAME

__all__ = ["git_code_write", "git_config_paths", "git_hook_paths", "option_program_paths", "variable_program_paths"]


def option_program_paths(argv: Sequence[str]) -> list[str]:
    """The files (with a ``/``) that options named as running a program are given (``--preview=./q``,
    ``-XX:OnError=./q x``, ``--access-hook ./q``), as written."""
    words = [w.strip("'\"") for w in argv[1:]]
    found: list[str] = []
    for i, word in enumerate(words):
        option, eq, value = word.partition("=")
        if not eq:
            option, value = (words[i - 1] if i > 0 else ""), word
            if "=" in option:
                continue
        if option.startswith("-") and RUNS_NAME.search(option):
            found += _paths(value)
    return found


#: The hooks git runs (githooks(5)): a command that writes one and then runs git runs what it wrote.
_GIT_HOOKS: Final = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
    "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
    "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
    "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "post-index-change", "p4-changelist",
    "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
)  # fmt: skip


def git_hook_paths(argv: Sequence[str]) -> list[str]:
    """The hook files a git command may run, as paths from where it runs: ``.git/hooks/*``, and a
    ``--template=DIR``'s ``DIR/hooks/*`` (``git clone`` copies them in and runs ``post-checkout``)."""
    dirs = [".git"]
    words = [w.strip("'\"") for w in argv[1:]]
    for i, word in enumerate(words):
        if word.startswith("--template="):
            dirs.append(word.partition("=")[2])
        elif word == "--template" and i + 1 < len(words):
            dirs.append(words[i + 1])
    return [f"{d.rstrip('/')}/hooks/{hook}" for d in dirs if d for hook in _GIT_HOOKS]


def git_code_write(path: str) -> bool:
    """Whether a file a command writes may be code or configuration git runs, wherever git looks for its
    repository: a hook's name in any directory (``g/hooks/pre-commit`` under ``GIT_DIR=g``,
    ``--git-dir``, ``-C dir``, the main repository of a worktree, a submodule's ``.git/modules/m/hooks``,
    a ``core.hooksPath`` or template directory), a ``hooks`` directory written whole, or anything in a
    git directory (``.git/hooks/``, ``.git/config``, a ``.git`` file naming another one, ``repo.git/``).
    Why: round 37 read only ``.git/hooks/<hook>`` from where git runs, so a hook written anywhere else
    git takes its repository from ran under a name no rule reads (red team, round 37, review3)."""
    parts = [p for p in os.path.normpath(path).split("/") if p not in ("", ".")]
    if not parts:
        return False
    return (
        parts[-1] in _GIT_HOOKS
        or parts[-1] in _GIT_CONFIG_FILES
        or parts[-1] == "hooks"
        or parts[-2:] in (["git", "config"], ["git", "attributes"])  # ~/.config/git/ (round 39)
        or any(p in (".git", ".ssh") or (p.endswith(".git") and len(p) > 4) for p in parts)
    )


#: git's own configuration outside a git directory (a filter, textconv or fsmonitor it names runs), and
#: ssh's (a ``ProxyCommand`` runs on ``git fetch``): round 39.
_GIT_CONFIG_FILES: Final = frozenset({".gitconfig", ".gitattributes", ".gitmodules"})


def git_config_paths(argv: Sequence[str]) -> list[str]:
    """The files (with a ``/``) ``git config`` stores as values (``git config core.fsmonitor ./q``,
    ``alias.x '!./q'``): a later git command of the same command line runs them. A relative
    ``include.path`` is read from the configuration file's directory (``../c`` in ``.git/config``
    is ``c``), and may hold any setting, so each value is also taken from ``.git/``."""
    words = [w.strip("'\"") for w in argv[1:]]
    at = _subcommand_at(words)
    if at is None or words[at] != "config":
        return []
    found: list[str] = []
    for word in words[at + 1 :]:
        if not word.startswith("-"):
            paths = _paths(word) or ([word] if "$" not in word and "`" not in word else [])
            found += [*_paths(word), *(f".git/{p}" for p in paths if not p.startswith(("/", "~")))]
    return found


#: git's options before the subcommand that take the next word as their value.
_GIT_VALUED: Final = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                                "--config-env", "--list-cmds", "--attr-source"})


def _subcommand_at(words: Sequence[str]) -> int | None:
    """The index of git's subcommand among ``words`` (its arguments), None when there is none."""
    i = 0
    while i < len(words):
        if words[i] in _GIT_VALUED:
            i += 2
        elif words[i].startswith("-"):
            i += 1
        else:
            return i
    return None


def variable_program_paths(variables: dict[str, str | None], names_program: object) -> list[tuple[str, str]]:
    """(name, file) for each variable ``names_program(name)`` says names a program (``CC``,
    ``GIT_PAGER``, ``npm_config_script_shell``, ``MANOPT``) whose static value holds a file with a ``/``."""
    check = names_program if callable(names_program) else None
    if check is None:
        return []
    return [(name, path) for name, value in variables.items() if value and check(name) for path in _paths(value)]


def _paths(value: str) -> list[str]:
    """Words of a command line or options value that are files: ``./q``, ``!./q x``, ``-P./q``, ``|./q``."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    found = []
    for word in words:
        word = word.lstrip("!|")
        if word.startswith("-"):
            word = word.partition("=")[2] if "=" in word else word[2:]
        if "/" in word and "$" not in word and "`" not in word:
            found.append(word)
    return found
