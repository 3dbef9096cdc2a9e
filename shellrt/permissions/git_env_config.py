"""git configuration given in the environment: dropped when an entry runs or reads a writable place.

Why: ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_<n>``/``GIT_CONFIG_VALUE_<n>`` and
``GIT_CONFIG_PARAMETERS`` (what ``git -c`` passes to its children) are configuration of the
command-line scope, which beats every file: ``core.fsmonitor=<ws>/fsm.sh`` made a hook's ``git
status`` over the operator's own repository run a program a sandboxed command wrote, on the host
(red team, round 35). A relative value is resolved from the cwd or the repository (``core.hooksPath
=hooks``), and a command's words are files too (``sh x.sh``). Judged per entry: a key that runs
nothing (`embedded.GIT_SAFE_KEYS`) passes; a command key passes when every word but its program
(a bare name: looked up on the cleaned ``PATH``) is an option or a kept absolute path; any other
key when its value has no relative path piece, and, for a key that names a file or directory,
when it is such an absolute path. One bad or unparsable entry removes the whole family.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from shellrt.permissions.embedded import GIT_COMMAND_KEYS, GIT_SAFE_KEYS
from shellrt.permissions.env_values import names_a_writable_place, safe_path

__all__ = ["is_git_env_config", "unsafe_git_env_config"]

_NUMBERED = re.compile(r"GIT_CONFIG_(KEY|VALUE)_[0-9]+")
#: Keys whose value is a file or directory git reads or runs from.
_PATH_KEYS = re.compile(r"(?i)(include|includeif)\..*|.*(path|file|dir|directory|worktree|cert|key|cainfo|capath)")
_HARMLESS = frozenset({"", "false", "true", "cat", "never", "0", "1", "none", "no", "yes", "off", "on"})


def is_git_env_config(name: str) -> bool:
    """``name`` is one of the variables git reads configuration from."""
    return name in ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT") or _NUMBERED.fullmatch(name) is not None


def unsafe_git_env_config(env: Mapping[str, str], roots: Sequence[str], home: str | None) -> bool:
    """Whether some configuration entry of ``env`` may run or read what commands wrote (or cannot
    be read: fails closed). ``roots``: `env_values.every_root`'s."""
    entries = _entries(env)
    return entries is None or any(_unsafe(key, value, roots, home) for key, value in entries)


def _entries(env: Mapping[str, str]) -> list[tuple[str, str]] | None:
    """(key, value) of every entry; None when a value is malformed (git would refuse it too)."""
    entries: list[tuple[str, str]] = []
    if "GIT_CONFIG_PARAMETERS" in env:
        try:
            words = shlex.split(env["GIT_CONFIG_PARAMETERS"])  # 'key'='value' and the old 'key=value'
        except ValueError:
            return None
        entries += [(key, value) for key, _, value in (word.partition("=") for word in words)]
    numbered = {name for name in env if _NUMBERED.fullmatch(name)}
    if "GIT_CONFIG_COUNT" in env or numbered:
        count = env.get("GIT_CONFIG_COUNT", "0")
        if not count.isdigit() or int(count) > 1000:
            return None
        for n in range(int(count)):
            entries.append((env.get(f"GIT_CONFIG_KEY_{n}", ""), env.get(f"GIT_CONFIG_VALUE_{n}", "")))
        # Entries past the count are read by no git; judged anyway (a child may raise the count).
        for name in numbered:
            n = int(name.rpartition("_")[2])
            if name.startswith("GIT_CONFIG_KEY_") and n >= int(count):
                entries.append((env[name], env.get(f"GIT_CONFIG_VALUE_{n}", "")))
    return entries


def _unsafe(key: str, value: str, roots: Sequence[str], home: str | None) -> bool:
    if GIT_SAFE_KEYS.fullmatch(key):
        return False
    if value.strip().lower() in _HARMLESS and not _PATH_KEYS.fullmatch(key):
        return False
    if names_a_writable_place(value, roots, home):
        return True
    if GIT_COMMAND_KEYS.fullmatch(key) or key.lower() == "core.fsmonitor":
        program, *words = value.lstrip("!").split() or [""]
        if "/" in program and not safe_path(program, roots):
            return True
        return any(not word.startswith("-") and not safe_path(word, roots) for word in words)
    if _PATH_KEYS.fullmatch(key):
        path = home + value[1:] if home and value.startswith("~/") else value
        return not safe_path(path, roots)
    return False
