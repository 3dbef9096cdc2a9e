"""``analyze()``: parse, plan, judge and summarise one command string.

The verdict is computed as a plain dict of :class:`CommandAnalysis`' fields
(:func:`analysis_fields`), wrapped in the pydantic model by :func:`analyze`. The
model's module is imported on the first wrap, not with this one: ``shellrt
classify`` prints the fields and never builds a pydantic class (start-up, issue 22).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Final, Literal

from .arith_flow import UNKNOWN_CODE, code_texts, may_hide_code
from .effects import plan_effects
from .fastheredoc import plan_fast
from .fastquote import plan_unterminated_quote
from .git_env import GIT_BASE_ENV, PROGRAM_ENV, git_hardening_env
from .judge import judge_plan
from .nodes import CommandPlan, Subcommand
from .parse import SYNTAX_ERROR, parse_bash
from .parts import subcommands
from .plan import PlanLimitError, bash_only, build_plan

if TYPE_CHECKING:
    from .models import CommandAnalysis

__all__ = ["CACHE_SIZE", "FIELD_NAMES", "analysis_fields", "analyze", "clear_cache"]

#: Verdicts of this many recent (command, shell) pairs are memoised. The runtime
#: asks about the same command several times per tool call (read-only?
#: concurrency-safe? permission subject? description?), and analysis is pure.
#: Results are shared between callers (the CommandAnalysis is frozen, its plan and lists are not): never
#: mutate them.
CACHE_SIZE: Final = 4096
#: Longer commands are analysed every time (keeps the cache's memory bounded).
_CACHE_MAX_CHARS: Final = 2000

#: ``sh``: a POSIX shell that is not bash runs the text (an image without bash: busybox ash, dash).
#: It is read with bash's grammar, and any syntax only bash has makes it unread (`_posix_fields`).
Shell = Literal["bash", "sh", "powershell"]

#: A line continuation (an odd run of backslashes, then a newline) between two non-blank characters:
#: bash joins the two sides into one word (``r\\<newline>m`` is ``rm``), the parser splits them.
_JOINING_CONTINUATION: Final = re.compile(r"[^\s\\](?:\\\\)*\\\n\S")
#: A line that starts with an escaped blank (``\\ rm``): bash runs a command named `` rm``, the parser
#: reads the backslash and blank as a separator and joins the line to the command before it.
_ESCAPED_BLANK_LINE_START: Final = re.compile(r"\n\\[ \t]")
_ESCAPED_BLANK_REASON: Final = (
    "a line starts with a backslash and a blank: bash reads an escaped blank (part of a word), "
    "the parser joins the line to the command before it; remove the backslash"
)
_JOINING_REASON: Final = (
    "a line continuation (backslash, newline) inside a word: bash joins the two lines into one word, "
    "which this analysis cannot see; write the word on one line"
)


def analyze(command: str, shell: Shell = "bash") -> CommandAnalysis:
    """Classify ``command``: read-only, concurrency-safe, destructive, subcommands, reasons.

    Never raises for any input string; anything unexpected is not read-only.
    """
    if len(command) <= _CACHE_MAX_CHARS:
        return _cached(command, shell)
    return _analyze_uncached(command, shell)


def clear_cache() -> None:
    """Forget memoised verdicts (benchmarks measuring the cold path use this)."""
    _cached.cache_clear()


def analysis_fields(command: str, shell: str = "bash") -> dict[str, Any]:
    """What :func:`analyze` returns, as a dict of :data:`FIELD_NAMES` (not memoised; never raises).

    For callers that only read the verdict once (``shellrt classify``): a bash
    command's verdict needs no pydantic model at all.
    """
    if shell == "bash":
        return _bash_fields(command)
    return dict(_analyze_uncached(command, shell).__dict__)


def _analyze_uncached(command: str, shell: str) -> CommandAnalysis:
    if shell == "powershell":
        from .powershell import analyze_powershell

        return analyze_powershell(command)
    if shell == "sh":
        return _model(_posix_fields(command))
    if shell != "bash":
        return _model(_failed(command, str(shell), f"unknown shell {shell!r}"))
    return _model(_bash_fields(command))


_cached = functools.lru_cache(maxsize=CACHE_SIZE)(_analyze_uncached)


def _bash_fields(command: str, fast: bool = True) -> dict[str, Any]:
    try:
        return _bash_verdict(command, fast)
    except RecursionError:
        return _failed(command, "bash", "command nests too deeply to analyse")
    except PlanLimitError as exc:
        return _failed(command, "bash", str(exc))


def _posix_fields(command: str) -> dict[str, Any]:
    """The verdict for ``command`` run by a POSIX shell that is not bash (busybox ash, dash).

    The two grammars agree on POSIX syntax and part ways on bash's own (`plan.bash_only`):
    ``[[ x > f ]]`` is a string comparison to bash and a redirection that truncates ``f`` to
    ash. Such a command is unread here, as a command bash could not parse is: never read-only,
    and its raw text is a part of its own (no allow rule matches it; deny rules see its words).
    """
    fields = _bash_fields(command)
    fields["shell"] = "sh"
    plan = fields["plan"]
    why = bash_only(plan) if plan is not None else None
    if why is None:
        return fields
    reasons = [f"the shell here is a POSIX sh, not bash, and the command uses {why}"]
    reasons += [r for r in fields["reasons"] if not r.startswith("read-only:")]
    env = fields["env"]
    return _fields(
        command,
        "sh",
        False,
        False,
        fields["destructive"],
        subcommands(plan, command, False) if fields["parse_ok"] else fields["subcommands"],
        reasons,
        fields["cd_targets"],
        fields["write_targets"],
        True,
        dict(GIT_BASE_ENV) if env else env,
        plan,
        fields["read_paths"],
    )


def _analyze_bash(command: str, fast: bool = True) -> CommandAnalysis:
    """``fast=False`` always uses the parser (tests compare it with the fast path)."""
    return _model(_bash_fields(command, fast))


def _bash_verdict(command: str, fast: bool = True) -> dict[str, Any]:
    if "\\\n" in command and _JOINING_CONTINUATION.search(command):
        return _failed(command, "bash", _JOINING_REASON)
    if "\n\\" in command and _ESCAPED_BLANK_LINE_START.search(command):
        return _failed(command, "bash", _ESCAPED_BLANK_REASON)
    plan = plan_fast(command) if fast else None
    error: str | None = None
    if plan is None and fast and "'" in command:
        plan = plan_unterminated_quote(command)  # the parser's plan and error, without its error recovery
        if plan is not None:
            error = SYNTAX_ERROR
    if plan is None:
        parsed = parse_bash(command)
        if parsed.root is None:
            return _failed(command, "bash", parsed.error or "could not parse")
        plan = build_plan(parsed.root, parsed.source, command, fast)
        error = parsed.error
        if error is None and plan.syntax_errors:
            error = "bash syntax error: " + "; ".join(plan.syntax_errors)
    reasons = judge_plan(plan)
    if error:
        reasons.insert(0, error)
    read_only = not reasons
    names: set[str | None] = set()
    for plan_command in plan.commands:
        argv = plan_command.argv
        names.add(argv[0].value if argv else None)
    if read_only:
        shown = sorted([name for name in names if name])
        if shown:
            reasons.append("read-only: " + ", ".join(shown) + " with known read-only options and no writes")
        else:
            reasons.append("read-only: only tests and comparisons, no program runs")
    effects = plan_effects(plan, read_only)
    env = (git_hardening_env() if read_only else dict(GIT_BASE_ENV)) if "git" in names else {}
    if read_only and not _PROGRAM_ENV_NAMES.isdisjoint(names):
        for program in names & PROGRAM_ENV.keys():
            env.update(PROGRAM_ENV[program or ""])
    destructive = effects.destructive
    if destructive:
        reasons.extend([f"destructive: {d}" for d in destructive])
    write_targets = effects.write_targets
    writes_unknown = effects.writes_unknown
    if not read_only and may_hide_code(plan):
        write_targets, writes_unknown = _code_string_writes(plan, write_targets, writes_unknown)
    parts = subcommands(plan, command if error else None, read_only)
    read_paths: list[str] = []
    for part in parts:
        read_paths.extend(part.reads)
    return _fields(
        command,
        "bash",
        error is None,
        read_only,
        bool(destructive),
        parts,
        reasons,
        list(plan.cd_targets),
        write_targets,
        writes_unknown or (not read_only and not write_targets and bool(plan.unsupported or error)),
        env,
        plan,
        list(dict.fromkeys(read_paths)) if len(read_paths) > 1 else read_paths,
    )


_PROGRAM_ENV_NAMES: Final = frozenset(PROGRAM_ENV)


def _code_string_writes(plan: CommandPlan, targets: list[str], unknown: bool) -> tuple[list[str], bool]:
    """The command's writes with those of the code strings bash keeps and runs later (an alias body
    under ``shopt -s expand_aliases``, ``trap CODE``, ``mapfile -C CODE``).

    Why: ``alias c='cp q .git/hooks/pre-commit'`` then ``c; git commit`` wrote a hook no write of the
    command named, so git beside it was allowed past ``Bash(rm:*)`` (red team, round 40)."""
    codes = code_texts(plan)
    if not codes:
        return targets, unknown
    targets = list(targets)
    for code in codes:
        if code == UNKNOWN_CODE:
            unknown = True
            continue
        inner = analyze(code)
        targets += [t for t in inner.write_targets if t not in targets]
        unknown = unknown or inner.writes_unknown
    return targets, unknown


def _failed(command: str, shell: str, reason: str) -> dict[str, Any]:
    return _fields(
        command,
        shell,
        False,
        False,
        False,
        [Subcommand(command, [command], "", False, [], False, [""], [""], False, "")],
        [reason],
        [],
        [],
        True,
        {},
        None,
        [""],
    )


#: CommandAnalysis' fields in declaration order (pydantic keeps that order in ``__dict__``; a test
#: checks that both agree).
FIELD_NAMES: Final = (
    "command",
    "shell",
    "parse_ok",
    "read_only",
    "concurrency_safe",
    "destructive",
    "subcommands",
    "reasons",
    "cd_targets",
    "write_targets",
    "writes_unknown",
    "env",
    "plan",
    "read_paths",
)
_FIELDS: Final[dict[str, Any]] = dict.fromkeys(FIELD_NAMES)


def _fields(
    command: str,
    shell: str,
    parse_ok: bool,
    read_only: bool,
    destructive: bool,
    subcommands: list[Subcommand],
    reasons: list[str],
    cd_targets: list[str],
    write_targets: list[str],
    writes_unknown: bool,
    env: dict[str, str],
    plan: CommandPlan | None,
    read_paths: list[str],
) -> dict[str, Any]:
    """The fields of a ``CommandAnalysis``; ``concurrency_safe`` is ``read_only``."""
    # A copy of a dict with every key already in place: no resizing while the 14 values go in.
    fields = _FIELDS.copy()
    fields["command"] = command
    fields["shell"] = shell
    fields["parse_ok"] = parse_ok
    fields["read_only"] = read_only
    fields["concurrency_safe"] = read_only
    fields["destructive"] = destructive
    fields["subcommands"] = subcommands
    fields["reasons"] = reasons
    fields["cd_targets"] = cd_targets
    fields["write_targets"] = write_targets
    fields["writes_unknown"] = writes_unknown
    fields["env"] = env
    fields["plan"] = plan
    fields["read_paths"] = read_paths
    return fields


# ``CommandAnalysis(...)`` runs pydantic validation (trusted values here do not need it): fill the
# model's slots directly. Compiled, ``object.__setattr__(obj, name, value)`` is one C call of the
# generic setter (it finds BaseModel's slot descriptors by name, bypassing the frozen model's
# ``__setattr__``); the bound descriptors' ``__set__`` methods used before cost a Python call each.
_new: Final = object.__new__
#: The model class, once its module is imported (on the first :func:`_model` call).
_model_class: Final[list[Any]] = []


def _model(fields: dict[str, Any]) -> CommandAnalysis:
    """A ``CommandAnalysis`` holding ``fields`` (from :func:`_fields`), without validation."""
    if not _model_class:
        from .models import CommandAnalysis

        _model_class.append(CommandAnalysis)
    analysis: CommandAnalysis = _new(_model_class[0])
    object.__setattr__(analysis, "__dict__", fields)
    object.__setattr__(analysis, "__pydantic_fields_set__", set())
    object.__setattr__(analysis, "__pydantic_extra__", None)
    object.__setattr__(analysis, "__pydantic_private__", None)
    return analysis
