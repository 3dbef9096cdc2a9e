"""ToolSearch: find deferred tools by keyword or name and load them for the next request.

Deferred tools (``defer_loading``) are kept out of ``tools[]`` so a session
with hundreds of MCP tools does not pay for their schemas on every request.
The model finds them here; a found tool joins ``ctx.discovered_tools`` through
a context modifier (ordered like any session change) and appears in
``tools[]`` from the next request on. Discovery is not permission: calling a
discovered tool still goes through its own validation and permission checks.
Discovery state is rebuilt from history with `rebuild_discovered_tools`.

A tool the permission gate hides (a tool-wide deny rule) is never found,
listed, counted or called "already available": searching must not reveal
what ``tools[]`` leaves out. Discovery order is recorded
(`discovery_order`) so ``tools[]`` can append newly found tools at the end
and a prompt cache keeps its prefix.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from shellrt.permissions import PermissionGate
from shellrt.protocol import (
    ContentBlock,
    PermissionResult,
    Tool,
    ToolCatalog,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ValidationResult,
)
from shellrt.protocol.textchars import ANSI, LINE_BREAKS
from shellrt.tools._history import tool_calls

__all__ = [
    "ToolReference",
    "ToolSearchInput",
    "ToolSearchOutput",
    "ToolSearchTool",
    "discovery_order",
    "rebuild_discovered_tools",
    "rebuild_discovery_order",
    "visible_tools",
]

TOOL_NAME = "ToolSearch"
#: ``ctx.tool_state`` key: discovered tool names in the order they were found.
ORDER_KEY = "ToolSearch.discovery_order"
_REFERENCE_LINE = re.compile(r"- (?P<name>[A-Za-z0-9_.\-]+): ")
#: The line before the found tools' lines (`ToolSearchTool.to_model_content`); a restore reads only
#: the lines right after it, as many as it counts.
_FOUND_HEADER = re.compile(
    r"Found (?P<count>\d+) tools? for .*; they are loaded and can be called from your next message:"
)
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_SPLIT_NAME = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


#: Longest query, and most distinct keywords in one: each keyword is scored against every deferred
#: tool's name, hint and description, in the event loop; a 59 KB query of 10,000 words held it for
#: 53 s over 50 tools (round 28), and a wire line may carry 32 MB.
MAX_QUERY_CHARS = 1_000
MAX_QUERY_TERMS = 32


class ToolSearchInput(BaseModel):
    """Input of ToolSearch."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description='Keywords describing the capability (e.g. "slack send message"; prefix a word with + to '
        'require it), or "select:Name1,Name2" to load tools by exact name.',
    )
    max_results: int = Field(default=5, ge=1, le=25, description="Maximum number of tools to return.")


@dataclass(frozen=True)
class ToolReference:
    """A found tool: its name and the first line of its description."""

    name: str
    description: str


@dataclass
class ToolSearchOutput:
    """What the search found; ``matches`` are now discovered."""

    query: str
    matches: list[ToolReference] = field(default_factory=list)
    already_loaded: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    total_deferred: int = 0


def _one_line(tool: Tool[Any, Any]) -> str:
    """The first line a reader sees of a tool's description, as plain text: an MCP server writes
    it, and it is shown in ToolSearch's result (round 36: a terminal escape, a bidi override or a
    ``\r``/U+2028 break went to the model raw, and ``\x1b[2K\r`` made the first line blank)."""
    text = ANSI.sub("", _prompt(tool))
    text = "".join(_plain(c) for c in text)
    first = next((line.strip() for line in text.split("\n") if line.strip()), "")
    first = " ".join(first.split())
    return first if len(first) <= 200 else first[:197] + "…"


def _plain(c: str) -> str:
    """``c`` as the listing shows it: a line break a newline, a tab a blank, another control or
    format character nothing."""
    if c in LINE_BREAKS:
        return "\n"
    if c == "\t":
        return " "
    return "" if unicodedata.category(c) in _UNSEEN else c


_UNSEEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn"})


def _prompt(tool: Tool[Any, Any]) -> str:
    try:
        return tool.prompt()
    except Exception:  # a broken third-party prompt() must not break the search
        return ""


