"""Plan the most common command shape without the parser (a strict subset; anything else: None).

Most commands an agent runs are a few simple commands joined by ``|``, ``&&``,
``||``, ``;`` or ``&``, made of plain or simply quoted words (and ``find -exec``'s
``{}`` and ``\\;``), maybe with plain ``NAME=value`` prefixes, with redirections at
the end. For exactly that shape :func:`plan_simple` builds the same
:class:`CommandPlan` the tree-sitter path builds (``Planner`` does the
per-command work, so wrappers, ``cd`` targets and ``bash -c`` scripts are
handled by the same code), several times faster. Tests compare both paths on
every input this module accepts.

A whole argument word ``$NAME`` (a blank before it; a blank, an operator or the end after it) is
planned like the parser's ``simple_expansion``: a dynamic word (value None). As a command name, a
redirection target or an assignment value, or next to anything else, it is refused. A statement
``export NAME=value ...`` (plain values, no flag, not piped or in the background, no doubled blank
or tab in the command) is planned as the parser's ``declaration_command``: an ``export`` construct
and a part of its own.

It fails closed: it returns None, and the caller parses, for any other ``$``,
backslash or brace outside a whole ``\\;`` or ``{}`` argument, backquote, ``[`` glob, glob next to quotes,
parenthesis, ``!``, ``#``, ``~`` at the start of a word, newline, tab inside quotes, non-ASCII or control
character, reserved word, assignment that is not a plain ``NAME=value`` prefix of a command, declaration
builtin (but that ``export``), ``==``/``=~`` word, ``-`` right before a redirection, here-document, ``&`` that does not end a
statement, ``|&``,
``;;``, redirection before a word or without a blank before it, an fd on ``<``,
and for the list shapes whose tree-sitter tree is irregular (a redirection on a
piped command other than the first of its pipeline, a pipeline of three or more
commands followed by ``&&``/``||``, more than :data:`MAX_COMMANDS` commands):
tree-sitter-bash nests those differently, and the plan records that nesting.

One irregular nesting is modelled (agents write ``cd src && make 2>&1 | tail``): a
redirected command that starts a pipeline after ``&&``/``||`` makes tree-sitter-bash
put the whole list before it into the pipeline (``pipeline(list(cd && make 2>&1), tail)``),
so each command of the statement before it is inside one more pipeline.
"""

from __future__ import annotations

import re
from typing import Final

from .nodes import Assignment, CommandPlan, Construct, PlanCommand, Redirect, Word
from .plan import SCRIPT_PLANNERS, UNWRAP_NAMES, Planner
from .words import DQ_WHOLE_FEATURES, NO_FEATURES, QUOTED_FEATURES

__all__ = [
    "MAX_CHARS",
    "MAX_COMMANDS",
    "PLAIN_TOKEN_SPEC",
    "PLANNER_NAMES",
    "TOKEN_SPEC",
    "plan_simple",
    "scan_plain_tokens",
    "scan_tokens",
]

#: Longer input always goes to the parser.
MAX_CHARS: Final = 2000
#: More simple commands than this go to the parser (the shapes are verified exhaustively up to here).
MAX_COMMANDS: Final = 7

_GLOB: Final[frozenset[str]] = frozenset({"glob"})
_FLAG_GLOB: Final[frozenset[str]] = frozenset({"glob", "flag_glob"})

