"""What a command's exit code means: the one place that says when a non-zero exit is not a failure.

A shell command failed when it exited non-zero, as Claude Code reports it,
except for the documented non-error meanings of a few common programs, which
apply when that program ran last (its status is the command's status):

=================  ======  ==========================
program            exit    meaning
=================  ======  ==========================
grep, egrep,       1       no line matched
fgrep, rg, zgrep
diff, cmp          1       the inputs differ
test, [, [[        1       the condition is false
=================  ======  ==========================

Timeouts, kills and signal deaths are always failures. Anything the light
tokenizer here cannot read with certainty (substitutions, compound commands)
gets no exception: a non-zero exit then counts as a failure (fail closed). Nor does
a name that may run another program than the system's: a path outside ``/bin`` and
``/usr/bin`` (a repository's ``./test``), or a command that sets ``PATH``, sources a
file, defines a function or an alias, or hashes a path (round 31). Nor when the last program may
not have set the status: it follows ``&&`` (a failure before it skips it), or a builtin before it
ends the shell or changes how its status forms (``exit``, ``set -e``/``-o pipefail``, ``trap``,
``exec``: round 36). Nor when a wrapper's option or a variable may make the name run another
program (``env -S./build.sh grep``, ``GREP=./build.sh zgrep``, ``LD_PRELOAD=x.so grep``: round 37).
Used by the Bash tool, ``shellrt run --json``, the batch runner and (through
``is_error``) sibling cancellation, MCP and JSONL.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping

__all__ = ["MAX_READ_CHARS", "NON_ERROR_EXITS", "exit_is_error", "exit_meaning", "last_program"]

#: program -> {exit code: meaning} of exits that are answers, not failures.
NON_ERROR_EXITS: Mapping[str, Mapping[int, str]] = {
    "grep": {1: "no match"},
    "egrep": {1: "no match"},
    "fgrep": {1: "no match"},
    "zgrep": {1: "no match"},
    "rg": {1: "no match"},
    "diff": {1: "files differ"},
    "cmp": {1: "files differ"},
    "test": {1: "condition is false"},
    "[": {1: "condition is false"},
    "[[": {1: "condition is false"},
}

#: Not after a digit: a match starts where its digits do, so a run of digits is scanned once, not
#: from each of its places (``\d*`` from each: quadratic, 100,000 digits ~66 s; round 36, review3).
_DUP = re.compile(r"(?<!\d)\d*[<>]&(?:\d+|-)")
#: Past this a command gets no meaning (fail closed): what the tokenizer costs is bounded whatever
#: the text (``shlex`` reads ~1 MB/s; round 36, review3).
MAX_READ_CHARS = 20_000
#: Redirections spelt with a separator's character: ``>| file`` (past noclobber), ``>& file`` and
#: ``<& file`` (a word, not a descriptor): the file's name is no command (``a >| grep``: round 36).
_REDIRECT_OPS = re.compile(r"(>)\||([<>])&")
_SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "&", ";;", "\n"})
_PIPES = frozenset({"|", "|&"})
#: Tokens that mean the last word is not simply "the program that ran last". ``$'...'`` (ANSI-C
#: quoting) takes ``\'`` as a quote inside it, where ``shlex`` ends the string: the two then split
#: the rest differently (round 36).
_OPAQUE = ("$(", "`", "<(", ">(", "$'")
_KEYWORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "function",
        "!",
        "{",
        "}",
    }
)
#: Wrappers whose status is the wrapped command's, with the options each may take before it: the
#: flags that take nothing, and those whose value follows (glued or as the next word).
#: Not ``sudo``: its own failure (no password, not permitted) is exit 1 (round 36, review3); the
#: others fail with 125-127. Any other option gives no meaning (round 37): ``env -S./build.sh grep``
#: (``--split-string``) runs build.sh, and its 1 read as grep's "no match".
_WRAPPERS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    "command": (frozenset({"-p"}), frozenset()),
    "nice": (frozenset(), frozenset({"-n", "--adjustment"})),
    "nohup": (frozenset(), frozenset()),
    "stdbuf": (frozenset(), frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "time": (frozenset({"-p"}), frozenset()),
    "env": (frozenset({"-i", "-", "-0", "--ignore-environment", "--null"}), frozenset({"-u", "--unset"})),
}
#: Variables that make a program run or load other code than its name says: ``PATH`` (round 31),
#: ``zgrep``'s own ``GREP`` (it runs ``$GREP``), the loader's ``LD_*`` (a preloaded library can
#: exit 1 itself) and ``GCONV_PATH``, the shells' start-up files (round 37).
_CODE_VARIABLES = frozenset({"PATH", "GREP", "GCONV_PATH", "BASH_ENV", "ENV"})
#: ``[[`` evaluates these operands arithmetically: an error (``08``, ``1+``) exits 1 as a false
#: condition does (``test`` and ``[`` exit 2), so such a ``[[`` gets no meaning (round 36, review3).
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
#: Words after which a name may run another program than the system's: a function (defined here, in
#: a sourced file such as a repository's ``activate`` script, or through ``eval``), an alias, a
#: hashed path, a loaded builtin. Any of them anywhere in the command: no meaning (round 31).
_REBINDS = frozenset({"function", "hash", "alias", "enable", "source", ".", "eval"})
#: Where a program named by its path is still the system's one the table describes (``./test`` or
#: ``bin/grep`` is the repository's: round 31).
_SYSTEM_DIRS = frozenset({"/bin", "/usr/bin"})
#: What a ``#`` that starts a comment follows (else it is part of a word).
_COMMENT_AFTER = frozenset(" \t;&|()<>")
#: Characters that split words (an operator's, a comment's), plain word characters when quoted.
_SPLIT = frozenset(";&|()<>#")
#: The ``${...}`` bodies that cannot fail (a variable's name, its length, a default): another can end
#: the shell with 1 before the program runs (``${1:=x}``: "cannot assign", ``${!x}``: "invalid
#: indirect expansion", a bad substitution; round 36).
_EXPANSION = re.compile(r"#[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*(?::?[-+][^${}]*)?")
#: A redirection in a word (the operator, then its target if glued to it).
_REDIRECT = re.compile(r"(<<<|<>|>>|<|>)(.*)")
#: Characters that make ``shlex`` split a ``${...}`` that bash reads as one expansion.
_IN_EXPANSION = frozenset(";&|()<>#'\"`\\ \t\n")
#: Builtins that end the shell or change how its status forms, so that a later program's status may
#: not be the command's (``exit 1; grep``, ``set -o pipefail``, ``trap 'exit 1' EXIT``, ``exec``;
#: ``builtin`` may call any of them): anywhere before the last program, no meaning (round 36).
_STATUS_SETTERS = frozenset({"exit", "logout", "return", "exec", "set", "shopt", "trap", "builtin"})
#: Builtins that may export one of `_CODE_VARIABLES` for the commands after them.
_DECLARES = frozenset({"export", "declare", "typeset", "readonly", "local"})


def last_program(command: str) -> str | None:
    """The program whose exit status is the command's, when that is plain to see (else None)."""
    if len(command) > MAX_READ_CHARS or any(mark in command for mark in _OPAQUE) or "\n" in command.strip():
        return None
    if "${" in command and not _plain_expansions(command):
        return None
    words_only = _quoted_as_words(command)
    if words_only is None:
        return None
    # Descriptor duplications are not separators: ``2>&1``, ``>&2``, ``&>file``.
    command = _DUP.sub(" ", words_only).replace("&>", ">")
    command = _REDIRECT_OPS.sub(lambda m: (m.group(1) or m.group(2)) + " ", command)
    tokens = _tokens(command)
    if tokens is None:
        return None
    segments: list[list[str]] = [[]]
    before_last = ""  # the list operator before the last pipeline (a pipe binds tighter)
    in_test = False  # inside ``[[ ... ]]``: its ``&&``/``||`` are the test's own (round 36's Left)
    for token in tokens:
        if token == "[[" and all(word in _KEYWORDS for word in segments[-1]):
            in_test = True  # the command word, not an argument (``grep x [[ ; ./build.sh``)
        elif token == "]]":
            in_test = False
        if token in _SEPARATORS and in_test:
            segments[-1].append(token)  # ``[[ -f a || -f b ]]`` is one command
            continue
        if token in _SEPARATORS:
            segments.append([])
            if token not in _PIPES:
                before_last = token
        elif set(token) <= set(";&|()"):
            return None  # a subshell or an operator we do not model
        else:
            segments[-1].append(token)
    if before_last == "&&":
        return None  # the left side's failure skips the last pipeline and is the status (round 36)
    if any(_rebinds(words) or _sets_status(words) for words in segments[:-1]) or _rebinds(segments[-1]):
        return None
    if _may_fail_to_redirect(segments[-1]):
        return None
    words, _ = _command_words(segments[-1])
    if not words or words[0] in _KEYWORDS:
        return None
    if "/" in words[0] and os.path.dirname(words[0]) not in _SYSTEM_DIRS:
        return None  # a repository's program named like one of the table's
    if words[0] == "[[" and _ARITHMETIC_TESTS.intersection(words):
        return None
    return os.path.basename(words[0])


