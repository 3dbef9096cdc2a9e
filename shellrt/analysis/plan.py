"""Turn a tree-sitter-bash tree into a :class:`CommandPlan`.

The walker knows an explicit list of node kinds; any other kind is recorded in
``plan.unsupported`` (and therefore never read-only). Commands run by wrappers
(``timeout 5 rm x``), by ``find -exec``, and script strings of ``bash -c`` /
``eval`` are planned as extra commands with ``wrapped_by`` set, so permission
rules see them too.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Final

import tree_sitter

from .globwords import expanded_by_bash, glob_may_match
from .heredoc import bash_delimiter, bash_end_line, glued_metacharacter, join_continuations, scan_body
from .nodes import (
    Assignment,
    CommandPlan,
    Construct,
    Heredoc,
    PlanCommand,
    Redirect,
    Substitution,
    SubstitutionKind,
    Word,
    is_fd_number,
)
from .parse import kind_of, parse_bash
from .programs import SHELLS, WRAPPERS, find_exec_commands, unwrap
from .programs.wrappers import possible_program
from .words import (
    CUT_AFTER,
    CUT_BEFORE,
    NO_FEATURES,
    PLAIN_WORD_CHARS,
    blank_gap,
    cut_like_bash,
    escape_follows,
    evaluate_word,
    starts_word,
)

__all__ = ["MAX_DEPTH", "MAX_WRAPPED_PLAN", "SCRIPT_PLANNERS", "UNWRAP_NAMES", "PlanLimitError", "Planner", "build_plan"]

#: Nesting deeper than this is not planned: the whole command is unread (fail closed).
MAX_DEPTH: Final = 64
#: A wrapped command (``env X``, ``find -exec X``) found when a plan holds more commands than
#: this makes the whole command unread (each wrapper level copies the rest of its words).
MAX_WRAPPED_PLAN: Final = 200
#: ``bash -c '...'`` inside ``bash -c`` ... is planned this many levels deep.
MAX_SCRIPT_DEPTH: Final = 3
#: The parser-free planner of script strings, ``(script, script_depth) -> plan or None``:
#: ``fastplan.plan_simple``, registered by ``fastplan`` (which imports this module). It plans
#: exactly what parsing the script and walking its tree would (tests compare both).
SCRIPT_PLANNERS: Final[list[Callable[[str, int], CommandPlan | None]]] = []


class PlanLimitError(Exception):
    """A command beyond the planner's limits: :func:`shellrt.analysis.analyze` reads none of
    it (one unread part, never read-only, no allow rule matches it) instead of part of it."""

    def __str__(self) -> str:
        return (
            f"command too large to analyse: {self.args[0] if self.args else 'a limit'}; "
            "split it into several smaller commands"
        )

_STATEMENT_OPS: Final = frozenset({"&&", "||", ";", "&", ";;", "|", "|&", "\n"})
_REDIRECT_KINDS: Final = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_ARITH_TEST_OPS: Final = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
#: Redirections the grammar reads as comparisons inside ``[ ]`` (others found there fail closed).
_BRACKET_REDIRECT_OPS: Final = frozenset({">", ">>", "<"})
#: Statements the grammar may find inside a test (``[ a 2> f ]``): planned, never taken for operands.
_TEST_STATEMENTS: Final = frozenset(
    {
        "redirected_statement",
        "command",
        "pipeline",
        "list",
        "file_redirect",
        "heredoc_redirect",
        "herestring_redirect",
    }
)
_SPACE: Final = 0x20
_OPEN_BRACE: Final = 0x7B
_CLOSE_BRACE: Final = 0x7D
#: Nodes that make up one shell word (the grammar splits ``{a['x']}`` into a concatenation of them).
_WORD_NODES: Final = frozenset(
    {"word", "concatenation", "string", "raw_string", "command_name", "number", "simple_expansion", "expansion"}
)
#: Redirections that close a descriptor (one token to the grammar): every word after one is an argument.
_CLOSE_OPS: Final = frozenset({">&-", "<&-"})
#: Substitutions the grammar may leave as a word of their own.
_SUBSTITUTION_NODES: Final = frozenset({"command_substitution", "process_substitution"})
_SUBSTITUTION_KINDS: Final[dict[str, SubstitutionKind]] = {
    "$(": "command",
    "`": "backtick",
    "<(": "process_in",
    ">(": "process_out",
}
#: Words of ``find`` that end or start a command it runs: a glob that may expand to one hides it.
_FIND_STRUCTURE: Final = ("-exec", "-execdir", "-ok", "-okdir", ";", "+")
#: Programs :meth:`Planner._unwrap` looks inside (``unwrap`` answers "nothing" for the rest).
UNWRAP_NAMES: Final = frozenset({"find", "eval", *SHELLS, *WRAPPERS})
_LOOP_KINDS: Final = {"while": "while", "until": "until", "for": "for", "select": "select"}
_CLOSING_WORDS: Final = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "in", "}", "]]"})
#: Reserved words that open a compound: after ``time`` the grammar reads them as arguments (a whole
#: compound after it already has a closing word; without one, as in ``time if 5``, bash rejects it).
_TIME_MISREAD_WORDS: Final = _CLOSING_WORDS | {
    "if",
    "for",
    "while",
    "until",
    "case",
    "select",
    "{",
    "function",
}
#: Reserved words the grammar accepts as a plain command name; bash reads them as syntax (`done x` is an
#: error; `! for ...` and `time { ...; }` are compounds the grammar reads as commands): never parse_ok.
_RESERVED_NAMES: Final = frozenset(
    {
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "esac",
        "in",
        "{",
        "}",
        "]]",
        "if",
        "case",
        "while",
        "until",
        "for",
        "select",
        "function",
        "[[",
        "!",
    }
)
#: Words that may follow a pipeline-starting `time` while it still times nothing (`time -p`, `time time`).
_BARE_TIME_WORDS: Final = frozenset({"time", "-p", "--", "!"})
#: What bash refuses right after a `time` that times nothing (`time && ls`, `( time )`); `;` and newline are fine.
_AFTER_BARE_TIME: Final = frozenset({"&&", "||", "|", "|&", "&", ";;", ";&", ";;&"})


class _Leaves:
    """The leaves of a ``[ ]`` test in source order: words, their byte spans, which are operators."""

    __slots__ = ("spans", "tokens", "words")

    def __init__(self) -> None:
        self.words: list[Word] = []
        self.spans: list[tuple[int, int]] = []
        self.tokens: set[int] = set()


class Planner:
    """Collects plan lists while walking one tree (and nested script strings)."""

    __slots__ = (
        "after_pipe",
        "argument_starts",
        "ascii_text",
        "assignments",
        "bare_time",
        "cd_targets",
        "commands",
        "constructs",
        "context",
        "depth",
        "dynamic",
        "fast_scripts",
        "functions",
        "heredocs",
        "operators",
        "pending_words",
        "pipe_start",
        "redirects",
        "script_depth",
        "source",
        "substitutions",
        "syntax_errors",
        "trailing",
        "unescaped",
        "unsupported",
        "word_end",
    )

    def __init__(
        self, source: bytes, script_depth: int = 0, text: str | None = None, fast_scripts: bool = True
    ) -> None:
        self.source = source
        #: Script strings (``bash -c '...'``) go to :data:`SCRIPT_PLANNERS` first (False: always parsed).
        self.fast_scripts = fast_scripts
        if text is None:
            text = source.decode("utf-8", "surrogateescape")
        #: Byte offsets index ``text`` directly when the source is ASCII (decode once, slice).
        self.ascii_text = text if len(text) == len(source) else None
        self.commands: list[PlanCommand] = []
        self.operators: list[str] = []
        self.redirects: list[Redirect] = []
        #: Redirections the grammar hangs off a here-document's (`cat <<EOF > f`): `redirects_of` takes them.
        self.trailing: list[Redirect] = []
        #: Argument nodes the grammar put in a later redirection of a command (`git 2>/dev/null push`),
        #: by where that command starts.
        self.pending_words: dict[int, list[tree_sitter.Node]] = {}
        #: Where the words planned from `pending_words` start (the redirection then skips them).
        self.argument_starts: set[int] = set()
        self.substitutions: list[Substitution] = []
        self.constructs: list[Construct] = []
        self.heredocs: list[Heredoc] = []
        self.functions: list[str] = []
        self.assignments: list[Assignment] = []
        self.cd_targets: list[str] = []
        self.unsupported: list[str] = []
        self.syntax_errors: list[str] = []
        self.dynamic = False
        #: Where the commands of the last element of the last pipeline visited start.
        self.pipe_start = 0
        self.context: list[str] = []
        self.depth = 0
        self.script_depth = script_depth
        #: The last operator was `|`/`|&`: the next command does not start a pipeline (`time` is a plain name there).
        self.after_pipe = False
        #: A pipeline-starting `time` that times nothing yet (bash refuses most operators after it).
        self.bare_time: PlanCommand | None = None
        #: Where the last word checked by :meth:`cut` ended (an escaped blank right before it is that word's).
        self.word_end = -1
        #: No backslash in the source: :meth:`cut` only looks at a word's two neighbouring bytes.
        self.unescaped = b"\\" not in source

    # -- entry points -------------------------------------------------------------------

    def visit(self, node: tree_sitter.Node) -> None:
        depth = self.depth + 1
        if depth > MAX_DEPTH:
            # Never drop the subtree and keep the rest: a part left out is one no rule sees.
            raise PlanLimitError(f"the command nests deeper than {MAX_DEPTH} levels")
        kind = kind_of(node)
        handler = _HANDLERS.get(kind)
        if handler is None:
            if node.is_named:
                self.depth = depth
                self.unsupported.append(kind)
                self._scan(node)
                self.depth = depth - 1
            elif kind in _STATEMENT_OPS:
                self._operator(kind)
            return
        # No try/finally: an exception abandons the whole planner (analyze fails closed).
        self.depth = depth
        handler(self, node)
        self.depth = depth - 1

    def plan(self) -> CommandPlan:
        return CommandPlan(
            self.commands,
            self.operators,
            self.redirects,
            self.substitutions,
            self.constructs,
            self.heredocs,
            self.functions,
            self.assignments,
            self.cd_targets,
            self.unsupported,
            self.dynamic,
            self.syntax_errors,
        )

    def text(self, node: tree_sitter.Node) -> str:
        """Source text of ``node``: a slice of the decoded command when it is ASCII."""
        ascii_text = self.ascii_text
        if ascii_text is not None:
            return ascii_text[node.start_byte : node.end_byte]
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    # -- helpers ---------------------------------------------------------------------------

    def cut(self, node: tree_sitter.Node) -> None:
        """Fail closed (a syntax error) where the grammar cut a word where bash does not."""
        self.cut_span(node.start_byte, node.end_byte)

    def cut_span(self, start: int, end: int) -> None:
        """:meth:`cut` for a word node's byte span."""
        source = self.source
        if self.unescaped:  # no backslash: no escaped byte, no continuation; only the neighbours count
            before = source[start - 1] if start else _SPACE
            after = source[end] if end < len(source) else _SPACE
            if before in CUT_BEFORE and after in CUT_AFTER:
                self.word_end = end
                return
        if not cut_like_bash(source, start, end, self.word_end):
            text = source[start:end].decode("utf-8", "surrogateescape")
            self.syntax_errors.append(
                f"the parser cuts the word {text!r} where bash does not (an escaped blank "
                "or byte next to it): quote the whole word instead"
            )
        self.word_end = end

    def word(self, node: tree_sitter.Node) -> Word:
        self.cut(node)
        kind = kind_of(node)
        if kind == "word" or kind == "number":  # evaluate_word's fast path, inline
            ascii_text = self.ascii_text
            text = ascii_text[node.start_byte : node.end_byte] if ascii_text is not None else self.text(node)
            if PLAIN_WORD_CHARS.isdisjoint(text) and text[:1] != "~":
                return Word(text, text, NO_FEATURES)
        word = evaluate_word(node, self.substitution, self.text)
        if word.value is None:
            self.dynamic = True
            if "line_break" in word.features:
                self.syntax_errors.append(
                    f"a line break inside the word {word.raw!r}: bash ends the command there, "
                    "the parser read the next line into it"
                )
        return word

    def substitution(self, node: tree_sitter.Node) -> None:
        first = kind_of(node.children[0]) if node.children else ""
        kind = _SUBSTITUTION_KINDS.get(first, "command")
        self.substitutions.append(Substitution(kind=kind, text=self.text(node)))
        self.dynamic = True
        self._nested(
            node, "command_substitution" if kind in ("command", "backtick") else "process_substitution"
        )

    def _nested(self, node: tree_sitter.Node, context: str) -> None:
        self.context.append(context)
        try:
            self._sequence(node)
        finally:
            self.context.pop()

    def _sequence(self, node: tree_sitter.Node) -> None:
        """Visit statement children, recording ``\\n`` between statements with no operator.

        The commands of a statement followed by ``&`` are marked as background jobs.
        """
        previous_statement = False
        statement_start = len(self.commands)
        last_start = statement_start
        for child in node.children:
            kind = kind_of(child)
            if child.is_named:
                if kind == "comment":
                    self.h_comment(child)
                    continue
                if kind in _REDIRECT_KINDS:
                    # `$(< f)`: bash opens f (reads it, or creates it for `$(> f)`) with no command.
                    self.commands.append(
                        PlanCommand([], [], self.redirects_of(child), list(self.context), None)
                    )
                    continue
                if previous_statement:
                    self.operators.append("\n")
                statement_start = len(self.commands)
                self.visit(child)
                last_start = self.pipe_start if kind == "pipeline" or kind == "list" else statement_start
                previous_statement = True
            elif kind in _STATEMENT_OPS:
                previous_statement = False
                self._operator(kind)
                if kind == "&":
                    self._background(statement_start)
                statement_start = len(self.commands)
        self.pipe_start = last_start

    def _operator(self, kind: str) -> None:
        if kind == ";;":
            # The grammar accepts `ls ;; pwd`; bash refuses it (only case items end with `;;`).
            self.syntax_errors.append("`;;` outside a case statement")
        if kind in _AFTER_BARE_TIME:
            self._check_bare_time(kind)
        self.bare_time = None
        self.after_pipe = kind == "|" or kind == "|&"
        self.operators.append(kind)

    def _check_bare_time(self, what: str) -> None:
        """`time && ls`, `( time )`: bash's grammar wants a pipeline after `time` (the parser reads a command)."""
        bare = self.bare_time
        if bare is not None and self.commands and self.commands[-1] is bare:
            self.syntax_errors.append(f"`time` with nothing to time before {what}")
        self.bare_time = None

    def _background(self, start: int) -> None:
        for command in self.commands[start:]:
            command.background = True

    def _scan(self, node: tree_sitter.Node) -> None:
        """Find substitutions anywhere below ``node`` (for nodes we do not model)."""
        for child in node.named_children:
            if kind_of(child) in ("command_substitution", "process_substitution"):
                self.substitution(child)
            else:
                self._scan(child)

    def _construct(
        self,
        kind: str,
        node: tree_sitter.Node,
        operators: list[str] | None = None,
        words: list[Word] | None = None,
        name: str | None = None,
    ) -> None:
        self.constructs.append(Construct(kind, self.text(node), operators or [], words or [], name))

    # -- handlers --------------------------------------------------------------------------

    def h_sequence(self, node: tree_sitter.Node) -> None:
        self._sequence(node)

    def h_pipeline(self, node: tree_sitter.Node) -> None:
        self.context.append("pipeline")
        last_start = -1
        try:
            for child in node.children:
                if child.is_named:
                    if kind_of(child) == "negated_command" and last_start != -1:
                        # bash only accepts `!` before a whole pipeline (`a | ! b` is an error)
                        self.syntax_errors.append("`!` inside a pipeline")
                    last_start = len(self.commands)
                self.visit(child)
        finally:
            self.context.pop()
        self.pipe_start = max(last_start, 0)

    def h_redirected(self, node: tree_sitter.Node) -> None:
        children = node.children
        if any(
            a.end_byte < b.start_byte and self.source[a.end_byte : b.start_byte].replace(b"\\\n", b"").strip()
            for a, b in itertools.pairwise(children)
        ):
            # tree-sitter-bash drops a lone `-` before `2>...` (`cat - 2>&1`, `p 2>x - 2>y push`: round 41, any
            # pair of the statement's children): never trust a skipped word.
            self.unsupported.append("source text the parser skipped before a redirection")
        start = len(self.commands)
        redirects: list[Redirect] = []
        last = _last_simple(children[0])
        if last is not None:
            # `git 2>/dev/null push origin`: bash reads a redirection anywhere in a simple command; the
            # grammar makes the words after it more targets of the redirection (red team, round 41:
            # `Bash(git push:*)` saw `git` alone, `ls 2>/dev/null $(rm x)` no `rm`). They are the
            # arguments of the (last) command the redirections apply to, in order.
            words = [
                w
                for c in children[1:]
                if kind_of(c) in _REDIRECT_KINDS
                for w in _argument_nodes(c)
                if not self.fd_number(w)
            ]
            if words:
                self.pending_words[last.start_byte] = words
        for child in children:
            if kind_of(child) in _REDIRECT_KINDS:
                redirects.extend(self.redirects_of(child))
            elif child.is_named:
                self.visit(child)
                if kind_of(child) == "pipeline" or kind_of(child) == "list":
                    start = self.pipe_start  # `a | b >f`, `a && b >f`: the redirection is b's
            elif kind_of(child) in _STATEMENT_OPS:
                self._operator(kind_of(child))
        if redirects:
            self.bare_time = None  # `time >f && ls` times a (redirected) null command: bash accepts it
            if len(self.commands) == start:
                # `> f`, `< f`: no command runs, but the file is opened (created, truncated): a part.
                self.commands.append(PlanCommand([], [], [], list(self.context), None))
            # The statement's redirections apply to every command in it (wrapped ones included).
            for command in self.commands[start:]:
                command.redirects = command.redirects + redirects

    def fd_number(self, node: tree_sitter.Node) -> bool:
        """Whether ``node`` is a number glued to a redirection operator (``0<f``): its fd, not a word."""
        return kind_of(node) == "number" and self.source[node.end_byte : node.end_byte + 1] in (b"<", b">")

    def redirects_of(self, node: tree_sitter.Node) -> list[Redirect]:
        """The redirection ``node`` and those the grammar nests in it (``cat <<EOF > f``: the ``> f``)."""
        first = self.redirect(node)
        nested, self.trailing = self.trailing, []
        return [first, *nested]

    def redirect(self, node: tree_sitter.Node) -> Redirect:
        self._variable_redirect(node)
        fd: str | None = None
        op = ""
        target: Word | None = None
        kind = kind_of(node)
        if kind == "heredoc_redirect":
            trailing: list[Redirect] = []
            after_statement = False
            start_node: tree_sitter.Node | None = None
            body_node: tree_sitter.Node | None = None
            end_node: tree_sitter.Node | None = None
            for child in node.children:
                ctype = kind_of(child)
                if ctype == "heredoc_start":
                    start_node = child
                elif ctype == "heredoc_body":
                    body_node = child
                elif ctype == "heredoc_end":
                    end_node = child
                elif ctype == "file_descriptor":
                    fd = self.text(child)
                elif ctype in ("<<", "<<-"):
                    op = ctype
                elif child.start_byte in self.argument_starts and not after_statement:
                    continue  # `cat <<EOF x`: planned as the command's argument
                elif not after_statement and (ctype in _WORD_NODES or ctype in _SUBSTITUTION_NODES):
                    # Not a simple command's (`{ cat; } <<EOF x`, `export <<EOF x=1`): refused, and what
                    # it runs planned all the same.
                    self.syntax_errors.append(
                        f"the parser hangs {self.text(child)!r} off a here-document, bash reads it as an "
                        "argument: put the here-document after the command's words"
                    )
                    self.word(child)
                elif ctype in ("file_redirect", "herestring_redirect") and not after_statement:
                    # `cat <<EOF > f`: the grammar nests the command's next redirections in the
                    # here-document's; they are the command's (red team, round 41: the write was lost).
                    trailing.append(self.redirect(child))
                elif child.is_named and ctype != "heredoc_content":
                    after_statement = True
                    # e.g. `cat <<EOF | grep x`: the rest of the pipeline hangs off the redirect.
                    self.visit(child)
                elif not child.is_named and ctype in _STATEMENT_OPS:
                    after_statement = True
                    self._operator(ctype)
            self.heredoc(start_node, body_node, end_node, op == "<<-")
            self.trailing.extend(trailing)
            redirect = Redirect(fd=fd, op=op or "<<", target=None, kind="heredoc")
        else:
            for child in node.children:
                if kind_of(child) == "file_descriptor":
                    fd = self.text(child)
                elif not child.is_named:
                    op += kind_of(child)
                elif target is None and op not in _CLOSE_OPS:
                    target = self.word(child)
                elif self.fd_number(child):
                    continue  # `<&0 0<f`: the grammar reads the next redirection's fd as a target here
                elif target is not None and target.raw.startswith(">"):
                    self.unsupported.append("redirect with several targets")  # `<> f`: see below
                elif child.start_byte not in self.argument_starts:
                    # Only a simple command's words are planned from here (`export >/dev/null PATH=.`
                    # is bash's assignment, the grammar's word): refused, what it runs planned all the same.
                    self.syntax_errors.append(
                        f"the parser reads {self.text(child)!r} as a second target of a redirection, bash as "
                        "an argument: put the redirections after the command's words"
                    )
                    self.word(child)
            if op == "<" and target is not None and target.raw.startswith(">"):
                # The grammar splits `<>` (open read-write, creating the file) into `<` and a target `>...`.
                self.unsupported.append("redirection <> (read-write)")
                op = "<>"
                target = Word(target.raw, None, frozenset({"unknown_node"}))
            redirect = Redirect(fd, op, target, "herestring" if kind == "herestring_redirect" else "file")
        self.redirects.append(redirect)
        return redirect

    def _variable_redirect(self, node: tree_sitter.Node) -> None:
        """bash reads a word ``{NAME}`` right before a redirection as part of it: it stores the new fd
        in the variable NAME, and a subscript there (``{a['$(cmd)']}>f``, ``{a[_]}>f``) is evaluated as
        arithmetic, which runs command substitutions in it or in the values it names. The grammar
        reads the word as an argument; a disagreement between the two is a syntax error here."""
        at = node.start_byte
        if at == 0 or self.source[at - 1] != _CLOSE_BRACE:
            return
        word = node.prev_sibling
        while word is not None and word.end_byte == at and kind_of(word) not in _WORD_NODES and word.children:
            word = word.children[-1]  # `ls {x}>f`: the redirection follows the command, not the word
        # bash takes it when the braces hold a name (or a subscripted one): `{}>f` stays a word.
        first = self.source[word.start_byte + 1 : word.start_byte + 2] if word is not None else b"_"
        if (word is None or (kind_of(word) in _WORD_NODES and self.source[word.start_byte] == _OPEN_BRACE)) and (
            first.isalpha() or first == b"_"
        ):
            self.syntax_errors.append(
                f"{self.text(word) if word is not None else '{...}'!r} right before a redirection is a "
                "variable bash stores the file descriptor in (a subscript there runs code), "
                "not an argument: put a blank before the redirection"
            )

    def heredoc(
        self,
        start: tree_sitter.Node | None,
        body: tree_sitter.Node | None,
        end: tree_sitter.Node | None,
        strip_tabs: bool,
    ) -> None:
        """Record a here-document as bash reads it; fail closed where the parser may read it otherwise."""
        raw_delimiter = self.text(start) if start is not None else ""
        parsed = bash_delimiter(raw_delimiter)
        if start is not None and glued_metacharacter(raw_delimiter):
            # `<<E;`: bash's delimiter is `E`, then `;` and what follows are commands the parser hid.
            self.syntax_errors.append(
                f"here-document delimiter {raw_delimiter!r}: bash ends the word at the unquoted "
                "; | & ( ) < > or blank, the parser does not; put a blank after the delimiter"
            )
            parsed = None
        if start is None or parsed is None:
            self.unsupported.append(f"here-document delimiter {raw_delimiter!r}")
            self.heredocs.append(Heredoc(raw_delimiter, True, "", []))
            # Its body (and whatever it runs) is not read: a part no allow rule can match.
            placeholder = Word(f"<<{raw_delimiter}", None, frozenset({"unknown_node"}))
            self.commands.append(PlanCommand([placeholder], [], [], [*self.context, "heredoc"], None))
            return
        delimiter, quoted = parsed
        source = self.source
        newline = source.find(b"\n", start.end_byte)
        first = len(source) if newline < 0 else newline + 1
        stop = bash_end_line(
            source, first, delimiter.encode("utf-8", "surrogateescape"), strip_tabs, not quoted
        )
        anchor = body if body is not None else end
        parser_first = first if anchor is None else source.rfind(b"\n", 0, anchor.start_byte) + 1
        parser_stop = len(source) if end is None else source.rfind(b"\n", 0, end.start_byte) + 1
        if (
            parser_first != first
            or parser_stop != stop
            or (end is not None and source[end.end_byte : end.end_byte + 1] not in (b"", b"\n"))
        ):
            # bash ends this body on another line than the parser (or never): what runs differs.
            self.syntax_errors.append(f"here-document {delimiter!r} does not end where bash ends it")
        text = source[first:stop].decode("utf-8", "surrogateescape")
        expansions: list[Word] = []
        if not quoted:
            if "\\\n" in text:
                self.unsupported.append("line continuation in an expanding here-document")
                text = join_continuations(text)
            scan = scan_body(text)
            expansions = scan.expansions
            for problem in scan.problems:
                self.unsupported.append(problem)
            for sub_kind, raw, inner in scan.substitutions:
                self._body_substitution(sub_kind, raw, inner, bool(scan.problems))
            if expansions or scan.substitutions:
                self.dynamic = True
        self.heredocs.append(Heredoc(delimiter, not quoted, text, expansions))

    def _body_substitution(self, kind: str, raw: str, inner: str, unsure: bool) -> None:
        """Plan a substitution found in a here-document body (a placeholder when it cannot be read)."""
        self.substitutions.append(
            Substitution(kind="backtick" if kind == "backtick" else "command", text=raw)
        )
        parsed = None if unsure or self.script_depth >= MAX_SCRIPT_DEPTH else parse_bash(inner)
        if parsed is None or parsed.root is None or parsed.error:
            # Not readable: a command no allow rule can match (its name is not static).
            self.unsupported.append(f"here-document substitution {raw!r} is not modelled")
            placeholder = Word(raw, None, frozenset({"unknown_node"}))
            self.commands.append(
                PlanCommand([placeholder], [], [], [*self.context, "command_substitution"], None)
            )
            return
        sub = Planner(parsed.source, self.script_depth + 1, inner, self.fast_scripts)
        sub.context = [*self.context, "command_substitution"]
        sub.visit(parsed.root)
        self._merge(sub.plan(), None, [])

    def _merge(self, sub: CommandPlan, wrapper: str | None, redirects: list[Redirect]) -> None:
        """Adopt everything a nested plan holds (commands keep their own wrapper, else get ``wrapper``)."""
        for command in sub.commands:
            if wrapper is not None and command.wrapped_by is None:
                command.wrapped_by = wrapper
            if redirects:
                command.redirects = command.redirects + redirects
            self.commands.append(command)
        self.operators.extend(sub.operators)
        self.redirects.extend(sub.redirects)
        self.substitutions.extend(sub.substitutions)
        self.constructs.extend(sub.constructs)
        self.heredocs.extend(sub.heredocs)
        self.functions.extend(sub.functions)
        self.assignments.extend(sub.assignments)
        self.cd_targets.extend(sub.cd_targets)
        self.unsupported.extend(sub.unsupported)
        self.syntax_errors.extend(sub.syntax_errors)
        if sub.dynamic:
            self.dynamic = True

    def h_command(self, node: tree_sitter.Node) -> None:
        argv: list[Word] = []
        assignments: list[Assignment] = []
        redirects: list[Redirect] = []
        ascii_text = self.ascii_text
        source = self.source
        # Between the pieces of a simple command bash sees only blanks (and continuations): an escaped
        # blank the grammar dropped is a word to bash (`sort -t \  -o f` is `-t ' '`), and a line the
        # grammar joined to the command is a command of its own. -1: not checked (a here-document's body
        # follows its line, and the rest of the line hangs off it).
        gap_start = -2
        for child in node.children:
            kind = kind_of(child)
            start = child.start_byte
            end = child.end_byte
            if gap_start >= 0 and not (
                (start == gap_start + 1 and source[gap_start] == _SPACE)
                or blank_gap(source, gap_start, start)
            ):
                self.syntax_errors.append(
                    f"the parser joins {self.text(child)!r} to the command before it, bash reads "
                    "something else in between (an escaped blank or a line break): quote the word"
                )
                gap_start = -1
            if gap_start != -1:
                gap_start = -1 if kind == "heredoc_redirect" else end
            if kind == "word" and ascii_text is not None:  # Planner.word's fast path, inline
                text = ascii_text[start:end]
                if PLAIN_WORD_CHARS.isdisjoint(text) and text[:1] != "~":
                    self.cut_span(start, end)
                    argv.append(Word(text, text, NO_FEATURES))
                else:
                    argv.append(self.word(child))
            elif kind == "command_name":
                inner = child.named_children
                if len(inner) == 1 and self.fd_number(inner[0]):
                    continue  # `0</dev/null rm x`: the grammar's name is the redirection's fd (round 41)
                argv.append(self.word(inner[0]) if len(inner) == 1 else self.word(child))
            elif kind == "variable_assignment":
                assignments.append(self.assignment(child))
            elif kind in _REDIRECT_KINDS:
                redirects.extend(self.redirects_of(child))
            elif kind == "comment":
                self.h_comment(child)
            elif kind == "number" and source[end : end + 1] in (b"<", b">"):
                continue  # `0<f`: the grammar reads the fd as an argument; bash reads a redirect
            elif child.is_named:
                argv.append(self.word(child))
            elif kind == "$":
                argv.append(Word(raw="$", value=None, features=frozenset({"translated"})))
                self.dynamic = True
            elif kind == "==" or kind == "=~":
                # The grammar keeps these as anonymous tokens; to bash they are plain words
                # (`uniq == out` has two operands: the second is an output file).
                self.cut_span(start, end)
                argv.append(Word(kind, kind, NO_FEATURES))
            else:
                self.unsupported.append(f"token {kind!r} in a command")
        if gap_start >= 0 and not self.unescaped and escape_follows(source, gap_start):
            self.syntax_errors.append(
                "an escaped byte after the command's last word is a word to bash, the parser drops "
                "it: quote the word"
            )
        if argv and (
            argv[0].raw in _RESERVED_NAMES
            or (argv[0].raw == "time" and len(argv) > 1 and argv[1].raw in _TIME_MISREAD_WORDS)
        ):
            # Either a bash syntax error (`done x`) or compound syntax the grammar misreads (`! for ...`).
            self.syntax_errors.append(f"reserved word {argv[0].raw!r} read as a command name")
        pending = self.pending_words.pop(node.start_byte, None) if self.pending_words else None
        if pending is not None:
            self.argument_starts.update(w.start_byte for w in pending)
            argv.extend(self.word(w) for w in pending)
        pipeline_start = not self.after_pipe
        self.add_command(argv, assignments, redirects, None)
        self.after_pipe = False
        if (
            pipeline_start
            and argv
            and argv[0].raw == "time"
            and not assignments
            and not redirects
            and all(w.raw in _BARE_TIME_WORDS for w in argv)
        ):
            self.bare_time = self.commands[-1]

    def add_command(
        self,
        argv: list[Word],
        assignments: list[Assignment],
        redirects: list[Redirect],
        wrapped_by: str | None,
    ) -> None:
        self.commands.append(PlanCommand(argv, assignments, redirects, list(self.context), wrapped_by))
        if not argv:
            return
        name = argv[0].value
        if name in ("cd", "pushd"):
            self._cd(argv)
        if name is not None and "/" in name:
            # `/usr/bin/env X=1 cmd` runs cmd as `env X=1 cmd` does (round 50); `//bin/sh -c …` and
            # `/bin/../bin/sh -c …` may be sh: their script is read (round 52).
            name = possible_program(name)
        if name in UNWRAP_NAMES:  # other names (and dynamic ones) wrap nothing
            self._unwrap(argv, redirects, assignments, name)

    def _cd(self, argv: list[Word]) -> None:
        operands = [w for w in argv[1:] if not (w.value or "").startswith("-") or w.value == "-"]
        if not operands:
            self.cd_targets.append("~")
        elif operands[0].value is not None:
            self.cd_targets.append(operands[0].value)

    def _unwrap(self, argv: list[Word], redirects: list[Redirect], assignments: list[Assignment], name: str) -> None:
        values: list[str | None] = [name, *[w.value for w in argv[1:]]]
        if name == "find":
            for indexes in find_exec_commands([v or "" for v in values[1:]]):
                self._wrapped([argv[i + 1] for i in indexes], "find", redirects)
            if any(expanded_by_bash(w) and glob_may_match(w.value or "", _FIND_STRUCTURE) for w in argv[1:]):
                # `find . -exe? sh x \;` with a file named `-exec`: the command it runs is a file name.
                self._unread_script(" ".join(w.raw for w in argv[1:]), "find", redirects)
            return
        result = unwrap(values, [w.raw for w in argv])
        unread = result.unknown and _runs_dynamic_word(name or "", values)
        if result.start is not None:
            # The wrapped command runs in the environment the wrapper was given and the one it sets
            # (`X=1 env Y=2 cmd`: cmd sees both): its assignments, read once here (round 50).
            given = [_operand_assignment(argv[i]) for i in result.assigned]
            self.assignments.extend(given)
            self._wrapped(argv[result.start :], name or "", redirects, [*assignments, *given])
        elif result.script is not None:
            self._script(result.script, name or "", redirects)
        if not unread and any(expanded_by_bash(w) for w in argv[1:]):
            # A word bash replaces by file names where the wrapper reads its command or script
            # (`bash -c 'ls '*`, `timeout *`): what runs is chosen by the names, not the text.
            masked = [name, *[None if expanded_by_bash(w) else w.value for w in argv[1:]]]
            unread = unwrap(masked).unknown and _runs_dynamic_word(name or "", masked)
        if unread:
            # `bash -c $'\x72m x'`, `exec "$p" x`: what runs is a word only bash decodes.
            self._unread_script(" ".join(w.raw for w in argv[1:]), name or "", redirects)

    def _wrapped(self, argv: list[Word], wrapper: str, redirects: list[Redirect],
                 assignments: list[Assignment] | None = None) -> None:
        if len(self.commands) > MAX_WRAPPED_PLAN:
            # Never plan the rest without it: a wrapped command left out is one no rule sees.
            raise PlanLimitError(f"a command wrapped ({wrapper}) after more than {MAX_WRAPPED_PLAN} commands")
        self.context.append(f"wrapped:{wrapper}")
        try:
            self.add_command(argv, assignments or [], list(redirects), wrapper)
        finally:
            self.context.pop()

    def _script(self, script: str, wrapper: str, redirects: list[Redirect]) -> None:
        if self.script_depth >= MAX_SCRIPT_DEPTH:
            self.unsupported.append("script strings nested too deeply")
            self._unread_script(script, wrapper, redirects)
            return
        if self.fast_scripts and SCRIPT_PLANNERS:
            fast = SCRIPT_PLANNERS[0](script, self.script_depth + 1)
            if fast is not None:
                # What a nested planner starting in this context finds: each command's context
                # (relative to the script) below the script's own.
                outer = [*self.context, f"wrapped:{wrapper}"]
                for command in fast.commands:
                    command.context[:0] = outer
                self._posix_script(fast, script, wrapper, redirects)
                self._merge(fast, wrapper, redirects)
                return
        parsed = parse_bash(script)
        if parsed.root is None:
            self.unsupported.append(f"{wrapper} script: {parsed.error}")
            self._unread_script(script, wrapper, redirects)
            return
        sub = Planner(parsed.source, self.script_depth + 1, script, self.fast_scripts)
        sub.context = [*self.context, f"wrapped:{wrapper}"]
        sub.visit(parsed.root)
        if parsed.error or sub.syntax_errors:
            self.unsupported.append(f"{wrapper} script: {parsed.error or '; '.join(sub.syntax_errors)}")
            self._unread_script(script, wrapper, redirects)
        sub.syntax_errors = []  # bash reports them when the script runs; the outer command parses
        plan = sub.plan()
        self._posix_script(plan, script, wrapper, redirects)
        self._merge(plan, wrapper, redirects)

    def _posix_script(self, plan: CommandPlan, script: str, wrapper: str, redirects: list[Redirect]) -> None:
        """A script another shell than bash runs (``sh -c``: dash on Debian) is read with bash's
        grammar; where that shell reads it otherwise (:func:`_bash_only`), the script is unread."""
        if wrapper in _BASH_SCRIPT_RUNNERS:
            return
        why = _bash_only(plan)
        if why is not None:
            self.unsupported.append(f"{wrapper} script uses {why}")
            self._unread_script(script, wrapper, redirects)

    def _unread_script(self, script: str, wrapper: str, redirects: list[Redirect]) -> None:
        """A script string that was not (fully) read: a part no allow rule can match."""
        placeholder = Word(script, None, frozenset({"unknown_node"}))
        self.commands.append(
            PlanCommand([placeholder], [], list(redirects), [*self.context, f"wrapped:{wrapper}"], wrapper)
        )

    def assignment(self, node: tree_sitter.Node) -> Assignment:
        if not starts_word(self.source, node.start_byte, self.word_end):
            # `<U+3000>x=1`: the grammar skips the ideographic space, bash runs a command of that name.
            self.syntax_errors.append(
                f"the parser reads {self.text(node)!r} as an assignment, bash as a word"
            )
        name = ""
        value: Word | None = None
        seen_op = False
        for child in node.children:
            if not seen_op and kind_of(child) in ("variable_name", "subscript"):
                name = self.text(child)
                if kind_of(child) == "subscript":
                    self._scan(child)
                    self.dynamic = True
            elif kind_of(child) in ("=", "+="):
                seen_op = True
            elif seen_op and child.is_named:
                value = self.word(child) if kind_of(child) != "array" else None
                if kind_of(child) == "array":
                    self._scan(child)
                    self.dynamic = True
        assignment = Assignment(name=name, raw=self.text(node), value=value)
        self.assignments.append(assignment)
        return assignment

    def h_assignment(self, node: tree_sitter.Node) -> None:
        # A standalone assignment is a part of its own (permission rules see it).
        self.add_command([], [self.assignment(node)], [], None)

    def h_subshell(self, node: tree_sitter.Node) -> None:
        self._construct("subshell", node)
        self.after_pipe = False
        self._nested(node, "subshell")
        self._check_bare_time(")")

    def h_compound(self, node: tree_sitter.Node) -> None:
        if node.children and kind_of(node.children[0]) == "((":
            self._arithmetic(node)
            return
        self._construct("group", node)
        self._nested(node, "group")

    def _arithmetic(self, node: tree_sitter.Node) -> None:
        self._construct("arithmetic", node)
        self.dynamic = True
        self._scan(node)

    def h_negated(self, node: tree_sitter.Node) -> None:
        self._construct("negation", node)
        self._sequence(node)

    def h_test(self, node: tree_sitter.Node) -> None:
        operators: list[str] = []
        words: list[Word] = []
        bracket = kind_of(node.children[0]) if node.children else "[["
        self._test_parts(node, operators, words)
        if bracket == "[[":
            self._construct("test", node, operators=operators, words=words)
        else:
            # `[` re-parses its expanded words at run time: keep every leaf, in order.
            leaves = _Leaves()
            self._collect_leaves(node, leaves)
            self._construct("test_bracket", node, operators=operators, words=leaves.words)
            self._bracket_redirects(leaves)
            if self._line_break_between(node, leaves):
                # bash ends the `[` command at the line break and runs the next line as a command of
                # its own (`[ -n<newline>sh ]` runs the file `]`); the grammar reads one test.
                self.syntax_errors.append("a line break inside `[ ]` (bash ends the command there)")

    def _bracket_redirects(self, leaves: _Leaves) -> None:
        """``[ a > f ]``: `[` is a command, so bash opens ``f`` for writing (the grammar reads ``[[``'s
        comparison there). The redirections become a part of their own, as ``> f`` alone would."""
        redirects: list[Redirect] = []
        words = leaves.words
        for index in leaves.tokens:
            op = words[index].raw
            if "<" not in op and ">" not in op:
                continue
            if op not in _BRACKET_REDIRECT_OPS or index + 1 >= len(words):
                self.unsupported.append(f"redirection {op} inside `[ ]`")
                continue
            redirect = Redirect(None, op, self._bracket_target(leaves, index + 1), "file")
            self.redirects.append(redirect)
            redirects.append(redirect)
        if redirects:
            self.commands.append(PlanCommand([], [], redirects, list(self.context), None))

    def _line_break_between(self, node: tree_sitter.Node, leaves: _Leaves) -> bool:
        """Whether a line break outside the test's words (and not a continuation) lies in ``node``."""
        source = self.source
        at = source.find(b"\n", node.start_byte, node.end_byte)
        while at >= 0:
            back = at
            while back > node.start_byte and source[back - 1] == 0x5C:  # a backslash
                back -= 1
            escaped = (at - back) % 2 == 1
            inside = any(start <= at < end for start, end in leaves.spans)
            if not escaped and not inside:
                return True
            at = source.find(b"\n", at + 1, node.end_byte)
        return False

    def _bracket_target(self, leaves: _Leaves, index: int) -> Word:
        """The leaf at ``index`` when it is the whole word bash reads there; else an unknown target
        (the grammar splits ``~/f`` into an operator ``~`` and ``/f``)."""
        word = leaves.words[index]
        start, end = leaves.spans[index]
        whole = index not in leaves.tokens and (
            index + 1 >= len(leaves.words) or self.source[end : end + 1].isspace()
        )
        if whole:
            return word
        stop = end
        while stop < len(self.source) and not self.source[stop : stop + 1].isspace():
            stop += 1
        raw = self.source[start:stop].decode("utf-8", "surrogateescape")
        return Word(raw, None, frozenset({"unknown_node"}))

    def _collect_leaves(self, node: tree_sitter.Node, leaves: _Leaves) -> None:
        """Every operand and operator of a ``[ ]`` test, in order (``tokens``: the operators' indexes)."""
        for child in node.children:
            kind = kind_of(child)
            if kind in ("binary_expression", "unary_expression", "parenthesized_expression"):
                self._collect_leaves(child, leaves)
                continue
            if kind in ("[", "]"):
                continue
            if kind == "test_operator" or not child.is_named:
                text = self.text(child)
                leaves.tokens.add(len(leaves.words))
                word = Word(raw=text, value=text, features=frozenset())
            elif kind in ("regex", "extglob_pattern") or kind in _TEST_STATEMENTS:
                word = Word(raw=self.text(child), value=None, features=frozenset({"unknown_node"}))
            else:
                word = evaluate_word(child, _ignore, self.text)
            leaves.words.append(word)
            leaves.spans.append((child.start_byte, child.end_byte))

    def _test_parts(self, node: tree_sitter.Node, operators: list[str], words: list[Word]) -> None:
        for child in node.children:
            kind = kind_of(child)
            if kind in ("binary_expression", "unary_expression", "parenthesized_expression"):
                before = len(words)
                self._test_parts(child, operators, words)
                ops = [
                    self.text(c) for c in child.children if kind_of(c) == "test_operator" or not c.is_named
                ]
                if any(op in _ARITH_TEST_OPS for op in ops):
                    self._construct("test_arithmetic", child, operators=ops, words=words[before:])
                if any(op in ("-v", "-R") for op in ops):
                    self._construct("test_variable", child, operators=ops, words=words[before:])
            elif kind == "test_operator":
                operators.append(self.text(child))
            elif not child.is_named:
                if kind not in ("[[", "]]", "[", "]"):
                    operators.append(kind)
            elif kind in ("regex", "extglob_pattern"):
                # Matched, never executed; a `$(`/`$[`/backtick inside is refused as unknown syntax.
                text = self.text(child)
                if "<(" in text or ">(" in text:
                    # The grammar reads `<(…)` here as pattern text; bash runs it (a process
                    # substitution, even glued: `a<(…)`, `x|<(…)`, `@(<(…))`): the commands inside
                    # would be in no part, so no rule could see them.
                    self.syntax_errors.append(
                        f"{text!r}: the grammar reads `<(`/`>(` in a [[ ]] pattern as text, bash runs it "
                        "as a process substitution; quote the pattern in a variable ([[ x =~ $re ]])"
                    )
                unsafe = "$(" in text or "`" in text or "${" in text or "$[" in text or "<(" in text or ">(" in text
                words.append(
                    Word(
                        raw=text,
                        value=None if unsafe else text,
                        features=frozenset({"unknown_node"} if unsafe else ()),
                    )
                )
            elif kind in _TEST_STATEMENTS:
                # `[ a 2> f ]`, `[ > f ]`: the grammar reads a redirected statement inside the test;
                # bash opens the file. Planned as such (its writes seen), never read-only.
                self.visit(child)
                words.append(Word(raw=self.text(child), value=None, features=frozenset({"unknown_node"})))
            else:
                words.append(self.word(child))

    def h_if(self, node: tree_sitter.Node) -> None:
        self._construct(kind_of(node).removesuffix("_statement").removesuffix("_clause"), node)
        self._sequence(node)

    def h_loop(self, node: tree_sitter.Node) -> None:
        keyword = kind_of(node.children[0]) if node.children else "while"
        kind = _LOOP_KINDS.get(keyword, keyword)
        words: list[Word] = []
        name = None
        for child in node.children:
            if kind_of(child) == "variable_name":
                name = self.text(child)
            elif kind_of(child) == "do_group" or kind_of(child) in _REDIRECT_KINDS:
                continue
            elif child.is_named and kind in ("for", "select"):
                words.append(self.word(child))
        self._construct(kind, node, words=words, name=name)
        self.context.append(kind)
        try:
            for child in node.children:
                if kind_of(child) == "do_group" or (kind in ("while", "until") and child.is_named):
                    self.visit(child)
                elif kind_of(child) in _REDIRECT_KINDS:
                    self.redirects_of(child)
        finally:
            self.context.pop()

    def h_c_for(self, node: tree_sitter.Node) -> None:
        self._construct("c_for", node)
        self.dynamic = True
        for child in node.children:
            if kind_of(child) == "do_group":
                self.visit(child)
            elif child.is_named:
                self._scan(child)

    def h_case(self, node: tree_sitter.Node) -> None:
        words: list[Word] = []
        for child in node.children:
            if kind_of(child) == "case_item":
                for item_child in child.children:
                    if (
                        item_child.is_named
                        and kind_of(item_child) not in ("comment",)
                        and _is_statement(item_child)
                    ):
                        self.context.append("case")
                        try:
                            self.visit(item_child)
                        finally:
                            self.context.pop()
                    elif item_child.is_named:
                        words.append(self.word(item_child))
                    elif kind_of(item_child) == "&":  # `x) ls &;;` runs a background job
                        self.operators.append("&")
                    elif kind_of(item_child) in _AFTER_BARE_TIME:
                        self._check_bare_time(kind_of(item_child))
            elif child.is_named:
                words.append(self.word(child))
        self._construct("case", node, words=words)

    def h_function(self, node: tree_sitter.Node) -> None:
        name = None
        for child in node.children:
            if kind_of(child) == "word" and name is None:
                name = self.text(child)
        self.functions.append(name or "")
        self._construct("function", node, name=name)
        self.context.append(f"function:{name}")
        redirects: list[Redirect] = []
        start = len(self.commands)
        try:
            for child in node.children:
                if kind_of(child) in _REDIRECT_KINDS:
                    redirects.extend(self.redirects_of(child))
                elif child.is_named and kind_of(child) != "word":
                    self.visit(child)
            if redirects:
                # Every call runs the body with them, as a group's (`f() { psql db; } < s.sql; f`:
                # psql reads the file; round 34), and opens the files (a part of its own too).
                for command in self.commands[start:]:
                    command.redirects = command.redirects + redirects
                self.commands.append(PlanCommand([], [], redirects, list(self.context), None))
        finally:
            self.context.pop()

    def h_declaration(self, node: tree_sitter.Node) -> None:
        keyword = kind_of(node.children[0]) if node.children else "declare"
        words: list[Word] = []
        argv: list[Word] = [Word(keyword, keyword, NO_FEATURES)]
        assignments: list[Assignment] = []
        for child in node.children:
            if kind_of(child) == "variable_assignment":
                assignment = self.assignment(child)
                assignments.append(assignment)
                value = assignment.value
                static = value is not None and value.value is not None and "[" not in assignment.name
                argv.append(
                    Word(
                        assignment.raw,
                        f"{assignment.name}={value.value}" if static and value is not None else None,
                        NO_FEATURES if static else frozenset({"unknown_node"}),
                    )
                )
            elif child.is_named:
                if kind_of(child) == "variable_name":
                    self.cut(child)
                    name = self.text(child)
                    word = Word(name, name, NO_FEATURES)
                else:
                    word = self.word(child)
                words.append(word)
                argv.append(word)
        self._construct(
            keyword if kind_of(node) == "declaration_command" else "unset", node, words=words, name=keyword
        )
        # The declaration is a part of its own: name = the keyword, its assignments are its env names.
        self.commands.append(PlanCommand(argv, assignments, [], list(self.context), None))

    def h_ignore(self, node: tree_sitter.Node) -> None:
        return

    def h_comment(self, node: tree_sitter.Node) -> None:
        """A comment starts only where bash starts a word (``ls \\ #; rm x`` runs ``rm x``)."""
        if not starts_word(self.source, node.start_byte, self.word_end):
            self.syntax_errors.append(
                f"the parser reads {self.text(node)!r} as a comment, bash as a word (an escaped "
                "blank before it): quote the word"
            )


