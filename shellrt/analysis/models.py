"""Plain pydantic models for a parsed command plan and its verdict.

No parser objects live here: a plan can be logged, serialised and compared, and
the judgement code never needs tree-sitter to reason about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Assignment",
    "CommandAnalysis",
    "CommandPlan",
    "Construct",
    "Heredoc",
    "PlanCommand",
    "Redirect",
    "Subcommand",
    "Substitution",
    "Word",
    "build",
    "new_analysis",
    "new_command",
    "new_construct",
    "new_plan",
    "new_redirect",
    "new_subcommand",
    "new_word",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word: its source text and, when bash would not expand it, its value."""

    raw: str
    #: The value after quote removal, or None when the word is dynamic.
    value: str | None
    #: Features found while evaluating: "parameter", "simple_parameter",
    #: "command_substitution", "process_substitution", "arithmetic",
    #: "pure_arithmetic", "ansi_c", "translated", "brace", "brace_char", "glob", "flag_glob",
    #: "backslash", "quoted", "tilde", "unknown_node".
    features: frozenset[str] = frozenset()

    @property
    def static(self) -> bool:
        """True when bash yields exactly ``value`` for this word."""
        return self.value is not None


_new_object = object.__new__
_set_raw = Word.__dict__["raw"].__set__
_set_value = Word.__dict__["value"].__set__
_set_features = Word.__dict__["features"].__set__


def new_word(raw: str, value: str | None, features: frozenset[str]) -> Word:
    """``Word(raw, value, features)`` without the frozen dataclass ``__init__`` (about twice as fast).

    The planner builds a Word per argument; the result is an ordinary frozen Word.
    """
    word: Word = _new_object(Word)
    _set_raw(word, raw)
    _set_value(word, value)
    _set_features(word, features)
    return word