def _may_fail_to_redirect(words: list[str]) -> bool:
    """Whether the last command redirects to or from a file other than ``/dev/null``: a redirection
    that fails (a missing input, an output that is a directory) sets status 1 and the program never
    runs (``grep x < missing.txt``: round 36). Descriptor duplications were taken out before."""
    for index, word in enumerate(words):
        found = _REDIRECT.search(word)
        if found is None or found.group(1) == "<<<":
            continue
        target = found.group(2) or (words[index + 1] if index + 1 < len(words) else "")
        if target != "/dev/null":
            return True
    return False


def _plain_expansions(command: str) -> bool:
    """Whether every ``${...}`` of ``command`` is closed, holds none of `_IN_EXPANSION` and is one
    that cannot fail (`_EXPANSION`).

    Bash reads a parameter expansion whole, ``shlex`` splits it at an operator or a blank:
    ``./build.sh ${y:-;grep x f}`` runs build.sh only, but tokenizes as ``...; grep x f}``
    (round 36).
    """
    start = command.find("${")
    while start != -1:
        depth = 0
        for end in range(start + 1, len(command)):
            char = command[end]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    break
            elif char in _IN_EXPANSION:
                return False
        else:
            return False  # never closed
        if not _EXPANSION.fullmatch(command[start + 2 : end]):
            return False
        start = command.find("${", end)
    return True