def _name_tokens(name: str) -> set[str]:
    tokens = {t.lower() for t in _SPLIT_NAME.findall(name)}
    tokens |= {t.lower() for t in re.split(r"[_\-.]+", name) if t}
    return tokens


@dataclass
class _Haystack:
    """One tool's searchable texts, built once per search (not once per keyword: the prompt of an
    MCP tool is its server's, of any length, and ``prompt()`` may be costly)."""

    tool: Tool[Any, Any]
    name: str
    tokens: set[str]
    hint: str
    first: str
    _full: str | None = None

    @classmethod
    def of(cls, tool: Tool[Any, Any]) -> _Haystack:
        return cls(
            tool,
            tool.name.lower(),
            _name_tokens(tool.name),
            tool.search_hint.lower(),
            _one_line(tool).lower(),
        )

    def full(self) -> str:
        if self._full is None:
            self._full = _prompt(self.tool).lower()
        return self._full


def _word_start(term: str, text: str, pattern: re.Pattern[str]) -> bool:
    """``term`` starts a word of ``text`` (a plain substring test first: most texts lack it)."""
    return term in text and pattern.search(text) is not None


def _score(tool: _Haystack, term: str, pattern: re.Pattern[str]) -> int:
    if term == tool.name:
        return 12
    score = 0
    if term in tool.tokens:
        score = 6
    elif term in tool.name:
        score = 4
    if _word_start(term, tool.hint, pattern):
        score += 3
    if _word_start(term, tool.first, pattern):
        score += 2
    elif score == 0 and _word_start(term, tool.full(), pattern):
        score += 1
    return score


def query_terms(query: str) -> list[str]:
    """The distinct keywords of ``query``, ``+`` kept (a bare ``+`` is no keyword)."""
    return list(dict.fromkeys(t for t in query.lower().split() if t.strip("+")))


def search_tools(deferred: list[Tool[Any, Any]], query: str, limit: int) -> list[Tool[Any, Any]]:
    """Rank deferred tools for a keyword query; ``+word`` terms are required.

    At most `MAX_QUERY_TERMS` distinct keywords are used (`ToolSearchTool.validate` refuses more).
    """
    terms = query_terms(query)[:MAX_QUERY_TERMS]
    required = [t[1:] for t in terms if t.startswith("+")]
    optional = [t for t in terms if not t.startswith("+")]
    patterns = {t: re.compile(rf"\b{re.escape(t)}") for t in [*required, *optional]}
    ranked: list[tuple[int, int, Tool[Any, Any]]] = []
    for index, tool in enumerate(deferred):
        hay = _Haystack.of(tool)
        if any(_score(hay, r, patterns[r]) == 0 for r in required):
            continue
        total = sum(_score(hay, t, patterns[t]) for t in [*required, *optional])
        if total > 0:
            ranked.append((-total, index, tool))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [tool for _, _, tool in ranked[:limit]]