@dataclass(frozen=True, slots=True)
class Assignment:
    """``NAME=value`` (standalone, as an env prefix, or in a declaration)."""

    name: str
    raw: str
    value: Word | None = None


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: ``[fd]op target`` (here-docs keep their body separately)."""

    fd: str | None
    op: str
    target: Word | None
    kind: Literal["file", "heredoc", "herestring"] = "file"


@dataclass(frozen=True, slots=True)
class Heredoc:
    """A here-document; an unquoted delimiter means the body is expanded."""

    delimiter: str
    expands: bool
    body: str
    #: Parameter/arithmetic expansions in an expanding body (judged like echo arguments).
    expansions: list[Word] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Substitution:
    """``$(...)``, backticks, ``<(...)`` or ``>(...)``; the commands inside are planned too."""

    kind: Literal["command", "backtick", "process_in", "process_out"]
    text: str


@dataclass(frozen=True, slots=True)
class Construct:
    """A compound construct: subshell, group, if, loop, case, function, test, ..."""

    kind: str
    text: str
    #: For tests (``[[ ]]``/``[ ]``): operators and operand words; for loops: the loop words.
    operators: list[str] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    name: str | None = None


@dataclass(frozen=True, slots=True)
class PlanCommand:
    """One simple command: env-prefix assignments, argv words and its redirections."""

    argv: list[Word]
    assignments: list[Assignment] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    #: Enclosing constructs, outermost first (e.g. ["pipeline", "command_substitution"]).
    context: list[str] = field(default_factory=list)
    #: Set when this command was unwrapped from a wrapper (``timeout 5 rm x`` -> ``rm x``).
    wrapped_by: str | None = None

    @property
    def name(self) -> str | None:
        """The static command name, if any."""
        return self.argv[0].value if self.argv else None

    @property
    def text(self) -> str:
        """Normalised text: static values joined by spaces, raw text for dynamic words."""
        return " ".join(w.value if w.value is not None else w.raw for w in self.argv)


_set_argv = PlanCommand.__dict__["argv"].__set__
_set_assignments = PlanCommand.__dict__["assignments"].__set__
_set_redirects = PlanCommand.__dict__["redirects"].__set__
_set_context = PlanCommand.__dict__["context"].__set__
_set_wrapped_by = PlanCommand.__dict__["wrapped_by"].__set__


def new_command(argv: list[Word], assignments: list[Assignment], redirects: list[Redirect], context: list[str],
                wrapped_by: str | None) -> PlanCommand:
    """``PlanCommand(...)`` without the frozen dataclass ``__init__`` (see :func:`new_word`)."""
    command: PlanCommand = _new_object(PlanCommand)
    _set_argv(command, argv)
    _set_assignments(command, assignments)
    _set_redirects(command, redirects)
    _set_context(command, context)
    _set_wrapped_by(command, wrapped_by)
    return command


_set_fd = Redirect.__dict__["fd"].__set__
_set_op = Redirect.__dict__["op"].__set__
_set_target = Redirect.__dict__["target"].__set__
_set_kind = Redirect.__dict__["kind"].__set__


def new_redirect(fd: str | None, op: str, target: Word | None,
                 kind: Literal["file", "heredoc", "herestring"]) -> Redirect:
    """``Redirect(...)`` without the frozen dataclass ``__init__`` (see :func:`new_word`)."""
    redirect: Redirect = _new_object(Redirect)
    _set_fd(redirect, fd)
    _set_op(redirect, op)
    _set_target(redirect, target)
    _set_kind(redirect, kind)
    return redirect


_set_construct_kind = Construct.__dict__["kind"].__set__
_set_construct_text = Construct.__dict__["text"].__set__
_set_construct_operators = Construct.__dict__["operators"].__set__
_set_construct_words = Construct.__dict__["words"].__set__
_set_construct_name = Construct.__dict__["name"].__set__


def new_construct(kind: str, text: str, operators: list[str], words: list[Word], name: str | None) -> Construct:
    """``Construct(...)`` without the frozen dataclass ``__init__`` (see :func:`new_word`)."""
    construct: Construct = _new_object(Construct)
    _set_construct_kind(construct, kind)
    _set_construct_text(construct, text)
    _set_construct_operators(construct, operators)
    _set_construct_words(construct, words)
    _set_construct_name(construct, name)
    return construct


class CommandPlan(BaseModel):
    """Everything the parser found, flattened into lists (document order)."""

    model_config = _FROZEN

    commands: list[PlanCommand] = Field(default_factory=list)
    operators: list[str] = Field(default_factory=list)
    redirects: list[Redirect] = Field(default_factory=list)
    substitutions: list[Substitution] = Field(default_factory=list)
    constructs: list[Construct] = Field(default_factory=list)
    heredocs: list[Heredoc] = Field(default_factory=list)
    functions: list[str] = Field(default_factory=list)
    assignments: list[Assignment] = Field(default_factory=list)
    cd_targets: list[str] = Field(default_factory=list)
    #: Node kinds the planner does not model (never read-only when non-empty).
    unsupported: list[str] = Field(default_factory=list)
    #: Anything whose meaning depends on run-time values (expansions, substitutions, ...).
    dynamic: bool = False


class Subcommand(BaseModel):
    """One simple command a permission rule must match on its own."""

    model_config = _FROZEN

    text: str
    argv: list[str]


class CommandAnalysis(BaseModel):
    """The verdict on one command string. ``reasons`` always explains it."""

    model_config = _FROZEN

    command: str
    shell: str
    parse_ok: bool
    read_only: bool
    concurrency_safe: bool
    destructive: bool
    subcommands: list[Subcommand] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    cd_targets: list[str] = Field(default_factory=list)
    write_targets: list[str] = Field(default_factory=list)
    writes_unknown: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    plan: CommandPlan | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The wire form used by ``shellrt classify``: subcommands as plain strings."""
        return {
            "command": self.command,
            "shell": self.shell,
            "parse_ok": self.parse_ok,
            "read_only": self.read_only,
            "concurrency_safe": self.concurrency_safe,
            "destructive": self.destructive,
            "subcommands": [s.text for s in self.subcommands],
            "reasons": list(self.reasons),
            "cd_targets": list(self.cd_targets),
            "write_targets": list(self.write_targets),
            "writes_unknown": self.writes_unknown,
            "env": dict(self.env),
        }