def _is_statement(node: tree_sitter.Node) -> bool:
    return kind_of(node) in _HANDLERS and kind_of(node) not in ("word", "concatenation")


_HANDLERS: Final = {
    "program": Planner.h_sequence,
    "list": Planner.h_sequence,
    "do_group": Planner.h_sequence,
    "else_clause": Planner.h_if,
    "elif_clause": Planner.h_if,
    "if_statement": Planner.h_if,
    "pipeline": Planner.h_pipeline,
    "redirected_statement": Planner.h_redirected,
    "command": Planner.h_command,
    "variable_assignment": Planner.h_assignment,
    "variable_assignments": Planner.h_sequence,
    "subshell": Planner.h_subshell,
    "compound_statement": Planner.h_compound,
    "negated_command": Planner.h_negated,
    "test_command": Planner.h_test,
    "while_statement": Planner.h_loop,
    "for_statement": Planner.h_loop,
    "c_style_for_statement": Planner.h_c_for,
    "case_statement": Planner.h_case,
    "function_definition": Planner.h_function,
    "declaration_command": Planner.h_declaration,
    "unset_command": Planner.h_declaration,
    "comment": Planner.h_comment,
}


#: Wrappers whose script string bash itself reads (every other shell may read it otherwise).
_BASH_SCRIPT_RUNNERS: Final = frozenset({"bash", "eval"})