def _quoted_as_words(command: str) -> str | None:
    """``command`` with every quoted or escaped `_SPLIT` character made a plain word character
    (``_``), or None when a quote is never closed.

    ``shlex`` hands ``\\;``, ``';'`` and ``"|"`` back as the bare ``;`` and ``|`` an operator
    is, so ``./build.sh ';' grep x f`` (one command to bash) read as ``...; grep x f``
    (round 36). Only the characters change, never where a word starts or ends.
    """
    out: list[str] = []
    quote = ""
    index, length = 0, len(command)
    while index < length:
        char = command[index]
        if char == "\\" and quote != "'" and index + 1 < length:
            escaped = command[index + 1]
            out += ["\\", "_" if escaped in _SPLIT else escaped]
            index += 2
            continue
        if quote:
            if char == quote:
                quote = ""
            elif char in _SPLIT:
                char = "_"
        elif char in "'\"":
            quote = char
        elif char == "#" and (not index or command[index - 1] in _COMMENT_AFTER):
            break  # a comment: bash reads nothing after it (an apostrophe in it opens nothing)
        out.append(char)
        index += 1
    return None if quote else "".join(out)


def _tokens(command: str) -> list[str] | None:
    """The words and operators of ``command`` as bash splits them, or None when unsure.

    ``shlex`` starts a comment at a ``#`` inside a word, bash only at a word's start: ``grep x f#;
    ./build.sh`` is two commands to bash and ``grep x f`` to ``shlex`` (round 36). So the text is
    split twice (when it holds a ``#``), with and without comments; the split with comments must be
    the other's words up to one that starts with ``#`` (a real comment), else None.
    """
    splits: list[list[str]] = []
    for commenters in ("#", "") if "#" in command else ("",):
        try:
            lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
            lexer.whitespace_split = True
            lexer.commenters = commenters
            splits.append(list(lexer))
        except ValueError:
            return None
    tokens, whole = splits * 2 if len(splits) == 1 else splits
    if tokens == whole:
        return tokens
    if whole[: len(tokens)] == tokens and whole[len(tokens)].startswith("#"):
        return tokens
    return None