_DEFAULTS: dict[type[BaseModel], tuple[dict[str, Any], tuple[str, ...]]] = {}


def build(cls: type[_M], **values: Any) -> _M:
    """Construct a trusted pydantic model without validation, faster than ``model_construct``.

    The planner builds tens of models per command; validation and pydantic's
    generic construct path dominated the profile. Values come from our own code,
    so they are trusted; missing fields get their defaults (fresh lists).
    """
    info = _DEFAULTS.get(cls)
    if info is None:
        plain: dict[str, Any] = {}
        factory_names: list[str] = []
        for name, field_info in cls.model_fields.items():
            if field_info.default_factory is not None:
                factory_names.append(name)
            elif not field_info.is_required():
                plain[name] = field_info.default
        info = (plain, tuple(factory_names))
        _DEFAULTS[cls] = info
    plain, factories = info
    if plain:
        data = plain.copy()
        data.update(values)
    else:
        data = values
    for name in factories:
        if name not in data:
            data[name] = []
    obj = _new(cls)
    # The slot descriptors of BaseModel directly (object.__setattr__ looks each one up by name).
    _set_dict(obj, data)
    _set_fields_set(obj, set())
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


# Constructors for the models built on every analysis: one dict literal, no per-field defaults
# lookup (``build`` is the general form). Values are trusted, as for ``build``.


def new_plan(commands: list[PlanCommand], operators: list[str], redirects: list[Redirect],
             substitutions: list[Substitution], constructs: list[Construct], heredocs: list[Heredoc],
             functions: list[str], assignments: list[Assignment], cd_targets: list[str], unsupported: list[str],
             dynamic: bool) -> CommandPlan:
    """``CommandPlan(...)`` without validation."""
    plan: CommandPlan = _new(CommandPlan)
    _set_dict(plan, {
        "commands": commands, "operators": operators, "redirects": redirects, "substitutions": substitutions,
        "constructs": constructs, "heredocs": heredocs, "functions": functions, "assignments": assignments,
        "cd_targets": cd_targets, "unsupported": unsupported, "dynamic": dynamic,
    })
    _set_fields_set(plan, set())
    _set_extra(plan, None)
    _set_private(plan, None)
    return plan


def new_subcommand(text: str, argv: list[str]) -> Subcommand:
    """``Subcommand(text=..., argv=...)`` without validation."""
    sub: Subcommand = _new(Subcommand)
    _set_dict(sub, {"text": text, "argv": argv})
    _set_fields_set(sub, set())
    _set_extra(sub, None)
    _set_private(sub, None)
    return sub


def new_analysis(command: str, shell: str, parse_ok: bool, read_only: bool, destructive: bool,
                 subcommands: list[Subcommand], reasons: list[str], cd_targets: list[str],
                 write_targets: list[str], writes_unknown: bool, env: dict[str, str],
                 plan: CommandPlan | None) -> CommandAnalysis:
    """``CommandAnalysis(...)`` without validation; ``concurrency_safe`` is ``read_only``."""
    analysis: CommandAnalysis = _new(CommandAnalysis)
    _set_dict(analysis, {
        "command": command, "shell": shell, "parse_ok": parse_ok, "read_only": read_only,
        "concurrency_safe": read_only, "destructive": destructive, "subcommands": subcommands, "reasons": reasons,
        "cd_targets": cd_targets, "write_targets": write_targets, "writes_unknown": writes_unknown, "env": env,
        "plan": plan,
    })
    _set_fields_set(analysis, set())
    _set_extra(analysis, None)
    _set_private(analysis, None)
    return analysis