def _bash_only(plan: CommandPlan) -> str | None:
    """bash syntax in ``plan`` that a POSIX shell (dash, busybox ash) reads as something else, or None.

    ``[[`` is a command to dash and ash, so ``||``, ``&&``, ``>`` and ``<`` inside it are operators
    and redirections: ``sh -c '[[ a || sh ]]'`` runs the file ``]]``, ``sh -c '[[ a > f ]]'``
    truncates ``f``. ``&>`` is ``&`` then ``>`` to dash (a background job), ``((`` two subshells,
    ``function`` a command name; ``<<<``, ``|&``, ``;&``, ``>&word``, arrays, ``$'…'``, ``$"…"``,
    ``$[…]``, brace expansion and process substitution are another syntax or other words. Each is
    bash's own: where another shell runs the text, its presence makes the text unread.
    """
    for construct in plan.constructs:
        kind = construct.kind
        if kind == "test":
            return "`[[ ]]` (a POSIX sh runs `[[` as a command: what is inside becomes operators and redirections)"
        if kind in _BASH_CONSTRUCTS:
            return f"bash's `{kind}` syntax (a POSIX sh reads it as other commands)"
        if kind == "function" and construct.text.lstrip().startswith("function"):
            return "the `function` keyword (a command name to a POSIX sh)"
        if kind == "case" and _CASE_FALLTHROUGH.search(construct.text) is not None:
            return "`;&` or `;;&` (not POSIX case syntax)"
    for redirect in plan.redirects:
        if redirect.op in ("&>", "&>>") or redirect.kind == "herestring":
            return f"{redirect.op} (a POSIX sh reads it as other operators)"
        if redirect.op in (">&", "<&") and not _fd_word(redirect.target):
            return f"{redirect.op} to a file (bash's form; a POSIX sh reads a descriptor number)"
    if "|&" in plan.operators:
        return "`|&` (not POSIX pipe syntax)"
    for substitution in plan.substitutions:
        if substitution.kind in ("process_in", "process_out"):
            return "process substitution (bash's `<(…)`/`>(…)`)"
    for assignment in plan.assignments:
        if _ARRAY_ASSIGNMENT.search(assignment.raw) is not None:
            return "an array assignment (bash's; a command name to a POSIX sh)"
    for command in plan.commands:
        if command.name in _BASH_KEYWORD_COMMANDS:
            return f"bash's `{command.name}` keyword"
        for assignment in command.assignments:
            if _ARRAY_ASSIGNMENT.search(assignment.raw) is not None:
                return "an array assignment (bash's; a command name to a POSIX sh)"
        for word in command.argv:
            why = _bash_word(word)
            if why is not None:
                return why
        for redirect in command.redirects:
            if redirect.target is not None:
                why = _bash_word(redirect.target)
                if why is not None:
                    return why
    for construct in plan.constructs:
        for word in construct.words:
            why = _bash_word(word)
            if why is not None:
                return why
    return None