#: Printable ASCII inside '...' (no tab, newline or control character) and inside "..."
#: (also no ``$``, backquote, backslash or ``!``: those expand or escape).
_SQ_BODY: Final = r"[ -&(-~]*+"
_DQ_BODY: Final = r"[ #%-\[\]-_a-~]*+"
#: Unquoted word characters; ``~`` only inside a segment (a leading one is a tilde expansion).
#: ``*`` and ``?`` are globs: accepted only in words without quotes (flagged like the planner does).
_PLAIN: Final = r"[A-Za-z0-9_./:@%+=,*?-][A-Za-z0-9_./:@%+=,*?~-]*+"
_WORD: Final = rf"(?:{_PLAIN}|'{_SQ_BODY}'|\"{_DQ_BODY}\")++"
#: The token grammar, one token per match (possessive quantifiers: no backtracking), blanks
#: before it skipped: an operator, a ``>&N`` duplication, a redirection with its target,
#: ``find -exec``'s ``\;`` or ``{}`` as a whole word, ``$NAME`` as a whole word, a word, or any other single character
#: (refused, but for ``|``, ``;``, ``&`` and one-character words). A redirection needs a blank right
#: before it (the lookbehind); without one it falls through to a refused single character.
#: :func:`scan_tokens` implements it by hand (compiled, it takes about 40% of this regex's instructions);
#: this pattern is its specification, and tests check that both agree.
TOKEN_SPEC: Final = re.compile(
    rf"""[ \t]*+(
        &&|\|\||[|;]
      | (?<=[ \t])[0-9]?>&[0-9]++(?=[ \t;|]|\Z)
      | (?<=[ \t])[0-9]?(?:>>|>|<)[ \t]*+{_WORD}
      | (?<=[ \t])(?:\\;|\{{\}})(?=[ \t]|\Z)
      | (?<=[ \t])\$[A-Za-z_][A-Za-z0-9_]*+(?=[ \t;|&]|\Z)
      | {_WORD}
      | (?s:.)
    )""",
    re.VERBOSE,
)
#: The tokens of a command with no quote, glob or redirection: operators, ``find -exec``'s ``{}`` and
#: ``\;`` as whole words, words of plain word characters, and any other character alone (refused, as
#: :data:`TOKEN_SPEC` refuses it). :func:`scan_plain_tokens` implements it by hand; tests check that both agree.
PLAIN_TOKEN_SPEC: Final = re.compile(
    r"(?<=[ \t])(?:\\;|\{\})(?=[ \t]|\Z)|&&|\|\||[|;]|[A-Za-z0-9_./:@%+=,~-]++|[^ \t]"
)
#: Single-character tokens that are not refused outright: one-character words and ``|``, ``;``, ``&``.
_SINGLE_OK: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,*?-|;&")
_OPERATORS: Final = frozenset({"&&", "||", "|", ";", "&"})
#: Operators after which a command may be missing at the end of the input (``ls;``, ``ls &``).
_TERMINATORS: Final = frozenset({";", "&"})
#: Features of the two words ``find -exec`` needs that are not plain (``\\;``, ``{}``), as the parser path
#: evaluates them.
_BACKSLASH: Final[frozenset[str]] = frozenset({"backslash"})
_BRACE_CHAR: Final[frozenset[str]] = frozenset({"brace_char"})
#: Features of a ``$NAME`` word (tree-sitter's ``simple_expansion``), as the parser path evaluates it.
_PARAMETER: Final[frozenset[str]] = frozenset({"parameter", "simple_parameter"})
_REDIRECT_START: Final = frozenset("<>0123456789")
_ANGLES: Final = frozenset("<>")
_DIGITS: Final = frozenset("0123456789")
#: Outside quotes only these characters appear in tokens (plain word characters, blanks,
#: operators and redirections).
_REFUSED_UNQUOTED: Final = re.compile(r"[^A-Za-z0-9_./:@%+=,*?~ \t|;&<>\\{}$-]").search
#: A command name this path accepts: plain, no ``=`` (assignment) and no leading ``-`` (see
#: :func:`_is_name`; a loop over a short name costs a fraction of a regex call's set-up).
_NAME_FIRST: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./"
#: By ASCII code point: 1 may start a name, 2 may continue it.
_NAME_CLASSES: Final = bytes(
    [
        (1 if char in _NAME_FIRST else 0) | (2 if char in _NAME_FIRST or char in "+-" else 0)
        for char in [chr(code) for code in range(128)]
    ]
)
#: Words the grammar treats specially in some position; never accepted anywhere (``==``/``=~``
#: are operator tokens there, and a trailing one is a syntax error).
_RESERVED: Final = frozenset(
    {
        "==",
        "=~",
        "!",
        "[[",
        "]]",
        "{",
        "}",
        "case",
        "coproc",
        "declare",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "export",
        "fi",
        "for",
        "function",
        "if",
        "in",
        "local",
        "readonly",
        "select",
        "then",
        "time",
        "typeset",
        "unset",
        "unsetenv",
        "until",
        "while",
    }
)
#: Names whose commands :class:`Planner` looks into (cd targets, wrapped commands, scripts).
PLANNER_NAMES: Final = frozenset({"cd", "pushd", *UNWRAP_NAMES})
#: By ASCII code point: 1 may start a variable name, 2 may continue it, 4 may be in a plain assigned value
#: (no quote, glob, ``~``, ``=``, ``$`` or anything else the parser would evaluate).
_ASSIGN_CLASSES: Final = bytes(
    [
        (1 if char.isalpha() or char == "_" else 0)
        | (2 if char.isalnum() or char == "_" else 0)
        | (4 if char.isalnum() or char in "_./:@%+,-" else 0)
        for char in [chr(code) for code in range(128)]
    ]
)

