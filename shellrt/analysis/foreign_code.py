"""Code given to a program no table models: inline (``guile -c '(system …)'``, ``erl -eval``), on a
here-document (``psql db <<EOF \\! …``), a pipe, ``/dev/stdin``, or a file the command writes.

Round 29's tables name 19 languages; a language they do not name ran its inline or stdin code past
every command rule (red team, round 30). Listing interpreters never ends, so this is a rule about
the command line instead: a program with no model of its own (no read-only spec, no table) given an
option that usually takes code (``--eval``, ``--expr``, ``--execute``; ``-c``/``-e`` with a value
that reads as code: blanks, quotes, brackets, ``$``), an ``eval`` subcommand, a here-document,
``/dev/stdin``, or a pipe when it has no words at all (``curl … | guile``). Data readers everyone
uses so (``tee``, ``patch``), builtins and wrappers are named and left out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from shellrt.analysis.programs import program_spec

__all__ = ["foreign", "foreign_code", "foreign_files"]

#: Options that take code in the tools that have them (long or single-dash long spellings).
_CODE_OPTIONS = frozenset({
    "--eval", "-eval", "--expr", "-expr", "--execute", "-execute", "--command", "--run", "--code", "--exec",
    "--eval-command", "--evaluate", "--script-string",
})
#: Short options that take code in many interpreters, when the value reads as code.
_SHORT_CODE = frozenset({"-c", "-e", "-E"})
#: A value that reads as code rather than a name, a number or ``NAME=VALUE``.
_CODE_LIKE = re.compile(r"[\s();'\"`${}|&<>!\\]")
_STDIN_NAME = re.compile(r"/dev/stdin|/dev/fd/\d+|/proc/self/fd/\d+")
#: Inline code as a URL (``deno run 'data:text/javascript,…'``), as an operand or an option's value.
_DATA_URL = re.compile(r"(?:-[^=]*=)?['\"]?data:")
#: Programs that read data (not code) from a here-document or a pipe, or none at all: left out.
_DATA_READERS = frozenset({
    "tee", "patch", "dd", "sponge", "gzip", "gunzip", "bzip2", "xz", "zstd", "lz4", "tar", "split", "csplit",
    "mail", "mailx", "sendmail", "logger", "curl", "wget", "xclip", "xsel", "pbcopy", "wl-copy", "iconv",
    "envsubst", "gpg", "mktemp", "install", "chmod", "chown", "chgrp", "mkdir", "rmdir", "touch", "cp", "mv",
    "ln", "truncate", "sleep", "kill", "less", "more", "most", "pager", "bat", "batcat", "fzf", "yq", "zcat",
    "bzcat", "xzcat", "zstdcat", "unexpand", "dos2unix", "unix2dos", "clip.exe", "ts", "pv", "shuf",
})
#: Bash builtins and wrappers: a builtin runs no stdin code (``source``/``eval`` are read elsewhere),
#: a wrapper's command is a part of its own.
_NOT_PROGRAMS = frozenset({
    "read", "mapfile", "readarray", "export", "declare", "local", "typeset", "readonly", "unset", "shift",
    "while", "until", "for", "if", "case", "select", "coproc", "function", "history", "pushd", "popd", "dirs",
    "type", "hash", "help", "jobs", "wait", "umask", "ulimit", "times", "bind", "complete", "compgen", "shopt",
    "caller", "enable", "disown", "suspend", "logout", "exit", "return", "break", "continue", "getopts", "let",
    "command", "builtin", "nice", "nohup", "timeout", "stdbuf", "time", "env", "sudo", "doas", "ionice",
    "chrt", "taskset", "setsid", "unbuffer", "xargs", "watch", "exec",
})


def foreign(name: str) -> bool:
    """Whether ``name`` has no model here (no read-only spec) and is not a known data reader; the
    caller leaves out what its own tables read."""
    base = os.path.basename(name)
    return base not in _DATA_READERS and base not in _NOT_PROGRAMS and program_spec(base) is None


def foreign_code(name: str, argv: Sequence[str], stdin: Sequence[str]) -> str:
    """Why the part (program ``name``, words ``argv``, standard input from ``stdin``: ``<<``, ``|``,
    files) runs code given to a program that is `foreign` ("" when it does not)."""
    if not foreign(name):
        return ""
    words = list(argv[1:])
    for i, word in enumerate(words):
        option, eq, attached = word.partition("=")
        value = attached if eq else (words[i + 1] if i + 1 < len(words) else "")
        if option in _CODE_OPTIONS:
            return f"{name} {option} runs the code in its value"
        if word in _SHORT_CODE and _CODE_LIKE.search(value):
            return f"{name} {word} is given code"
        if word[:2] in _SHORT_CODE and _CODE_LIKE.search(word[2:]):
            return f"{name} {word[:2]} is given code"
        if _STDIN_NAME.fullmatch(word):
            return f"{name} reads {word}, which may be code on standard input"
        if _DATA_URL.match(word):
            return f"{name} is given code in a data: URL"
    operands = [w for w in words if not w.startswith("-")]
    if operands[:1] == ["eval"]:
        return f"{name} eval runs the code in its value"
    if "<<" in stdin:
        return f"{name} reads a here-document, which may be code (it has no model here)"
    if "|" in stdin and (not operands or "-" in words):
        return f"{name} reads what a pipe gives it, which may be code (it has no model here)"
    if "" in stdin:
        return f"{name} reads standard input from a file named at run time"
    return ""


def foreign_files(name: str, argv: Sequence[str], stdin: Sequence[str]) -> list[str]:
    """The files a `foreign` program may run as code, as written: its operands, its options' ``=``
    values and the files its standard input comes from (``psql db < s``, ``emacs -l x.el``)."""
    if not foreign(name):
        return []
    words = argv[1:]
    operands = [w.partition("=")[2] if w.startswith("-") else w for w in words]
    return [w for w in (*operands, *stdin) if w and w not in ("<<", "|")]