#: Constructs only bash has (a POSIX sh parses their text as subshells, commands and redirections).
_BASH_CONSTRUCTS: Final = frozenset(
    {"arithmetic", "c_for", "select", "test_arithmetic", "test_variable", "coproc"}
)
#: Commands whose name is a bash keyword (the planner reads some as commands).
_BASH_KEYWORD_COMMANDS: Final = frozenset({"coproc", "function", "select", "[[", "]]"})
#: Word features of bash-only expansions (see `Word.features`).
_BASH_WORD_FEATURES: Final = frozenset({"ansi_c", "translated", "brace", "process_substitution"})
_CASE_FALLTHROUGH: Final = re.compile(r";;?&")
_ARRAY_ASSIGNMENT: Final = re.compile(r"^[^=]*(?:\[|\+?=\()")


def _fd_word(word: Word | None) -> bool:
    """Whether a ``>&``/``<&`` target is a descriptor (or ``-``), as POSIX reads it."""
    value = word.value if word is not None else None
    return value is not None and (value == "-" or is_fd_number(value.rstrip("-")))


def _bash_word(word: Word) -> str | None:
    if not _BASH_WORD_FEATURES.isdisjoint(word.features):
        return f"bash's expansion in {word.raw!r} (`$'…'`, `$\"…\"`, `{{a,b}}`, `<(…)`: other words to a POSIX sh)"
    if "$[" in word.raw:
        return f"bash's `$[…]` in {word.raw!r}"
    return None


