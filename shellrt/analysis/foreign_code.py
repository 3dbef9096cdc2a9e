"""Code given to a program no table models: inline (``guile -c '(system …)'``, ``erl -eval``), on a
here-document (``psql db <<EOF \\! …``), a pipe, ``/dev/stdin``, or a file the command writes.

Round 29's tables name 19 languages; a language they do not name ran its inline or stdin code past
every command rule (red team, round 30). Listing interpreters never ends, so this is a rule about
the command line instead: a program with no model of its own (no read-only spec, no table) given an
option that usually takes code (``--eval``, ``--expr``, ``--execute``), an ``eval`` subcommand, a
here-document, ``/dev/stdin``, a pipe, or standard input from any file but ``/dev/null`` (``psql db
< s.sql``, ``cat s | psql db``). ``-c``/``-e``/``-E`` (alone or in a cluster: ``-ve``) count too,
whatever the value looks like (``kotlin -e exit``), unless `_DATA_SHORT` names the program: a closed
list of programs whose such options take data (``gcc -c``, ``docker run -e``, ``pip install -e``;
red team, round 31). Data readers everyone uses so (``tee``, ``patch``), builtins and wrappers are
named and left out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from shellrt.analysis.kernel_paths import names_stdin
from shellrt.analysis.programs import program_spec

__all__ = ["foreign", "foreign_code", "foreign_files"]

#: Options that take code in the tools that have them (long or single-dash long spellings).
_CODE_OPTIONS = frozenset({
    "--eval", "-eval", "--expr", "-expr", "--execute", "-execute", "--command", "--run", "--code", "--exec",
    "--eval-command", "--evaluate", "--script-string", "-exec",
})
#: Short options that take code in many interpreters (``guile -c``, ``kotlin -e``, ``scala -e``).
_SHORT_CODE = frozenset("ceE")
#: A single-dash word whose first letters may hold a short option (``-e``, ``-ve``, ``-cx``, ``-e=exit``,
#: ``-c'(code)'``: what follows the letters may be an attached value).
_SHORT_WORD = re.compile(r"-([A-Za-z][A-Za-z0-9]*)")
#: Single-dash words that are whole options everywhere (no cluster of ``-c``/``-e``).
_WHOLE_WORDS = frozenset({"-help", "-version", "-verbose", "-quiet", "-classpath", "-encoding"})
_COMPILERS = frozenset("cE")  # -c: compile only; -E: preprocess only
#: Programs whose ``-c``/``-e``/``-E`` take data, not code: the only ones such options leave alone.
_DATA_SHORT: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        ("gcc", "cc", "c++", "g++", "clang", "clang++", "cpp", "tcc", "icc", "icx", "nvcc", "gfortran", "zig"),
        _COMPILERS,
    ),
    **dict.fromkeys(("docker", "podman", "nerdctl"), frozenset("ce")),  # -e NAME=VALUE, -c cpu shares
    **dict.fromkeys(("pip", "pip3", "uv", "pipx"), frozenset("ce")),  # -e editable, -c constraints
    **dict.fromkeys(("pytest", "py.test", "tox", "nox"), frozenset("ce")),  # -c config, -e environments
    **dict.fromkeys(("mvn", "mvnw"), frozenset("e")),  # -e: error traces
    **dict.fromkeys(("conda", "mamba", "micromamba"), frozenset("c")),  # -c channel
    **dict.fromkeys(("kubectl", "oc"), frozenset("c")),  # -c container
    **dict.fromkeys(("zip", "unzip", "jar"), frozenset("ce")),  # comment/create, encrypt/entry point
    **dict.fromkeys(("pg_dump", "pg_restore"), frozenset("ceE")),  # clean, exit on error, encoding
    **dict.fromkeys(("go", "dotnet", "swift"), frozenset("ce")),  # test -c, list -e; -c configuration
    **dict.fromkeys(("ffmpeg", "ffprobe", "openssl"), frozenset("ceE")),  # codec; encrypt, engine file
}
#: A word that starts with an expansion (``$E``, ``"${E}"``, ``$(…)``, a backquote): it may become any
#: option, ``-e`` among them (red team round 32: ``E=-e; kotlin $E exit`` passed as a plain operand).
_RUNTIME_WORD = re.compile(r'"?[$`]')
#: Standard input files that hold no code.
_EMPTY_INPUTS = frozenset({"/dev/null", "/dev/zero"})
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
    "chrt", "taskset", "setsid", "unbuffer", "xargs", "watch", "exec", "set",
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
    for word in words:
        if "$'" in word:  # an ANSI-C string keeps its source text here: ``$'-e'`` may be any option
            return f"{name} is given {word}, a word spelled with $'…' that is not read here"
        if _RUNTIME_WORD.match(word):  # ``E=-e; kotlin $E '…'``: the option is known only at run time
            return f"{name} is given {word}, which may be any option (-e, --eval) at run time"
        option = word.partition("=")[0]
        if option in _CODE_OPTIONS:
            return f"{name} {option} runs the code in its value"
        short = _short_code(name, word)
        if short:
            return f"{name} {word} may run code (-{short} is code in many programs, and no list here says {name}'s is not)"
        if word != "-" and names_stdin(word):  # any spelling of a descriptor (round 51)
            return f"{name} reads {word}, which may be code on standard input"
        if _DATA_URL.match(word):
            return f"{name} is given code in a data: URL"
    operands = [w for w in words if not w.startswith("-")]
    if operands[:1] == ["eval"]:
        return f"{name} eval runs the code in its value"
    if "<<" in stdin:
        return f"{name} reads a here-document, which may be code (it has no model here)"
    if "|" in stdin:
        return f"{name} reads what a pipe gives it, which may be code (it has no model here)"
    if "" in stdin:
        return f"{name} reads standard input from a file or descriptor named at run time"
    files = [f for f in stdin if f not in _EMPTY_INPUTS]
    if files:
        return f"{name} reads {files[0]} on standard input, which may be code (it has no model here)"
    return ""


def _short_code(name: str, word: str) -> str:
    """The code-taking short option (``c``, ``e``, ``E``) in ``word`` that ``name``'s `_DATA_SHORT`
    entry does not call data ("" for none): ``-e``, ``-e=exit``, ``-c'(code)'`` (a value attached
    after the letter, letters alone too: ``mysql -eshutdown`` is ``-e shutdown``, round 34), or a
    cluster of at most three letters (``-ve``, ``-nE``, ``-cx``; letters after one that takes a value
    may be that value: fail closed). A word with an ``=`` value (``-chdir=x``, ``-count=1``), a longer
    one led by another letter (``-timeout``) and `_WHOLE_WORDS` are single-dash long options."""
    match = _SHORT_WORD.match(word)
    if match is None or word in _WHOLE_WORDS:
        return ""
    letters = match.group(1)
    data = _DATA_SHORT.get(os.path.basename(name), frozenset())
    rest = word[1 + len(letters) :]
    attached = not rest.startswith("=")  # -c'(x)', -eexit; not -chdir=x
    if letters[0] in _SHORT_CODE and attached and letters[0] not in data:
        return letters[0]
    if len(letters) > _MAX_CLUSTER:
        return ""
    return next((c for c in letters if c in _SHORT_CODE and c not in data), "")


#: The longest cluster of short options read as one (longer words are single-dash long options).
_MAX_CLUSTER = 3


def foreign_files(name: str, argv: Sequence[str], stdin: Sequence[str]) -> list[str]:
    """The files a `foreign` program may run as code, as written: its operands, its options' ``=``
    values and the files its standard input comes from (``psql db < s``, ``emacs -l x.el``)."""
    if not foreign(name):
        return []
    words = argv[1:]
    operands = [w.partition("=")[2] if w.startswith("-") else w for w in words]
    return [w for w in (*operands, *stdin) if w and w not in ("<<", "|")]
