"""Plain pydantic models for a parsed command plan and its verdict.

No parser objects live here: a plan can be logged, serialised and compared, and
the judgement code never needs tree-sitter to reason about it.
"""

from __future__ import annotations

from typing import Any, Literal

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
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Word(BaseModel):
    """One shell word: its source text and, when bash would not expand it, its value."""

    model_config = _FROZEN

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


class Assignment(BaseModel):
    """``NAME=value`` (standalone, as an env prefix, or in a declaration)."""

    model_config = _FROZEN

    name: str
    raw: str
    value: Word | None = None


class Redirect(BaseModel):
    """A redirection: ``[fd]op target`` (here-docs keep their body separately)."""

    model_config = _FROZEN

    fd: str | None
    op: str
    target: Word | None
    kind: Literal["file", "heredoc", "herestring"] = "file"


class Heredoc(BaseModel):
    """A here-document; an unquoted delimiter means the body is expanded."""

    model_config = _FROZEN

    delimiter: str
    expands: bool
    body: str
    #: Parameter/arithmetic expansions in an expanding body (judged like echo arguments).
    expansions: list[Word] = Field(default_factory=list)


class Substitution(BaseModel):
    """``$(...)``, backticks, ``<(...)`` or ``>(...)``; the commands inside are planned too."""

    model_config = _FROZEN

    kind: Literal["command", "backtick", "process_in", "process_out"]
    text: str


class Construct(BaseModel):
    """A compound construct: subshell, group, if, loop, case, function, test, ..."""

    model_config = _FROZEN

    kind: str
    text: str
    #: For tests (``[[ ]]``/``[ ]``): operators and operand words; for loops: the loop words.
    operators: list[str] = Field(default_factory=list)
    words: list[Word] = Field(default_factory=list)
    name: str | None = None


class PlanCommand(BaseModel):
    """One simple command: env-prefix assignments, argv words and its redirections."""

    model_config = _FROZEN

    argv: list[Word]
    assignments: list[Assignment] = Field(default_factory=list)
    redirects: list[Redirect] = Field(default_factory=list)
    #: Enclosing constructs, outermost first (e.g. ["pipeline", "command_substitution"]).
    context: list[str] = Field(default_factory=list)
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