#: One simple command: (argv, redirects, operator after it or "", env-prefix assignments).
_Command = tuple[list[Word], list[Redirect], str, list[Assignment]]


def plan_simple(command: str, script_depth: int = 0) -> CommandPlan | None:
    """The plan of ``command`` when it has the simple shape, else None (use the parser).

    ``script_depth``: how many ``bash -c`` script strings ``command`` is nested in (0: the command line).
    """
    if len(command) > MAX_CHARS:
        return None
    if "$" in command and (
        _starts_compound(command) or ("'" not in command and not _dollars_start_names(command))
    ):
        # `$(`, `${`, `"$x"`, `a$x`, ...: outside '...' only a whole `$NAME` word is taken; and a loop
        # (`for f in *; do wc $f; done`) is refused before its tokens are scanned.
        return None
    if "'" in command or '"' in command:
        if "\n" in command:
            return None  # a newline is refused everywhere, quoted or not
        if "'" not in command and ("`" in command or "\\" in command or "!" in command):
            return None  # refused unquoted and inside "...": only '...' could hold these
        plain = simple_tokens = False
    else:
        # No quote and no glob anywhere: every word is its own value (the common case, checked once).
        plain = "*" not in command and "?" not in command
        # Without quotes, globs or redirections every word is a maximal run of plain characters: a
        # simpler pattern finds the same tokens (a word starting with `~` is refused below, as the
        # full pattern refuses the lone `~` it yields there).
        simple_tokens = plain and "<" not in command and ">" not in command and "$" not in command
        if not simple_tokens and _REFUSED_UNQUOTED(command) is not None:
            return None  # a character no unquoted token takes: refused before the costlier tokenizer
    commands: list[_Command] = []
    argv: list[Word] = []
    redirects: list[Redirect] = []
    assignments: list[Assignment] = []
    expect_name = True
    after_terminator = False
    dynamic = False
    declaring = False  # in an `export NAME=value ...` declaration
    declared: list[int] = []  # the indexes of the declarations among the commands
    previous_op = ""
    # Either pattern yields any character no token takes (`$`, `(`, `\\`, newline, non-ASCII, ...)
    # as a token of its own, refused below.
    tokens = scan_plain_tokens(command) if simple_tokens else scan_tokens(command)
    for token in tokens:
        if len(token) == 1 and token not in _SINGLE_OK:
            return None  # a character no token takes (`$`, `(`, a redirection without a blank, ...)
        if token in _OPERATORS:
            if expect_name:
                return None  # no command before it (or only assignments: a standalone assignment)
            if declaring and (len(argv) == 1 or token == "|" or token == "&"):
                return None  # a bare `export`, or one piped or in the background
            commands.append((argv, redirects, token, assignments))
            expect_name = True
            declaring = False
            previous_op = token
            after_terminator = token in _TERMINATORS
            assignments = []
            continue
        if declaring:
            declared_value = _assignment(token)
            if declared_value is None:
                return None  # a flag, a bare name, a redirection, quotes, ...: left to the parser
            argv.append(Word(token, token, NO_FEATURES))
            assignments.append(declared_value)
            continue
        first = token[0]
        if first == "~":
            return None  # a tilde expansion
        if first in _REDIRECT_START and (first == ">" or first == "<" or token[1:2] in _ANGLES):
            if expect_name:
                return None
            if not redirects and argv[-1].raw == "-":
                return None  # the grammar drops a lone `-` before `2>...`: the parser path refuses that
            fd: str | None = None
            rest = token
            if first in _DIGITS:
                fd = first
                rest = token[1:]
            if rest[1] == "&":  # `[N]>&M` (the pattern only allows digits after `>&`)
                dup = rest[2:]
                redirects.append(Redirect(fd, ">&", Word(dup, dup, NO_FEATURES), "file"))
                continue
            if fd is not None and rest[0] == "<":
                return None  # the grammar reads `0<f` as an argument `0` and a redirection
            op = ">>" if rest[1] == ">" else rest[0]
            target = rest[len(op) :].lstrip(" \t")
            if target in _RESERVED:
                return None
            value = _word(target)
            if value is None:
                return None
            redirects.append(Redirect(fd, op, value, "file"))
            continue
        if expect_name and token == "export" and not assignments and previous_op != "|":
            argv = [Word(token, token, NO_FEATURES)]
            redirects = []
            expect_name = after_terminator = False
            declaring = True
            declared.append(len(commands))
            continue
        if token in _RESERVED:
            return None
        if expect_name:
            if not _is_name(token):
                assignment = _assignment(token)
                if assignment is None:
                    return None
                assignments.append(assignment)  # an env prefix: the command name is still to come
                continue
            argv = [Word(token, token, NO_FEATURES)]
            redirects = []
            expect_name = after_terminator = False
        elif redirects:
            return None  # a word after a redirection: the grammar attaches it to the redirection
        elif first == "\\":  # only the whole word `\;` starts so (a lone backslash is refused above)
            argv.append(Word("\\;", ";", _BACKSLASH))
        elif first == "{":  # likewise only `{}`
            argv.append(Word("{}", "{}", _BRACE_CHAR))
        elif first == "$":  # only a whole `$NAME` word starts so (a lone `$` is refused above)
            argv.append(Word(token, None, _PARAMETER))
            dynamic = True
        elif plain or not ("'" in token or '"' in token or "*" in token or "?" in token):
            argv.append(Word(token, token, NO_FEATURES))
        else:
            special = _word(token)
            if special is None:
                return None
            argv.append(special)
    if declaring and len(argv) == 1:
        return None
    if not expect_name:
        commands.append((argv, redirects, "", assignments))
    elif assignments or not after_terminator:
        return None  # empty input, an operator with nothing after it, or a standalone assignment
    if not _regular_shape(commands):
        return None
    if declared and ("  " in command or "\t" in command):
        return None  # a declaration's text is its words joined by one blank (see `_plan`)
    return _plan(commands, dynamic, declared, script_depth)