def _sets_status(words: list[str]) -> bool:
    """Whether the simple command ``words`` may end the shell or change how its status forms
    (`_STATUS_SETTERS`)."""
    while words and words[0] in _KEYWORDS - _REBINDS:
        words = words[1:]  # ``{ exit 1; }``, ``then exit 1``
    words, _ = _command_words(words)
    return bool(words) and words[0] in _STATUS_SETTERS


def _command_words(words: list[str]) -> tuple[list[str], bool]:
    """``words`` from the command's own name on (leading assignments and wrappers left out), and
    whether the name may run another program than its own: an assignment of one of
    `_CODE_VARIABLES` (``PATH=bin``, ``env GREP=x``) or a wrapper option not known to be harmless."""
    rebinds = False
    while words and "=" in words[0] and not words[0].startswith("="):
        rebinds = rebinds or _assigns_code(words[0])
        words = words[1:]  # leading assignments
    while words and os.path.basename(words[0]) in _WRAPPERS:
        flags, valued = _WRAPPERS[os.path.basename(words[0])]
        words = words[1:]
        while words and words[0].startswith("-") and words[0] != "--":
            taken = _option_words(words, flags, valued)
            if taken is None:
                return words, True  # an option that may name another program (``env -S``)
            words = words[taken:]
        if words and words[0] == "--":
            words = words[1:]
        while words and "=" in words[0] and not words[0].startswith("="):
            rebinds = rebinds or _assigns_code(words[0])
            words = words[1:]  # ``env NAME=value``
    return words, rebinds


def _option_words(words: list[str], flags: frozenset[str], valued: frozenset[str]) -> int | None:
    """How many words the wrapper option at ``words[0]`` takes, or None when it is not one of the
    wrapper's known ``flags`` (alone) or ``valued`` options (value glued, after ``=``, or next)."""
    word = words[0]
    if word in flags:
        return 1
    if word.startswith("--"):
        name, eq, _ = word.partition("=")
        if name not in valued:
            return None
        return 1 if eq else 2
    if re.fullmatch(r"-\d+", word) and "-n" in valued:
        return 1  # ``nice -5``
    for index, char in enumerate(word[1:], start=1):
        if f"-{char}" in valued:
            return 1 if index + 1 < len(word) else 2  # ``-uNAME`` or ``-u NAME``
        if f"-{char}" not in flags:
            return None  # ``-S./build.sh``, ``-iS...``, ``-C dir``, ``-v``
    return 1


def _assigns_code(word: str) -> bool:
    """Whether the assignment ``word`` (``NAME=value``, ``NAME+=value``) sets one of `_CODE_VARIABLES`."""
    name = word.partition("=")[0].removesuffix("+")
    return name in _CODE_VARIABLES or name.startswith("LD_")


def _rebinds(words: list[str]) -> bool:
    """Whether the simple command ``words`` may make a later name run another program (`_REBINDS`,
    or one of `_CODE_VARIABLES` set: ``PATH=bin``, ``env PATH=bin``, ``export PATH=bin``)."""
    while words and words[0] in _KEYWORDS - _REBINDS:
        words = words[1:]  # ``{ . ./env.sh; }``, ``if source x; then`` (``function`` is both)
    words, rebinds = _command_words(words)
    if rebinds or (words and words[0] in _REBINDS):
        return True
    # ``export GREP=x``, ``read GREP; export GREP``, ``export $name=x``: any word naming one, or dynamic.
    return bool(words) and words[0] in _DECLARES and any(_names_code(w) for w in words[1:])


def _names_code(word: str) -> bool:
    """Whether a word of an ``export``-like builtin may name one of `_CODE_VARIABLES`."""
    return "$" in word or "LD_" in word or any(name in word for name in _CODE_VARIABLES)


def exit_meaning(command: str, exit_code: int | None) -> str | None:
    """The documented non-error meaning of this exit (e.g. "no match"), or None."""
    if not exit_code:
        return None
    program = last_program(command)
    if program is None:
        return None
    return NON_ERROR_EXITS.get(program, {}).get(exit_code)


def exit_is_error(command: str, exit_code: int | None) -> bool:
    """True when the command failed: non-zero and not one of the documented non-error meanings.

    ``None`` (no exit code: still running, moved to the background) is not an error here;
    callers judge timeouts and kills themselves (they are always errors).
    """
    if exit_code is None or exit_code == 0:
        return False
    return exit_meaning(command, exit_code) is None
