"""Perl, Ruby and PHP hook scripts: whether one may load code by a path from the workspace.

Why (red team round 53): Python, node and shell hook scripts are read for what they load
(rounds 40-51); a Perl, Ruby or PHP script was recorded as a file and nothing more. Their relative
loads start at the cwd, the workspace root where hooks run, wherever the script lies: ``use lib
"lib"; use A;`` (Perl), ``load "lib/a.rb"``, ``require "./lib/a"``, ``require_relative
"../../lib/a"`` (Ruby), ``include "lib/a.php"`` (PHP, whose ``include_path`` starts with ``.``) ran
a command's ``lib/`` file in the operator's hook, outside or inside the workspace, unrecorded.
These languages are not parsed here: a script holding any loading construct (by a pattern, so a
word in a comment or string counts: over-reads) is read as loading the tree (the caller records
the workspace whole); a script holding none loads modules by name from the interpreter's own
search path only (Perl 5.26+ and Ruby 1.9.2+ have no ``.`` there; ``-I`` dirs are read on the line).
"""

from __future__ import annotations

import os
import re

from shellrt.permissions.hook_read import read_regular

__all__ = ["OTHER_INTERPRETERS", "loads_by_path", "other_interpreter_loads"]

_PERL = re.compile(
    rb"\b(?:use|no)\s+lib\b|\brequire\s*[^\sA-Za-z_]|\bdo\s*[^\s{]|\beval\s*[^\s{]|[@%$]INC\b|\bFindBin\b"
    rb"|\bload\b|Module::|\bUNIVERSAL::require|\bPERL5"
)
_RUBY = re.compile(
    rb"\brequire_relative\b|\bload\b|\brequire\s*\(?\s*(?:[^\s\"'(]|[\"'][./~])|\$LOAD_PATH|\$:|\$LOADED_FEATURES"
    rb"|\$\"|\beval\b|_eval\b|\bautoload\b|[Bb]undler|\bgem\b|\bKernel\b|\bsend\b|RUBY"
)
_PHP = re.compile(rb"\b(?:include|require)(?:_once)?\b|\beval\b|autoload|include_path|\bdl\b|Phar")
#: Interpreters (by base name, a version suffix allowed) and what in a script of theirs loads by a path.
OTHER_INTERPRETERS: dict[str, re.Pattern[bytes]] = {"perl": _PERL, "ruby": _RUBY, "php": _PHP}
_VERSIONED = re.compile(r"(perl|ruby|php)[0-9.]*")
#: Scripts larger than this are not read (they count as loading).
_MAX_SCRIPT = 4 << 20


def loads_by_path(program: str, script: str) -> bool | None:
    """Whether the script ``script`` (a path) given to ``program`` (a base name) may load code by
    a path (None: ``program`` is none of these interpreters). An unreadable or absent script counts."""
    matched = _VERSIONED.fullmatch(program)
    if matched is None:
        return None
    if not os.path.isfile(script):
        return False  # absent: recorded so by the caller, its appearance is a change
    data = read_regular(script, _MAX_SCRIPT + 1)
    if data is None or len(data) > _MAX_SCRIPT:
        return True
    return OTHER_INTERPRETERS[matched.group(1)].search(data) is not None


#: Flags of these interpreters that load nothing (letters, combinable: ``-wT``).
_PLAIN_FLAGS = frozenset("wWTtnpasclUXv")


def other_interpreter_loads(program: str, args: list[str | None], cwd: str) -> bool | None:
    """Whether ``program args`` (a Perl, Ruby or PHP command run from ``cwd``) may load code by a
    path relative to ``cwd``: an option other than plain flags and ``-I`` (``-Mlib=lib``,
    ``-r./x``, ``-x``, ``-d:Trace``), a script chosen at run time, or a script holding a loading
    construct (`loads_by_path`). None: ``program`` is none of these; no script: False (code given
    inline or on standard input is read by `hook_tree_loaders.first_search_dir`)."""
    if _VERSIONED.fullmatch(program) is None:
        return None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg is None:
            return True
        if arg == "--":
            index += 1
            break
        if arg == "-I":
            index += 2  # the directory: a path word of the line (recorded whole)
            continue
        if arg.startswith("-") and len(arg) > 1:
            if not arg.startswith("-I") and not set(arg[1:]) <= _PLAIN_FLAGS:
                return True
            index += 1
            continue
        break
    if index >= len(args):
        return False
    script = args[index]
    if script is None:
        return True
    return bool(loads_by_path(program, os.path.join(cwd, os.path.expanduser(script))))
