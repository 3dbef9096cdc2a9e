"""The plan and its building blocks (words, redirections, constructs, simple commands), and subcommands.

Plain dataclasses with no parser objects inside: a plan can be logged,
serialised and compared, and the judgement never needs tree-sitter to reason
about it. The planner builds several per command, so each class has a hand-written
``__init__`` (``init=False``): plain attribute stores, which mypyc compiles to
native code (see ``setup.py``) and which also beats a frozen dataclass's
``object.__setattr__`` calls when interpreted. They are not frozen for the same
reason; analysis results are shared through the memo cache, so treat every node
as immutable. Every ``__init__`` argument has a default: pydantic (validating a
``CommandAnalysis``) creates compiled instances through ``__new__``, which for a
mypyc class runs ``__init__`` with no arguments, and then sets the fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Assignment", "CommandPlan", "Construct", "Heredoc", "PlanCommand", "Redirect", "Subcommand", "Substitution",
    "Word", "is_fd_number",
]

_NO_FEATURES: frozenset[str] = frozenset()

RedirectKind = Literal["file", "heredoc", "herestring"]
SubstitutionKind = Literal["command", "backtick", "process_in", "process_out"]


def is_fd_number(value: str) -> bool:
    """Whether bash reads ``value`` as a file descriptor number: ASCII digits only.

    ``str.isdigit`` also accepts ``²``; bash reads ``>&²`` as ``&>²`` (a file write).
    """
    return value.isascii() and value.isdigit()


@dataclass(init=False, slots=True)
class Word:
    """One shell word: its source text and, when bash would not expand it, its value."""

    raw: str
    #: The value after quote removal, or None when the word is dynamic.
    value: str | None
    #: Features found while evaluating: "parameter", "simple_parameter",
    #: "command_substitution", "process_substitution", "arithmetic",
    #: "pure_arithmetic", "ansi_c", "translated", "brace", "brace_char", "glob", "flag_glob",
    #: "backslash", "quoted", "tilde", "unknown_node".
    features: frozenset[str]

    def __init__(self, raw: str = "", value: str | None = None, features: frozenset[str] = _NO_FEATURES) -> None:
        self.raw = raw
        self.value = value
        self.features = features

    @property
    def static(self) -> bool:
        """True when bash yields exactly ``value`` for this word."""
        return self.value is not None


@dataclass(init=False, slots=True)
class Assignment:
    """``NAME=value`` (standalone, as an env prefix, or in a declaration)."""

    name: str
    raw: str
    value: Word | None

    def __init__(self, name: str = "", raw: str = "", value: Word | None = None) -> None:
        self.name = name
        self.raw = raw
        self.value = value


@dataclass(init=False, slots=True)
class Redirect:
    """A redirection: ``[fd]op target`` (here-docs keep their body separately)."""

    fd: str | None
    op: str
    target: Word | None
    kind: RedirectKind

    def __init__(self, fd: str | None = None, op: str = "", target: Word | None = None,
                 kind: RedirectKind = "file") -> None:
        self.fd = fd
        self.op = op
        self.target = target
        self.kind = kind


@dataclass(init=False, slots=True)
class Heredoc:
    """A here-document; an unquoted delimiter means the body is expanded."""

    delimiter: str
    expands: bool
    body: str
    #: Parameter/arithmetic expansions in an expanding body (judged like echo arguments).
    expansions: list[Word]

    def __init__(self, delimiter: str = "", expands: bool = False, body: str = "",
                 expansions: list[Word] | None = None) -> None:
        self.delimiter = delimiter
        self.expands = expands
        self.body = body
        self.expansions = [] if expansions is None else expansions


@dataclass(init=False, slots=True)
class Substitution:
    """``$(...)``, backticks, ``<(...)`` or ``>(...)``; the commands inside are planned too."""

    kind: SubstitutionKind
    text: str

    def __init__(self, kind: SubstitutionKind = "command", text: str = "") -> None:
        self.kind = kind
        self.text = text


@dataclass(init=False, slots=True)
class Construct:
    """A compound construct: subshell, group, if, loop, case, function, test, ..."""

    kind: str
    text: str
    #: For tests (``[[ ]]``/``[ ]``): operators and operand words; for loops: the loop words.
    operators: list[str]
    words: list[Word]
    name: str | None

    def __init__(self, kind: str = "", text: str = "", operators: list[str] | None = None, words: list[Word] | None = None,
                 name: str | None = None) -> None:
        self.kind = kind
        self.text = text
        self.operators = [] if operators is None else operators
        self.words = [] if words is None else words
        self.name = name


@dataclass(init=False, slots=True)
class PlanCommand:
    """One simple command: env-prefix assignments, argv words and its redirections."""

    argv: list[Word]
    assignments: list[Assignment]
    redirects: list[Redirect]
    #: Enclosing constructs, outermost first (e.g. ["pipeline", "command_substitution"]).
    context: list[str]
    #: Set when this command was unwrapped from a wrapper (``timeout 5 rm x`` -> ``rm x``).
    wrapped_by: str | None
    #: The command runs in a background job (``&``).
    background: bool

    def __init__(self, argv: list[Word] | None = None, assignments: list[Assignment] | None = None,
                 redirects: list[Redirect] | None = None, context: list[str] | None = None,
                 wrapped_by: str | None = None, background: bool = False) -> None:
        self.argv = [] if argv is None else argv
        self.assignments = [] if assignments is None else assignments
        self.redirects = [] if redirects is None else redirects
        self.context = [] if context is None else context
        self.wrapped_by = wrapped_by
        self.background = background

    @property
    def name(self) -> str | None:
        """The static command name, if any."""
        return self.argv[0].value if self.argv else None

    @property
    def text(self) -> str:
        """Normalised text: static values joined by spaces, raw text for dynamic words."""
        return " ".join([w.value if w.value is not None else w.raw for w in self.argv])


@dataclass(init=False, slots=True)
class CommandPlan:
    """Everything the parser found, flattened into lists (document order)."""

    commands: list[PlanCommand]
    operators: list[str]
    redirects: list[Redirect]
    substitutions: list[Substitution]
    constructs: list[Construct]
    heredocs: list[Heredoc]
    functions: list[str]
    assignments: list[Assignment]
    cd_targets: list[str]
    #: Node kinds the planner does not model (never read-only when non-empty).
    unsupported: list[str]
    #: Anything whose meaning depends on run-time values (expansions, substitutions, ...).
    dynamic: bool
    #: Bash syntax errors the grammar accepts (``ls ;; pwd``): the command does not run as planned.
    syntax_errors: list[str]

    def __init__(self, commands: list[PlanCommand] | None = None, operators: list[str] | None = None,
                 redirects: list[Redirect] | None = None, substitutions: list[Substitution] | None = None,
                 constructs: list[Construct] | None = None, heredocs: list[Heredoc] | None = None,
                 functions: list[str] | None = None, assignments: list[Assignment] | None = None,
                 cd_targets: list[str] | None = None, unsupported: list[str] | None = None,
                 dynamic: bool = False, syntax_errors: list[str] | None = None) -> None:
        self.commands = [] if commands is None else commands
        self.operators = [] if operators is None else operators
        self.redirects = [] if redirects is None else redirects
        self.substitutions = [] if substitutions is None else substitutions
        self.constructs = [] if constructs is None else constructs
        self.heredocs = [] if heredocs is None else heredocs
        self.functions = [] if functions is None else functions
        self.assignments = [] if assignments is None else assignments
        self.cd_targets = [] if cd_targets is None else cd_targets
        self.unsupported = [] if unsupported is None else unsupported
        self.dynamic = dynamic
        self.syntax_errors = [] if syntax_errors is None else syntax_errors


@dataclass(init=False, slots=True)
class Subcommand:
    """One part of a command that a permission rule must match on its own.

    Simple commands, standalone assignments and declarations (``export X=1``), and
    the commands wrappers and ``bash -c`` scripts run (``via`` names the wrapper).
    """

    text: str
    argv: list[str]
    #: Normalised static command name: the basename of the command word after unwrapping
    #: env/command/nice/timeout/nohup/stdbuf/time (``/bin/rm`` -> ``rm``, ``\\rm`` -> ``rm``); a path
    #: outside the system bin directories keeps its spelling (``./ls`` is ``./ls``, never ``ls``);
    #: "" when it is not static (expansions, globs, ``eval``, ``xargs``, ``busybox``, a bare assignment).
    name: str
    static_name: bool
    #: Variables this part assigns: env prefixes (``X=1 cmd``, ``env X=1 cmd``), assignments, declarations.
    env_names: list[str]
    #: The part runs in a background job (``&``).
    background: bool
    #: Output redirection targets as written (not /dev/null, not fd duplications); "" = not static.
    writes: list[str]
    #: Paths the part may read (input redirections, file operands and file option values of
    #: modelled programs); "" = a path that is not static.
    reads: list[str]
    #: The program walks the directories it is given (grep -r, find, ls -R, du, rg, fd, tree, ...).
    recursive: bool
    #: The wrapper or shell this part was unwrapped from ("" when it is written directly).
    via: str
    #: Each output redirection whose target is known only at run time, as written (``> "$d/ls"``):
    #: ``text`` holds no redirection, and a "" in ``writes`` says nothing of the target's static pieces,
    #: which name where a later program may find it (red team, round 45).
    write_words: list[str]

    def __init__(self, text: str = "", argv: list[str] | None = None, name: str = "", static_name: bool = False,
                 env_names: list[str] | None = None, background: bool = False, writes: list[str] | None = None,
                 reads: list[str] | None = None, recursive: bool = False, via: str = "",
                 write_words: list[str] | None = None) -> None:
        self.text = text
        self.argv = [] if argv is None else argv
        self.name = name
        self.static_name = static_name
        self.env_names = [] if env_names is None else env_names
        self.background = background
        self.writes = [] if writes is None else writes
        self.reads = [] if reads is None else reads
        self.recursive = recursive
        self.via = via
        self.write_words = [] if write_words is None else write_words