#: Character classes of the token grammars, as bit flags by ASCII code point (the scanners read
#: code points, ``ord(command[i])``, which compiled code does without creating a string).
_CLASSES: Final = bytes(
    [
        (1 if char in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,*?-" else 0)
        | (2 if char in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,*?-~" else 0)
        | (4 if " " <= char <= "~" and char != "'" else 0)
        | (8 if " " <= char <= "~" and char not in '!"$\\`' else 0)
        | (16 if char in " \t" else 0)
        | (32 if char in "0123456789" else 0)
        | (64 if char in " \t;|" else 0)
        | (128 if char in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,~-" else 0)
        for char in [chr(code) for code in range(128)]
    ]
)
_PLAIN_FIRST: Final = 1  # starts an unquoted word segment
_PLAIN_TAIL: Final = 2  # continues it (also `~`)
_IN_SINGLE: Final = 4  # inside '...'
_IN_DOUBLE: Final = 8  # inside "..."
_BLANK: Final = 16
_DIGIT: Final = 32
_AFTER_DUP: Final = 64  # may follow a `>&N` duplication
_SIMPLE_WORD: Final = 128  # a word character of PLAIN_TOKEN_SPEC
_AMPERSAND: Final = 38
_PIPE: Final = 124
_SEMICOLON: Final = 59
_GREATER: Final = 62
_LESS: Final = 60
_SINGLE_QUOTE: Final = 39
_DOUBLE_QUOTE: Final = 34
_BACKSLASH_CODE: Final = 92
_OPEN_BRACE: Final = 123
_CLOSE_BRACE: Final = 125
_DOLLAR: Final = 36


def _class(command: str, i: int) -> int:
    code = ord(command[i])
    return _CLASSES[code] if code < 128 else 0


def _assign_class(command: str, i: int) -> int:
    code = ord(command[i])
    return _ASSIGN_CLASSES[code] if code < 128 else 0


def scan_tokens(command: str) -> list[str]:
    """``TOKEN_SPEC.findall(command)``, scanned by hand (the regex engine tries every alternative at every token)."""
    out: list[str] = []
    n = len(command)
    i = 0
    while i < n:
        start = i
        while i < n and _class(command, i) & _BLANK:
            i += 1
        if i >= n:
            break  # trailing blanks: no token
        code = ord(command[i])
        if code in (_AMPERSAND, _PIPE):
            if i + 1 < n and ord(command[i + 1]) == code:
                out.append(command[i : i + 2])
                i += 2
            else:
                out.append(command[i])
                i += 1
            continue
        if code == _SEMICOLON:
            out.append(";")
            i += 1
            continue
        digit = _class(command, i) & _DIGIT
        if i > start and (digit or code in (_GREATER, _LESS)):  # the lookbehind: a blank before
            op = i + 1 if digit else i
            if op + 1 < n and ord(command[op]) == _GREATER and ord(command[op + 1]) == _AMPERSAND:
                end = op + 2
                while end < n and _class(command, end) & _DIGIT:
                    end += 1
                if end > op + 2 and (end == n or _class(command, end) & _AFTER_DUP):
                    out.append(command[i:end])
                    i = end
                    continue
            if op < n and (ord(command[op]) == _GREATER or ord(command[op]) == _LESS):
                target = op + 1
                if ord(command[op]) == _GREATER and target < n and ord(command[target]) == _GREATER:
                    target += 1
                while target < n and _class(command, target) & _BLANK:
                    target += 1
                end = _word_end(command, target, n)
                if end > target:
                    out.append(command[i:end])
                    i = end
                    continue
        if i > start and _exec_word(command, i, n):  # the lookbehind: a blank before
            out.append(command[i : i + 2])
            i += 2
            continue
        if i > start and code == _DOLLAR:  # the lookbehind: a blank before
            end = _parameter_end(command, i, n)
            if end > i:
                out.append(command[i:end])
                i = end
                continue
        end = _word_end(command, i, n)
        if end > i:
            out.append(command[i:end])
            i = end
            continue
        out.append(command[i])  # any other character, alone
        i += 1
    return out


def _exec_word(command: str, i: int, n: int) -> bool:
    """``\\;`` or ``{}`` starts at ``i`` and a blank or the end follows (the blank before is the caller's)."""
    if i + 1 >= n:
        return False
    code = ord(command[i])
    follow = ord(command[i + 1])
    if not (
        (code == _BACKSLASH_CODE and follow == _SEMICOLON) or (code == _OPEN_BRACE and follow == _CLOSE_BRACE)
    ):
        return False
    return i + 2 == n or bool(_class(command, i + 2) & _BLANK)


def _parameter_end(command: str, i: int, n: int) -> int:
    """Where ``$NAME`` starting at ``i`` ends when a blank, ``;``, ``|``, ``&`` or the end follows it (else ``i``)."""
    j = i + 1
    if j >= n or not _assign_class(command, j) & 1:  # `_ASSIGN_CLASSES`: 1 starts a name, 2 continues it
        return i
    j += 1
    while j < n and _assign_class(command, j) & 2:
        j += 1
    if j < n and not (_class(command, j) & _AFTER_DUP or ord(command[j]) == _AMPERSAND):
        return i
    return j


def _starts_compound(command: str) -> bool:
    """The first word is reserved (``for``, ``if``, ``[[``, ...) or starts with ``(``, ``{``, ``[`` or ``!``:
    the tokens would be refused anyway; this sends loops and groups to the parser before tokenizing.

    Only commands with a ``$`` pay for it (those the tokenizer refused outright before ``$NAME`` words).
    """
    n = len(command)
    i = 0
    while i < n and (ord(command[i]) == 32 or ord(command[i]) == 9):
        i += 1
    if i == n:
        return False
    code = ord(command[i])
    if code == 40 or code == 123 or code == 91 or code == 33:  # ( { [ !
        return True
    # Every other reserved word is two to eight lowercase letters, followed by a blank, an operator or the end.
    j = i
    while j < n and 97 <= ord(command[j]) <= 122:
        j += 1
    if (
        j - i < 2
        or j - i > 8
        or (j < n and not (_class(command, j) & _AFTER_DUP or ord(command[j]) == _AMPERSAND))
    ):
        return False
    word = command[i:j]
    return word in _RESERVED and word != "export"  # `export NAME=value` is planned here


def _dollars_start_names(command: str) -> bool:
    """Every ``$`` has a blank before it and a name character after it: the cheap test that sends
    commands with other expansions to the parser before they are tokenized."""
    i = command.find("$")
    while i >= 0:
        if i == 0 or not _class(command, i - 1) & _BLANK or i + 1 == len(command):
            return False
        if not _assign_class(command, i + 1) & 1:
            return False
        i = command.find("$", i + 1)
    return True


def _word_end(command: str, i: int, n: int) -> int:
    """Where the word of :data:`TOKEN_SPEC` starting at ``i`` ends (``i``: no word there)."""
    j = i
    while j < n:
        code = ord(command[j])
        if _class(command, j) & _PLAIN_FIRST:
            j += 1
            while j < n and _class(command, j) & _PLAIN_TAIL:
                j += 1
            continue
        if code in (_SINGLE_QUOTE, _DOUBLE_QUOTE):
            inside = _IN_SINGLE if code == _SINGLE_QUOTE else _IN_DOUBLE
            k = j + 1
            while k < n and _class(command, k) & inside:
                k += 1
            if k < n and ord(command[k]) == code:
                j = k + 1
                continue
        break  # an unterminated quote or any other character ends the word (possessive: no backtracking)
    return j


def scan_plain_tokens(command: str) -> list[str]:
    """``PLAIN_TOKEN_SPEC.findall(command)``, scanned by hand."""
    out: list[str] = []
    n = len(command)
    i = 0
    while i < n:
        flags = _class(command, i)
        if flags & _BLANK:
            i += 1
            continue
        if flags & _SIMPLE_WORD:
            end = i + 1
            while end < n and _class(command, end) & _SIMPLE_WORD:
                end += 1
            out.append(command[i:end])
            i = end
            continue
        if i and _class(command, i - 1) & _BLANK and _exec_word(command, i, n):
            out.append(command[i : i + 2])
            i += 2
            continue
        code = ord(command[i])
        if code in (_AMPERSAND, _PIPE) and i + 1 < n and ord(command[i + 1]) == code:
            out.append(command[i : i + 2])
            i += 2
            continue
        out.append(command[i])  # an operator `|`/`;`/`&`, or any other character alone
        i += 1
    return out


def _is_name(token: str) -> bool:
    """``[A-Za-z0-9_./][A-Za-z0-9_./+-]*``: a name this path accepts."""
    flag = 1  # the first character
    for index in range(len(token)):
        code = ord(token[index])
        if code >= 128 or not _NAME_CLASSES[code] & flag:
            return False
        flag = 2
    return bool(token)


def _assignment(token: str) -> Assignment | None:
    """``NAME=value`` with a plain, non-empty value (an env prefix), else None (left to the parser)."""
    equals = token.find("=")
    if equals <= 0 or equals == len(token) - 1:
        return None
    flag = 1  # the first character of the name
    for index in range(equals):
        code = ord(token[index])
        if code >= 128 or not _ASSIGN_CLASSES[code] & flag:
            return None
        flag = 2
    for index in range(equals + 1, len(token)):
        code = ord(token[index])
        if code >= 128 or not _ASSIGN_CLASSES[code] & 4:
            return None
    value = token[equals + 1 :]
    return Assignment(token[:equals], token, Word(value, value, NO_FEATURES))


def _word(text: str) -> Word | None:
    """A word with quotes or globs (None: a glob next to quotes, left to the parser)."""
    if "'" in text or '"' in text:
        return _quoted_word(text)
    if "*" in text or "?" in text:
        return Word(text, text, _FLAG_GLOB if text[0] in "*?" else _GLOB)
    return Word(text, text, NO_FEATURES)


def _quoted_word(text: str) -> Word | None:
    """A static word made of plain text and quoted segments (none of them expands).

    ``text`` is a word of :data:`TOKEN_SPEC`, so every quote in it is closed; were one not, the
    word is refused (None) and the parser decides.
    """
    values: list[str] = []
    n = len(text)
    i = 0
    while i < n:
        quote = text[i]
        if quote == "'" or quote == '"':
            end = text.find(quote, i + 1)
            if end < 0:
                return None
            values.append(text[i + 1 : end])
            i = end + 1
            continue
        end = i + 1
        while end < n and text[end] != "'" and text[end] != '"':
            end += 1
        plain = text[i:end]
        if "*" in plain or "?" in plain:
            return None  # a glob next to quotes: left to the parser
        values.append(plain)
        i = end
    if len(values) == 1:
        return Word(text, values[0], DQ_WHOLE_FEATURES if text[0] == '"' else QUOTED_FEATURES)
    return Word(text, "".join(values), QUOTED_FEATURES)


def _regular_shape(commands: list[_Command]) -> bool:
    """True for the list/pipeline shapes tree-sitter-bash nests the plain way (see the module doc)."""
    if len(commands) > MAX_COMMANDS:
        return False
    run = 1
    for _argv, redirects, op, _assignments in commands:
        if op == "|":
            if redirects and run > 1:
                return False  # a redirection on a piped command other than the first of its pipeline
            run += 1
        else:
            if run >= 3 and (op == "&&" or op == "||"):
                return False
            run = 1
    return True


def _nest_lists_into_pipelines(plan_commands: list[PlanCommand], statement_start: int, start: int) -> None:
    """Commands ``statement_start``..``start`` are in the list tree-sitter nests into the pipeline a
    redirected command at ``start`` begins (see the module doc): one more pipeline around each."""
    for index in range(statement_start, start):
        plan_commands[index].context.insert(0, "pipeline")  # the outermost context


def _declaration(argv: list[Word]) -> Construct:
    """The construct of ``export NAME=value ...`` (the words of a command without doubled blanks or tabs)."""
    return Construct("export", " ".join([word.raw for word in argv]), [], [], "export")


def _plan(commands: list[_Command], dynamic: bool, declared: list[int], script_depth: int) -> CommandPlan:
    """What ``Planner`` makes of the tree of these commands (it does the work when a name needs it);
    ``dynamic``: some word is an expansion; ``declared``: the indexes of ``export`` declarations."""
    for argv, _redirects, _op, _assignments in commands:
        if argv[0].raw.rpartition("/")[2] in PLANNER_NAMES:  # `/usr/bin/env` too
            return _planner_plan(commands, dynamic, declared, script_depth)
    constructs = [_declaration(commands[index][0]) for index in declared]
    plan_commands: list[PlanCommand] = []
    operators: list[str] = []
    redirects: list[Redirect] = []
    assignments: list[Assignment] = []
    piped = False
    statement_start = 0
    for argv, command_redirects, op, command_assignments in commands:
        pipe = op == "|"
        if pipe and command_redirects and not piped:
            _nest_lists_into_pipelines(plan_commands, statement_start, len(plan_commands))
        plan_commands.append(
            PlanCommand(
                argv, command_assignments, command_redirects, ["pipeline"] if pipe or piped else [], None
            )
        )
        if command_redirects:
            redirects.extend(command_redirects)
        if command_assignments:
            assignments.extend(command_assignments)
        if op:
            operators.append(op)
            if op == "&":
                _background(plan_commands, statement_start)
            if op in _TERMINATORS:
                statement_start = len(plan_commands)
        piped = pipe
    return CommandPlan(
        plan_commands, operators, redirects, [], constructs, [], [], assignments, [], [], dynamic
    )


def _planner_plan(
    commands: list[_Command], dynamic: bool, declared: list[int], script_depth: int
) -> CommandPlan:
    planner = Planner(b"", script_depth, text="")
    planner.dynamic = dynamic
    piped = False
    statement_start = 0
    for index, (argv, redirects, op, assignments) in enumerate(commands):
        if declared and index in declared:
            planner.constructs.append(_declaration(argv))
        pipe = op == "|"
        if pipe and redirects and not piped:
            _nest_lists_into_pipelines(planner.commands, statement_start, len(planner.commands))
        planner.context = ["pipeline"] if pipe or piped else []
        if assignments:
            planner.assignments.extend(
                assignments
            )  # before the commands it wraps add theirs, as h_command does
        planner.add_command(argv, assignments, redirects, None)
        if redirects:
            planner.redirects.extend(redirects)
        if op:
            planner.operators.append(op)
            if op == "&":
                _background(planner.commands, statement_start)
            if op in _TERMINATORS:
                statement_start = len(planner.commands)
        piped = pipe
    planner.context = []
    return planner.plan()


def _background(commands: list[PlanCommand], start: int) -> None:
    """The commands of a statement that ends with ``&`` (wrapped ones too) run as a background job."""
    for command in commands[start:]:
        command.background = True


# The planner reads `bash -c '...'` script strings with this module first (``plan.SCRIPT_PLANNERS``).
SCRIPT_PLANNERS.append(plan_simple)