class ToolSearchTool(Tool[ToolSearchInput, ToolSearchOutput]):
    """Search deferred tools and load the matches."""

    name = TOOL_NAME
    input_model = ToolSearchInput
    touches_environment: ClassVar[bool] = False
    always_load = True
    search_hint = "find discover load tools deferred mcp capabilities"
    idempotent: ClassVar[bool] = True

    def prompt(self) -> str:
        return (
            "Search for more tools. Some tools are not loaded yet (for example most MCP tools); describe what you "
            'need in a few keywords ("github pull request", "+slack send") or load known names with '
            '"select:Name1,Name2". Found tools become callable from your next message; call them as usual.'
        )

    def is_read_only(self, tool_input: ToolSearchInput) -> bool:
        return True

    def is_concurrency_safe(self, tool_input: ToolSearchInput) -> bool:
        return True

    async def validate(self, tool_input: ToolSearchInput, ctx: ToolContext) -> ValidationResult:
        query = tool_input.query.strip()
        if not query.lower().startswith("select:") and len(query_terms(query)) > MAX_QUERY_TERMS:
            return ValidationResult.failure(
                f"The query has {len(query_terms(query))} keywords; use at most {MAX_QUERY_TERMS} "
                '(a few words naming the capability, e.g. "slack send message").'
            )
        return ValidationResult.success()

    async def check_permissions(self, tool_input: ToolSearchInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("searching the tool catalog changes nothing outside the session")

    async def call(self, tool_input: ToolSearchInput, ctx: ToolContext) -> ToolOutput[ToolSearchOutput]:
        if not ctx.has_service(ToolCatalog):
            raise ToolExecutionError(
                "No tool catalog is available in this session, so there is nothing to search."
            )
        catalog = ctx.service(ToolCatalog)  # type: ignore[type-abstract]  # looked up by its interface
        shown = _visibility(ctx)
        deferred = [t for t in catalog.deferred_tools() if t.is_enabled() and shown(t)]
        output = ToolSearchOutput(query=tool_input.query, total_deferred=len(deferred))
        query = tool_input.query.strip()
        found: list[Tool[Any, Any]] = []
        if query.lower().startswith("select:"):
            by_name = {t.name: t for t in deferred}
            by_lower = {t.name.lower(): t for t in deferred}
            for alias_tool in deferred:
                for alias in alias_tool.aliases:
                    by_lower.setdefault(alias.lower(), alias_tool)
            for raw in query[len("select:") :].split(","):
                name = raw.strip()
                if not name:
                    continue
                loaded = catalog.get(name)
                tool = by_name.get(name)
                if tool is None and (loaded is None or loaded.is_deferred()):  # Bash is Bash, not a "bash"
                    tool = by_lower.get(name.lower())
                if tool is not None:
                    if tool not in found:
                        found.append(tool)
                elif loaded is not None and shown(loaded):
                    output.already_loaded.append(name)
                else:  # unknown, or hidden by the gate: the two must look the same
                    output.unknown.append(name)
        else:
            exact = [t for t in deferred if t.name.lower() == query.lower()]
            found = exact or search_tools(deferred, query, tool_input.max_results)
            output.already_loaded = _loaded_matches(catalog, shown, query)
        output.matches = [ToolReference(t.name, _one_line(t)) for t in found]
        names = [t.name for t in found]

        def discover(context: ToolContext) -> None:
            order: list[str] = context.tool_state.setdefault(ORDER_KEY, [])
            order.extend(n for n in names if n not in order)
            context.discovered_tools.update(names)

        return ToolOutput(output, context_modifier=discover if names else None)

    def to_model_content(self, output: ToolSearchOutput) -> str | list[ContentBlock]:
        lines: list[str] = []
        if output.already_loaded:  # first: a deferred tool stuffed with "bash" is no reason to leave Bash
            lines.append(f"Already available (call directly): {', '.join(output.already_loaded)}.")
        if output.matches:
            lines.append(
                f"Found {len(output.matches)} tool{'s' if len(output.matches) != 1 else ''} for "
                f"{_quoted(output.query)}; they are loaded and can be called from your next message:"
            )
            lines += [f"- {m.name}: {m.description}" for m in output.matches]
        elif not output.already_loaded and not output.unknown:
            lines.append(
                f"No deferred tool matches {_quoted(output.query)} ({output.total_deferred} deferred tools searched). "
                "Try other or fewer keywords."
            )
        if output.unknown:
            unknown = (n if _PLAIN_NAME.fullmatch(n) else _quoted(n) for n in output.unknown)
            lines.append(f"No tool named: {', '.join(unknown)}. Search by keyword to find the right name.")
        return "\n".join(lines)

    def render_result(self, output: ToolSearchOutput) -> str:
        return f"Loaded {', '.join(m.name for m in output.matches) or 'no tools'}"


#: Most loaded tools a keyword search names as already available.
MAX_LOADED_MATCHES = 3


def _loaded_matches(
    catalog: ToolCatalog, shown: Callable[[Tool[Any, Any]], bool], query: str
) -> list[str]:
    """The loaded tools (in ``tools[]`` already) a keyword query fits, best first (round 36).

    Only deferred tools are searched, so for "bash" or "read file" a deferred tool stuffed with
    those words was the only answer and nothing said Bash or Read is there already; these are
    named first when the query names one (a keyword is its name or a part of it) or its search
    hint holds every keyword ("shell command": Bash). Descriptions are not read: a built-in's is
    long and mentions other tools' words ("slack send message" named Write), and ``prompt()``
    costs. A tool the gate hides is never named."""
    terms = [t.lstrip("+") for t in query_terms(query)[:MAX_QUERY_TERMS]]
    patterns = [re.compile(rf"\b{re.escape(t)}") for t in terms]
    ranked: list[tuple[int, int, str]] = []
    for index, tool in enumerate(catalog.all_tools()):
        if tool.is_deferred() or tool.name == TOOL_NAME or not shown(tool):
            continue
        name, tokens, hint = tool.name.lower(), _name_tokens(tool.name), tool.search_hint.lower()
        named = sum(12 if t == name else 6 for t in terms if t == name or t in tokens)
        hinted = bool(terms) and all(_word_start(t, hint, p) for t, p in zip(terms, patterns, strict=True))
        if named or hinted:
            ranked.append((-(named + hinted), index, tool.name))
    return [name for _, _, name in sorted(ranked)[:MAX_LOADED_MATCHES]]


def _quoted(query: str) -> str:
    """The model's query quoted on one line: with a newline it forged a ``- <name>: `` line, which
    `rebuild_discovery_order` took for a found tool when the session was restored (round 28)."""
    return json.dumps(query, ensure_ascii=False)


def _visibility(ctx: ToolContext) -> Callable[[Tool[Any, Any]], bool]:
    """The gate's visibility test (a tool denied outright is hidden); everything when no gate is set."""
    if not ctx.has_service(PermissionGate):
        return lambda _tool: True
    gate = ctx.service(PermissionGate)  # type: ignore[type-abstract]  # looked up by its interface
    return gate.is_visible


def rebuild_discovery_order(messages: Iterable[Any]) -> list[str]:
    """The tools discovered in a transcript, in the order they were first found."""
    order: list[str] = []
    for call in tool_calls(messages):
        if call.name != TOOL_NAME or call.result_text is None or call.is_error:
            continue
        for name in _found_names(call.result_text):
            if name not in order:
                order.append(name)
    return order


def _found_names(text: str) -> list[str]:
    """The names on the lines right after a result's "Found N tools" line, at most N.

    Any ``- <name>: `` line counted before (round 28): the model's query and unknown names were
    echoed raw, so a newline in them forged a found tool for a restored session.
    """
    lines = text.split("\n")
    for index, line in enumerate(lines):
        header = _FOUND_HEADER.fullmatch(line)
        if header is None:
            continue
        names: list[str] = []
        for follow in lines[index + 1 : index + 1 + int(header.group("count"))]:
            reference = _REFERENCE_LINE.match(follow)
            if reference is None:
                break
            names.append(reference.group("name"))
        return names
    return []


def rebuild_discovered_tools(messages: Iterable[Any]) -> set[str]:
    """The tools discovered in a transcript: names listed in successful ToolSearch results."""
    return set(rebuild_discovery_order(messages))


def discovery_order(ctx: ToolContext) -> list[str]:
    """``ctx.discovered_tools`` in discovery order (names added without an order come last, sorted)."""
    recorded = [n for n in ctx.tool_state.get(ORDER_KEY, []) if n in ctx.discovered_tools]
    return recorded + sorted(ctx.discovered_tools.difference(recorded))


def visible_tools(tools: Iterable[Tool[Any, Any]], discovered: Iterable[str]) -> list[Tool[Any, Any]]:
    """``tools[]`` for a request: loaded tools in their stable order, then discovered deferred ones.

    Discovered tools come last, in the order of ``discovered`` (pass a list in
    discovery order), so discovering a tool never shifts an earlier entry.
    ``always_load`` wins over ``defer_loading``.
    """
    listed = list(tools)
    by_name = {t.name: t for t in listed if t.is_deferred()}
    loaded = [t for t in listed if not t.is_deferred()]
    found = [by_name[n] for n in dict.fromkeys(discovered) if n in by_name]
    return loaded + found
