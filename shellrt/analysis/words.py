"""Static evaluation of shell words.

A word is *static* when bash would produce exactly one known string for it: no
parameter, command or arithmetic expansion, no ``$'...'``/``$"..."``, no brace
expansion. Globs keep their pattern as the value but are flagged, and a glob that
could expand to something starting with ``-`` is flagged separately
("flag_glob"), because it can inject options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import tree_sitter

from .nodes import Word
from .parse import kind_of

__all__ = [
    "CUT_AFTER",
    "CUT_BEFORE",
    "DQ_WHOLE_FEATURES",
    "NO_FEATURES",
    "PLAIN_WORD_CHARS",
    "QUOTED_FEATURES",
    "SubstitutionHook",
    "TextOf",
    "blank_gap",
    "cut_like_bash",
    "escape_follows",
    "evaluate_word",
    "starts_word",
    "word_from_text",
]

#: Called for every ``$(...)``/backtick/``<(...)`` node found inside a word.
SubstitutionHook = Callable[[tree_sitter.Node], None]
#: Source text of a node (the planner slices its decoded source instead of ``node.text``).
TextOf = Callable[[tree_sitter.Node], str]

_GLOB_CHARS: Final = frozenset("*?[")
_DQ_ESCAPABLE: Final = frozenset('$`"\\')
_PURE_ARITH_KINDS: Final = frozenset(
    {"number", "binary_expression", "unary_expression", "parenthesized_expression", "ternary_expression"}
)


class _Acc:
    """Accumulates a word's value and features while walking its nodes."""

    __slots__ = ("brace_open", "dynamic", "features", "first_glob", "parts")

    def __init__(self) -> None:
        self.brace_open = False
        self.parts: list[str] = []
        self.features: set[str] = set()
        self.dynamic = False
        self.first_glob = False

    @property
    def at_start(self) -> bool:
        return not self.dynamic and not any(self.parts)


#: Bytes that end a word in bash when unescaped and unquoted (blank, newline, operators, backquote).
CUT_AFTER: Final[frozenset[int]] = frozenset(b" \t\n;&|()<>`")
#: Bytes a word may start right after: those, and ``=`` (an assignment's value, ``[[ a==b ]]``).
CUT_BEFORE: Final[frozenset[int]] = frozenset(b" \t\n;&|()<>`=")
_BACKSLASH: Final = 0x5C
_NEWLINE: Final = 0x0A
_SPACE: Final = 0x20
_DOLLAR: Final = 0x24
_TAB: Final = 0x09


def cut_like_bash(source: bytes, start: int, end: int, owner_end: int = -1) -> bool:
    """Whether bash also starts a word at ``start`` and ends it at ``end`` (a grammar node's span).

    tree-sitter-bash cuts words where bash does not: it drops an escaped blank between two words
    (``sort -t \\  -o out`` is ``sort -t -o out`` to it: ``-o`` looks like ``-t``'s value, while bash
    passes ``-t ' ' -o out`` and writes ``out``) and splits a word after a quote before an escape
    (``'a'\\-b`` is one word ``a-b`` to bash, two to the grammar). Bash starts a word only after an
    unescaped blank or operator byte and ends it only before one; a node whose span does not sit
    between such bytes was cut differently, and so was one after blanks that follow an escaped blank
    no word node holds (``owner_end``: where the previous word node ended). Line continuations
    (backslash, newline) vanish first.
    """
    if not starts_word(source, start, owner_end):
        return False
    if end > start and _escaped(source, end):
        return False  # the node ends in an unescaped backslash: bash escapes the byte after it
    size = len(source)
    j = end
    while j + 1 < size and source[j] == _BACKSLASH and source[j + 1] == _NEWLINE:
        j += 2
    return j >= size or source[j] in CUT_AFTER


def starts_word(source: bytes, start: int, owner_end: int = -1) -> bool:
    """Whether bash starts a word (or a ``#`` comment) at ``start``: see :func:`cut_like_bash`.

    A comment matters most: the grammar starts one at ``#`` after an escaped blank (``ls \\ #; rm x``
    is ``ls`` and a comment to it); bash reads the word `` #`` and runs ``rm x``.
    """
    if start >= 1 and source[start - 1] == _DOLLAR and source[start : start + 1] == b'"':
        start -= 1  # ``$"..."``: the grammar gives the ``$`` a token of its own
    i = start - 1
    while i >= 0:
        byte = source[i]
        if byte in (_SPACE, _TAB) and not _escaped(source, i):
            i -= 1
        elif byte == _NEWLINE and i >= 1 and source[i - 1] == _BACKSLASH and _escaped(source, i):
            i -= 2
        else:
            break
    if i >= 0:
        if i == start - 1:
            if source[i] not in CUT_BEFORE or _escaped(source, i):
                return False
        elif _escaped(source, i) and i + 1 != owner_end:
            return False  # an escaped byte (a blank: ``\\ ``) that no word node holds
    return True


