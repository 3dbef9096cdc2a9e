"""Environment variables a program reads as its own options or configuration.

Why a module of its own: git reads ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` and
``GIT_CONFIG_PARAMETERS`` as ``-c`` settings (``core.fsmonitor`` runs a program on ``git status``), npm
reads every ``npm_config_*`` as an option (``script-shell`` runs each script), man reads ``MANOPT``
(``-P``, ``-H``), less and more read ``LESS``/``MORE`` (``+!cmd``), rustup and go pick the toolchain
they run from ``RUSTUP_TOOLCHAIN``/``GOTOOLCHAIN``/``GOROOT``. Their names say neither "command" nor
"options", so the rules that read such names missed them: a value known only at run time there named a
program no rule reads (``x=$(printf '\\x72m'); GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor
GIT_CONFIG_VALUE_0="$x" git status`` passed ``Bash(rm:*)``; red team, round 37). One list, read for
every binding of such a name (a prefix, ``export``, ``env``, ``printf -v``).
"""

from __future__ import annotations

import re
import shlex
from typing import Final

__all__ = ["config_variable_code", "is_config_variable"]

#: Names whose value a program reads as its configuration or options (whole names or namespaces).
_CONFIG_VARIABLE: Final = re.compile(
    r"GIT_CONFIG_PARAMETERS|GIT_CONFIG_COUNT|GIT_CONFIG_(?:KEY|VALUE)_[0-9]+"
    # Package managers and build tools that read any of their settings from the environment, some of
    # which name a program (npm's `script-shell`, `git`, `node-gyp`; uv's `UV_PYTHON`; cargo's aliases).
    # yarn 1 reads `yarn_*` in any case, as npm does `npm_config_*` (round 37, review3).
    r"|(?i:npm_config_[A-Za-z0-9_]+)|(?i:yarn_[A-Za-z0-9_]+)|UV_[A-Z0-9_]+"
    r"|CARGO_(?:ALIAS|BUILD|TARGET|HOST|REGISTRIES|SOURCE|NET|HTTP)_[A-Z0-9_]+"
    # Programs whose options come from a variable; toolchains a wrapper runs.
    r"|MANOPT|LESS|MORE|LESSKEYIN|LESSKEY|RUSTUP_TOOLCHAIN|GOTOOLCHAIN|GOROOT|GOENV"
)
#: Options in ``MANOPT``/``LESS``/``MORE`` that name a program (``-P``/``--pager``, ``-H``/``--html``)
#: or a command (less's ``+!cmd``, ``+|cmd``; any ``+`` command, which less runs on a terminal).
_STATIC_RUNNERS: Final[dict[str, re.Pattern[str]]] = {
    "MANOPT": re.compile(r"-[^-]*[PH]|--pag|--ht|--pre"),
    "LESS": re.compile(r"\+|-[^-]*k|--lesskey"),
    "MORE": re.compile(r"\+"),
}


def is_config_variable(name: str) -> bool:
    """Whether a program reads the variable ``name`` as its options or configuration."""
    return _CONFIG_VARIABLE.fullmatch(name) is not None


def config_variable_code(name: str, value: str) -> str:
    """Why setting ``name`` to ``value`` (as written) may make a program run one no rule reads ("" when
    it does not): a value known only at run time (a ``$`` or a backquote anywhere: fail closed), or a
    static ``MANOPT``/``LESS``/``MORE`` option that names a program glued to its text (``-Prm``)."""
    if not is_config_variable(name):
        return ""
    if "$" in value or "`" in value:
        return f"{name} is configuration a program reads, set to a value known only at run time"
    runner = _STATIC_RUNNERS.get(name)
    if runner is None:
        return ""
    try:
        words = shlex.split(value)
    except ValueError:
        return f"{name}'s value is not a list of words"
    hit = next((w for w in words if runner.match(w)), "")
    return f"{name} gives the program {hit!r}, which names a program or a command it runs" if hit else ""