def bash_only(plan: CommandPlan) -> str | None:
    """Public name of `_bash_only`: the analysis of a command for a POSIX sh (`analyze(..., "sh")`)."""
    return _bash_only(plan)


def _ignore(_node: tree_sitter.Node) -> None:
    return None


def _argument_nodes(redirect: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Words the grammar hangs off a redirection that bash reads as its command's arguments: a file
    redirection's targets after the first (``2>/dev/null push``), a here-document's words before its
    body and before any operator (``<<EOF push``), and those of the redirections nested in it."""
    kind = kind_of(redirect)
    if kind == "file_redirect":
        targets = [c for c in redirect.children if c.is_named and kind_of(c) != "file_descriptor"]
        if any(kind_of(c) in _CLOSE_OPS for c in redirect.children):
            return targets  # `2>&- push`: closing a descriptor takes no target
        # `<> f`: the grammar reads `<` and an error; the redirection is refused as it was (`redirect`).
        return targets[1:] if targets and kind_of(targets[0]) != "ERROR" else []
    if kind != "heredoc_redirect":
        return []
    found: list[tree_sitter.Node] = []
    for child in redirect.children:
        ctype = kind_of(child)
        if ctype in _STATEMENT_OPS or ctype in ("heredoc_body", "heredoc_end", "ERROR"):
            break
        if ctype == "file_redirect":
            found += _argument_nodes(child)
        elif ctype in _WORD_NODES or ctype in _SUBSTITUTION_NODES:
            found.append(child)
    return found


def _last_simple(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The simple command a statement's redirections follow (`a | b 2>x`: b), or None."""
    while kind_of(node) in ("pipeline", "list", "negated_command") and node.named_children:
        node = node.named_children[-1]
    return node if kind_of(node) == "command" else None


def build_plan(
    root: tree_sitter.Node, source: bytes, text: str | None = None, fast_scripts: bool = True
) -> CommandPlan:
    """Plan a parsed tree of ``source`` (``text``: the same source as str, when the caller has it;
    ``fast_scripts=False``: parse every script string, for tests comparing with the fast path)."""
    planner = Planner(source, text=text, fast_scripts=fast_scripts)
    planner.visit(root)
    return planner.plan()


_SHLEX_UNSAFE: Final = re.compile(r"[^\w@%+=:,./-]", re.ASCII).search


def _operand_assignment(word: Word) -> Assignment:
    """``env NAME=VALUE``'s (``sudo``'s) operand as the assignment it is: ``raw`` spelt as a prefix
    assignment would be (``NAME=`` and the value shell-quoted; a dynamic word as written)."""
    value = word.value
    if value is None:  # `NAME="…"` (`read_env` takes no other dynamic word as an assignment)
        name, _, rest = word.raw.partition("=")
        return Assignment(name, word.raw, Word(rest, None, word.features))
    name, _, rest = value.partition("=")
    # shlex.quote's output (not imported: `shellrt classify` loads this module, round 50's budget)
    quoted = rest if not rest or _SHLEX_UNSAFE(rest) is None else "'" + rest.replace("'", "'\"'\"'") + "'"
    return Assignment(name, f"{name}={quoted}", Word(quoted or "''", rest, word.features))


def _runs_dynamic_word(name: str, values: list[str | None]) -> bool:
    """Whether `unwrap` gave up because the command or script it runs is a dynamic word (None).

    A shell given a script *file* (``bash build.sh $x``) is not such a case: it runs that file.
    """
    if name not in SHELLS:
        return True  # a wrapper gives up only on a dynamic word where its command or script is
    i = 1
    while i < len(values):
        value = values[i]
        if value is None:
            return True  # an option, the script or the script file: not known
        if value in ("-o", "+o", "-O", "+O"):
            if i + 1 < len(values) and values[i + 1] is None:
                return True  # the option's value may be several words: where the script is, unknown
            i += 2
            continue
        if value.startswith("-") and not value.startswith("--") and "c" in value[1:]:
            if i + 1 >= len(values):
                return False
            script = values[i + 1]
            # Dynamic, or more options before the command string (`bash -c -x 'cmd'`): see `unwrap`.
            return script is None or script.startswith(("-", "+")) or "o" in value or "O" in value
        if not value.startswith(("-", "+")):
            return False
        i += 1
    return False