def blank_gap(source: bytes, start: int, end: int) -> bool:
    """Whether ``source[start:end]`` (between two pieces of one simple command) is only blanks and
    line continuations. The grammar drops an escaped blank there, and joins the next line to a
    command when it starts with a continuation (bash ends the command at the newline)."""
    return blank_end(source, start) >= end


def escape_follows(source: bytes, end: int) -> bool:
    """Whether a backslash (not a line continuation) follows ``end`` after blanks: the escaped byte
    is a word to bash (``f \\  ;`` passes `` ``), which the grammar dropped from the command."""
    i = blank_end(source, end)
    return i < len(source) and source[i] == _BACKSLASH


def blank_end(source: bytes, start: int) -> int:
    """Where the blanks and line continuations from ``start`` on end."""
    i = start
    size = len(source)
    while i < size:
        byte = source[i]
        if byte in (_SPACE, _TAB):
            i += 1
        elif byte == _BACKSLASH and i + 1 < size and source[i + 1] == _NEWLINE:
            i += 2
        else:
            break
    return i


def _escaped(source: bytes, at: int) -> bool:
    """Whether an odd run of backslashes ends right before ``at``."""
    i = at
    while i > 0 and source[i - 1] == _BACKSLASH:
        i -= 1
    return (at - i) % 2 == 1


def word_from_text(text: str) -> Word:
    """A static word for text that did not come from the parser (e.g. unwrapped argv)."""
    return Word(text, text, _EMPTY)


_EMPTY: Final[frozenset[str]] = frozenset()
_QUOTED: Final[frozenset[str]] = frozenset({"quoted"})
#: A ``word``/``number`` node without these characters, and not starting with ``~``, is its own
#: static value with no features: ``_unquoted`` only reacts to these (``,`` and ``..`` only after
#: an unquoted ``{``, and ``~`` only as the first character).
_SPECIAL: Final = frozenset("\\*?[{$\n")
PLAIN_WORD_CHARS: Final = _SPECIAL
NO_FEATURES: Final = _EMPTY
_DQ_WHOLE: Final[frozenset[str]] = frozenset({"dq_whole", "quoted"})
#: Feature sets of a static quoted word and of a whole double-quoted one (the parser-free planner uses them too).
QUOTED_FEATURES: Final = _QUOTED
DQ_WHOLE_FEATURES: Final = _DQ_WHOLE


def evaluate_word(
    node: tree_sitter.Node, on_substitution: SubstitutionHook, text_of: TextOf | None = None
) -> Word:
    """Evaluate one argument/command-name node into a :class:`Word`."""
    if text_of is None:
        text_of = _text
    kind = kind_of(node)
    if kind == "word" or kind == "number":
        text = text_of(node)
        if _SPECIAL.isdisjoint(text) and text[:1] != "~":  # fast path: a plain unquoted word
            return Word(text, text, _EMPTY)
    elif kind == "raw_string":
        text = text_of(node)
        return Word(text, text[1:-1], _QUOTED)
    elif kind == "string":
        # Fast path: "..." with no expansion inside (what _walk gives for one string_content or none).
        named = node.named_children
        if not named and node.child_count == 2:
            # `""`, or only blanks: tree-sitter-bash puts the blanks into the closing quote's token.
            text = text_of(node)
            return Word(text, text[1:-1], _DQ_WHOLE)
        if len(named) == 1 and kind_of(named[0]) == "string_content":
            pieces = _string_pieces(node)
            if pieces is not None and len(pieces) == 1 and isinstance(pieces[0], str):
                return Word(text_of(node), pieces[0], _DQ_WHOLE)
    acc = _Acc()
    if kind == "string":
        acc.features.add("dq_whole")  # one double-quoted word: no splitting, no globbing
    _walk(node, acc, on_substitution, text_of, top=True)
    if acc.first_glob:
        acc.features.add("flag_glob")
    value = None if acc.dynamic else "".join(acc.parts)
    return Word(text_of(node), value, frozenset(acc.features))


def _walk(
    node: tree_sitter.Node, acc: _Acc, hook: SubstitutionHook, text_of: TextOf, top: bool = False
) -> None:
    kind = kind_of(node)
    if kind == "word":
        _unquoted(text_of(node), acc, first=top or acc.at_start)
    elif kind == "number":
        acc.parts.append(text_of(node))
    elif kind == "raw_string":
        acc.features.add("quoted")
        acc.parts.append(text_of(node)[1:-1])
    elif kind == "string":
        acc.features.add("quoted")
        pieces = _string_pieces(node)
        if pieces is None:
            acc.features.add("unknown_node")
            acc.dynamic = True
            _find_substitutions(node, acc, hook)
            return
        for piece in pieces:
            if isinstance(piece, str):
                acc.parts.append(piece)
            else:
                _expansion(piece, acc, hook)
    elif kind == "concatenation":
        for child in node.children:
            _walk(child, acc, hook, text_of)
    elif kind == "brace_expression":
        acc.features.add("brace")
        acc.dynamic = True
    elif kind in (
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
    ):
        _expansion(node, acc, hook)
    elif kind == "ansi_c_string":
        acc.features.add("ansi_c")
        acc.dynamic = True
    elif kind == "translated_string" or kind == "$":
        acc.features.add("translated")
        acc.dynamic = True
    else:
        acc.features.add("unknown_node")
        acc.dynamic = True
        _find_substitutions(node, acc, hook)


def _expansion(node: tree_sitter.Node, acc: _Acc, hook: SubstitutionHook) -> None:
    kind = kind_of(node)
    acc.dynamic = True
    if kind == "simple_expansion":
        acc.features.add("parameter")
        acc.features.add("simple_parameter")
    elif kind == "expansion":
        acc.features.add("parameter")
        named = node.named_children
        if (
            len(named) == 1
            and kind_of(named[0]) in ("variable_name", "special_variable_name")
            and node.child_count == 3
        ):
            acc.features.add("simple_parameter")
        else:
            acc.features.add("complex_parameter")
        _find_substitutions(node, acc, hook)
    elif kind in ("command_substitution", "process_substitution"):
        acc.features.add("command_substitution" if kind == "command_substitution" else "process_substitution")
        hook(node)
    elif kind == "arithmetic_expansion":
        if _pure_arithmetic(node):
            acc.features.add("pure_arithmetic")
        else:
            acc.features.add("arithmetic")
            _find_substitutions(node, acc, hook)
    else:
        acc.features.add("unknown_node")
        _find_substitutions(node, acc, hook)


def _pure_arithmetic(node: tree_sitter.Node) -> bool:
    """Only numbers and operators: no names (bash evaluates variable values recursively)."""
    for child in node.named_children:
        if kind_of(child) not in _PURE_ARITH_KINDS or not _pure_arithmetic(child):
            return False
    return True


def _find_substitutions(node: tree_sitter.Node, acc: _Acc, hook: SubstitutionHook) -> None:
    for child in node.named_children:
        if kind_of(child) in ("command_substitution", "process_substitution"):
            acc.features.add("command_substitution")
            hook(child)
        else:
            _find_substitutions(child, acc, hook)


def _unquoted(text: str, acc: _Acc, first: bool) -> None:
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                continue
            acc.features.add("backslash")
            if i + 1 < n:
                out.append(text[i + 1])
            i += 2
            continue
        if ch == "\n":
            # An unquoted line break ends the command in bash; tree-sitter-bash can lex the next
            # line into this word (`ls<newline>\\rm x` is `ls` with an argument `<newline>rm`).
            acc.features.add("line_break")
            acc.dynamic = True
        elif ch in _GLOB_CHARS:
            acc.features.add("glob")
            if first and not out:
                acc.first_glob = True
        elif ch == "{":
            # A literal brace (``HEAD@{1}``, ``-I{}``) stays static; an unquoted
            # ``,`` or ``..`` after an unquoted ``{`` is a brace expansion.
            acc.features.add("brace_char")
            acc.brace_open = True
        elif acc.brace_open and (ch == "," or (ch == "." and i + 1 < n and text[i + 1] == ".")):
            acc.features.add("brace")
            acc.dynamic = True
        elif ch == "~" and first and i == 0:
            acc.features.add("tilde")
        elif ch == "$":
            acc.features.add("unknown_node")
            acc.dynamic = True
        out.append(ch)
        i += 1
    acc.parts.append("".join(out))


def _string_pieces(node: tree_sitter.Node) -> list[str | tree_sitter.Node] | None:
    """A ``"..."`` word as bash reads it: literal runs and the expansion nodes between them.

    The runs are cut from the source, not joined from the grammar's ``string_content`` nodes: those
    leave out line breaks (``"a<newline>b"`` gave ``ab``: ``bash -c "echo hi<newline>rm x"`` was
    judged as ``echo hirm x``). None when the node has no source or is not a whole quoted string.
    """
    data = node.text
    if data is None or len(data) < 2 or data[:1] != b'"' or data[-1:] != b'"':
        return None
    base = node.start_byte
    pieces: list[str | tree_sitter.Node] = []
    start = 1
    for child in node.named_children:
        if kind_of(child) == "string_content":
            continue
        run = data[start : child.start_byte - base]
        if run:
            pieces.append(_double_quoted(run.decode("utf-8", "surrogateescape")))
        pieces.append(child)
        start = child.end_byte - base
    pieces.append(_double_quoted(data[start:-1].decode("utf-8", "surrogateescape")))
    return pieces


def _double_quoted(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "\n":
                i += 2
                continue
            if nxt in _DQ_ESCAPABLE:
                out.append(nxt)
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _text(node: tree_sitter.Node) -> str:
    data = node.text
    return data.decode("utf-8", "surrogateescape") if data is not None else ""
